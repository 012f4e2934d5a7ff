"""The seed content, loaded once: real quests make the most honest fixtures."""

from __future__ import annotations

import pytest

from bot.content import Content, Quest, load_content
from tests.support import SEED_QUESTS


@pytest.fixture(scope="session")
def content() -> Content:
    return load_content(SEED_QUESTS)


@pytest.fixture(scope="session")
def seed_quest(content: Content) -> Quest:
    return content.quest("go-brrrr")
