"""The public HTTP API (`/v1`), the health routes and the error format."""
