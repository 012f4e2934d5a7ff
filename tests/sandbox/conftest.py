"""Fixtures for the sandbox tests: one zygote per module, checked after every test.

After each hostile test the ``sandbox`` fixture checks by side effect that the
same zygote is alive, left no process behind and still grades a correct
submission correctly.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sandbox.client import Zygote
from tests.sandbox.support import assert_grades_correctly, assert_job_left_nothing


@pytest.fixture(scope="module")
def zygote() -> Iterator[Zygote]:
    with Zygote() as started:
        yield started


@pytest.fixture
def sandbox(zygote: Zygote) -> Iterator[Zygote]:
    """The module's zygote, checked after the test: same process, nothing left, still grading."""
    pid = zygote.pid
    yield zygote
    assert zygote.pid == pid and zygote.alive
    assert_job_left_nothing(zygote)
    assert_grades_correctly(zygote)
    assert zygote.pid == pid
