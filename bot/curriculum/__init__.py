"""A server's learning map and schedule (no discord)."""
