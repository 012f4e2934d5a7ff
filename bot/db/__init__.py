"""Database access: models, engine and migrations (no discord, no torch)."""
