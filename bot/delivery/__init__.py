"""After a verdict: settle it (XP, speed results), then deliver it to its member, with retries."""
