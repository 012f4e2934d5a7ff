"""XP, streaks, levels, periods and leaderboards: the domain logic behind the progress commands.

Plain modules (no discord, no torch).  The append-only ``xp_ledger`` is the only source of XP;
``member_xp`` and ``member_xp_counts`` are derived from it, kept in step in the same transaction
so that leaderboards stay fast, and rebuildable from the ledger at any time.
"""
