"""Embed colours, one per kind of view, so a glance tells a verdict from a quest."""

from __future__ import annotations

from discord import Colour

QUEST = Colour(0x5865F2)
LIBRARY = Colour(0x3BA55D)
MAP = Colour(0xEB459E)
BOARD = Colour(0xF1C40F)
PASSED = Colour(0x57F287)
FAILED = Colour(0xED4245)
ERROR = Colour(0x99AAB5)
