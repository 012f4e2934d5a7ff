"""The daily quest post and the weekly leaderboard post: what is due, what it shows, and the
post log's claim, parts and release around each send (``posts``); what it needs of Discord is
the protocol in ``transport``, which the schedule cog implements."""
