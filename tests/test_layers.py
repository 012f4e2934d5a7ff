"""The layers the code is built in, as import-linter contracts (pyproject.toml), checked here.

The contracts replace hand-listed import tests: a new module is covered the day it is added.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO

PACKAGES = ("bot", "graders", "sandbox", "fakediscord")
LINT = [
    str(Path(sys.executable).with_name("lint-imports")),
    "--no-cache",
    "--config",
    "pyproject.toml",
]


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LINT], cwd=root, capture_output=True, text=True, env={"PYTHONPATH": str(root)}
    )


def test_every_contract_is_kept() -> None:
    result = lint(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout
    # the contracts are the ones the docs describe, none dropped by accident
    for name in ("bot above graders above sandbox", "no import circles", "never imports torch"):
        assert name in result.stdout


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the code that a test may break."""
    root = tmp_path_factory.mktemp("tree")
    shutil.copy(REPO / "pyproject.toml", root)
    for package in PACKAGES:
        shutil.copytree(
            REPO / package, root / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    return root


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("sandbox/units.py", "import bot.config", "bot above graders above sandbox"),
        ("graders/tensors.py", "from bot.jobs import queue", "bot above graders above sandbox"),
        ("sandbox/units.py", "import discord", "know nothing of Discord"),
        ("bot/progress/levels.py", "from bot.exts import common", "Discord-free packages"),
        ("bot/intake/notebook.py", "import discord", "Discord-free packages"),
        ("bot/delivery/transport.py", "import torch", "never imports torch"),
        ("graders/roofline.py", "from graders.tasks import attention", "graders are one family"),
        ("graders/registry.py", "import graders.tasks.bpe_merge", "graders are one family"),
        ("graders/registry.py", "import torch", "never imports torch"),
        ("bot/db/types.py", "from bot.progress import ledger", "no import circles"),
        (
            "bot/content/answer_matching.py",
            "from bot.content.schema import Question",
            "no import circles",
        ),
    ],
)
def test_a_forbidden_import_breaks_its_contract(
    tree: Path, module: str, line: str, contract: str
) -> None:
    path = tree / module
    kept = path.read_text()
    try:
        path.write_text(kept + f"\n{line}  # noqa\n")
        result = lint(tree)
    finally:
        path.write_text(kept)
    assert result.returncode != 0
    broken = result.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken, result.stdout
