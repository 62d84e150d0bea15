"""The orchestrator: turn queue, device selection, claim with fencing, delivery, and the
projection of Run frames into items and journal events."""
