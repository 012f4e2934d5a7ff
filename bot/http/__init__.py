"""The bot process's HTTP server: health, metrics, and later the REST API."""
