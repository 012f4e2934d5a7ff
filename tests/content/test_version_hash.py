"""version_hash: stable across runs and spellings, sensitive to real changes."""

from __future__ import annotations

import re
import subprocess
import sys

import yaml

from bot.content import Quest, version_hash
from tests.content.fixture_dir import FIRST_QUEST
from tests.support import REPO


def quest(text: str = FIRST_QUEST) -> Quest:
    return Quest.model_validate(yaml.safe_load(text))


def test_hash_is_sha256_hex_and_repeatable() -> None:
    digest = version_hash(quest())
    assert re.fullmatch(r"[0-9a-f]{64}", digest), digest
    assert version_hash(quest()) == digest


def test_hash_is_the_same_in_a_fresh_interpreter() -> None:
    """No dependence on hash randomisation or dict order within one process."""
    code = (
        "import yaml, sys; from bot.content import Quest, version_hash; "
        "print(version_hash(Quest.model_validate(yaml.safe_load(sys.stdin.read()))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], input=FIRST_QUEST, capture_output=True, text=True, cwd=REPO
    )
    assert result.stdout.strip() == version_hash(quest())


def test_key_order_and_explicit_defaults_do_not_matter() -> None:
    reordered = "title: First\n" + FIRST_QUEST.replace("title: First\n", "")
    with_default = FIRST_QUEST.replace("phase: basics\n", "phase: basics\ndays: 1\n")
    assert version_hash(quest(reordered)) == version_hash(quest())
    assert version_hash(quest(with_default)) == version_hash(quest())


def test_any_content_change_changes_the_hash() -> None:
    base = version_hash(quest())
    for old, new in [
        ("xp: 10", "xp: 11"),
        ("summary: Hello.", "summary: Hello!"),
        ('answers: ["1"]', 'answers: ["1", "one"]'),
        ("phase: basics\n", "phase: basics\ndays: 2\n"),
    ]:
        assert version_hash(quest(FIRST_QUEST.replace(old, new))) != base, old
