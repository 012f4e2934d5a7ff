"""Which code "Submit solution" takes from a message, and what it says when there is none."""

from __future__ import annotations

import pytest

from bot.intake.message_code import (
    BLOCK_FILENAME,
    AttachedCode,
    AttachmentInfo,
    BlockCode,
    NoCode,
    find_code,
)
from bot.intake.submission_input import UploadLimits, validate_submission

CODE = "import torch\n\n\ndef matmul_loops(A, B):\n    return A @ B\n"


def _block(found: object) -> str:
    assert isinstance(found, BlockCode), found
    assert found.filename == BLOCK_FILENAME
    return found.data.decode()


@pytest.mark.parametrize("tag", ["python", "py", "Python", "PY", "python3", "py3"])
def test_a_python_tagged_block_is_taken_whole(tag: str) -> None:
    found = find_code(f"my attempt:\n```{tag}\n{CODE}```\nthoughts?", [])
    assert _block(found) == CODE
    assert isinstance(found, BlockCode) and found.lines == 5


def test_the_first_python_block_wins_over_untagged_and_other_languages() -> None:
    content = (
        "```\nnot this\n```\n```bash\npip install torch\n```\n"
        "```py\nfirst = 1\n```\n```python\nsecond = 2\n```"
    )
    assert _block(find_code(content, [])) == "first = 1\n"


def test_an_untagged_block_is_taken_when_no_block_is_tagged_python() -> None:
    assert _block(find_code("```text\n$ out\n```\n```\nx = 1\n```", [])) == "x = 1\n"
    assert _block(find_code("```print(1)```", [])) == "print(1)"
    # the first line is code, not a language, when it is more than one word
    assert _block(find_code("```import torch\nx = 1```", [])) == "import torch\nx = 1"


def test_the_block_text_is_what_submit_validates() -> None:
    found = find_code(f"```python\n{CODE}```", [])
    assert isinstance(found, BlockCode)
    prepared = validate_submission(found.filename, found.data, UploadLimits.defaults())
    assert prepared.kind == "py" and prepared.source == CODE


def test_a_code_attachment_wins_over_a_block_and_other_files() -> None:
    files = [AttachmentInfo("notes.txt", 10), AttachmentInfo("Solution.PY", 321)]
    found = find_code(f"```python\n{CODE}```", files)
    assert found == AttachedCode(index=1, filename="Solution.PY", size=321)


def test_with_several_code_files_the_first_is_taken_and_the_reply_says_so() -> None:
    files = [AttachmentInfo("a.ipynb", 5), AttachmentInfo("b.py", 7)]
    found = find_code("", files)
    assert isinstance(found, AttachedCode)
    assert (found.index, found.filename) == (0, "a.ipynb")
    assert found.note is not None
    assert "2 code files" in found.note and "`a.ipynb`" in found.note


def test_no_code_is_refused_saying_what_the_message_has() -> None:
    found = find_code("here is my answer: 42", [])
    assert isinstance(found, NoCode)
    assert found.message.startswith(
        "That message has no .py or .ipynb file and no ```python code block."
    )
    other = find_code("```bash\nls\n```", [AttachmentInfo("plot.png", 9)])
    assert isinstance(other, NoCode)
    assert "`plot.png`" in other.message and "`bash`" in other.message


def test_an_empty_python_block_is_refused_as_empty() -> None:
    found = find_code("```python\n   \n```", [])
    assert isinstance(found, NoCode)
    assert found.message == "The code block in that message is empty: put your solution inside it."
