"""Near-copies of passing solutions, for moderators: fingerprints (``fingerprints``, pure) and
the flags kept of passing submissions (``near_copies``).  No discord, no torch."""
