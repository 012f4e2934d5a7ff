"""Fixtures for content tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.content.fixture_dir import ContentDir


@pytest.fixture
def content_dir(tmp_path: Path) -> ContentDir:
    return ContentDir(tmp_path)
