"""The API reads an upload only as far as intake allows: a file of the wrong kind is refused
before a byte of it is read, one over its limit within a chunk of the limit, never after it is
all in memory (the size is intake's rule, asked as the file grows)."""

from __future__ import annotations

import pytest

from bot.http.api_routes import CHUNK, _read_file
from bot.intake.refusals import Refused, TooLarge, WrongFileKind
from bot.intake.submission_input import UploadLimits

LIMITS = UploadLimits(max_py_bytes=4 * CHUNK, max_ipynb_bytes=8 * CHUNK)


class CountedPart:
    """A multipart file part of ``size`` bytes that counts what is read of it."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.read = 0

    async def read_chunk(self, size: int) -> bytes:
        chunk = min(size, self.size - self.read)
        self.read += chunk
        return b"#" * chunk


async def test_a_file_within_its_limit_is_read_whole() -> None:
    part = CountedPart(LIMITS.max_py_bytes)
    assert await _read_file(part, "a.py", LIMITS) == b"#" * LIMITS.max_py_bytes  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "limit"), [("a.py", LIMITS.max_py_bytes), ("b.ipynb", LIMITS.max_ipynb_bytes)]
)
async def test_a_file_over_its_limit_is_refused_as_it_grows(name: str, limit: int) -> None:
    part = CountedPart(100 * limit)
    with pytest.raises(Refused) as caught:
        await _read_file(part, name, LIMITS)  # type: ignore[arg-type]
    refusal = caught.value.refusal
    assert isinstance(refusal, TooLarge) and (refusal.filename, refusal.limit) == (name, limit)
    assert limit < part.read <= limit + CHUNK


async def test_a_file_of_the_wrong_kind_is_refused_before_it_is_read() -> None:
    part = CountedPart(10)
    with pytest.raises(Refused) as caught:
        await _read_file(part, "notes.txt", LIMITS)  # type: ignore[arg-type]
    assert caught.value.refusal == WrongFileKind("notes.txt", ".txt")
    assert part.read == 0
