"""The bot's side of grading: an upload checked, turned into source and queued as a job."""
