"""The shared state every part of the bot process uses, built once at start."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from bot.config import Settings
from bot.content import Content


@dataclass
class Services:
    settings: Settings
    content: Content
    engine: AsyncEngine
    sessions: async_sessionmaker[Any]
