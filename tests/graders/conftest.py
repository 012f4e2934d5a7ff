"""Fixtures the grader tests share.

``zygote`` and ``content`` are module-scoped: each test module starts its own sandbox
and loads the quests once, so modules stay independent of one another.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from bot.content import Content, load_content
from bot.worker.grade_job import SandboxRunner
from sandbox import Zygote
from tests.support import SEED_QUESTS

pytest.register_assert_rewrite("tests.graders.support")


@pytest.fixture
def one_thread() -> Iterator[None]:
    """Trusted-side torch work on one thread, as in the sandbox: tiny ops on a busy machine
    otherwise wait on idle worker threads far longer than they compute."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def zygote() -> Iterator[SandboxRunner]:
    """One warm zygote for the module; whatever isolation it has is fine for our examples."""
    with Zygote() as running:
        yield running


@pytest.fixture(scope="module")
def content() -> Content:
    return load_content(SEED_QUESTS)
