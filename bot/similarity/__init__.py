"""Near-copies of passing solutions, for moderators: fingerprints (``fingerprints``, pure) and
the flags kept of passing submissions (``near_copies``), and fingerprints for passes settled
before the checks existed (``backfill``).  No discord, no torch."""
