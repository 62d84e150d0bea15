"""The Runtime gateway: bootstrap and WebSocket endpoints, one Connection per socket, and
the registry of connected devices with their capability snapshots."""
