"""Alembic migration chain; applied by ``brrrbot db upgrade`` and at bot start."""
