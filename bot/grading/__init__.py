"""Preparing submissions for grading; torch-free, so the bot process can import it."""
