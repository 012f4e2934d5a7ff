"""validate_submission: every rejection is a typed refusal saying exactly what is wrong, before
any job exists; the shared words (``refusal_words``) say it to the member."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bot.config import Settings
from bot.intake.refusals import (
    CodeTooLarge,
    ControlBytes,
    EmptyFile,
    NotUtf8,
    NulByte,
    OnlyWhitespace,
    Refusal,
    Refused,
    TooLarge,
    WrongFileKind,
)
from bot.intake.submission_input import (
    UploadLimits,
    accepted_kind,
    check_upload,
    format_size,
    validate_submission,
)
from bot.presentation.refusal_words import refusal_words
from tests.support import REPO

SOLUTIONS = Path(__file__).parent.parent / "graders" / "solutions"
SMALL_NOTEBOOK = json.dumps(
    {"cells": [{"cell_type": "code", "source": "x = 1"}], "metadata": {}, "nbformat": 4}
).encode()


LIMITS = UploadLimits(max_py_bytes=256 * 1024, max_ipynb_bytes=2 * 1024 * 1024)


def refusal(filename: str, data: bytes, limits: UploadLimits = LIMITS) -> Refusal:
    with pytest.raises(Refused) as caught:
        validate_submission(filename, data, limits)
    return caught.value.refusal


def rejection(filename: str, data: bytes, limits: UploadLimits = LIMITS) -> str:
    return refusal_words(refusal(filename, data, limits))


def test_the_default_limits_are_the_settings_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("MAX_PY_BYTES", "MAX_NOTEBOOK_BYTES"):
        monkeypatch.delenv(variable, raising=False)
    assert UploadLimits.defaults() == UploadLimits.of(Settings(_env_file=None)) == LIMITS
    monkeypatch.setenv("MAX_PY_BYTES", "4096")
    assert UploadLimits.of(Settings(_env_file=None)).max_py_bytes == 4096


def test_a_python_file_is_returned_as_is() -> None:
    data = (SOLUTIONS / "correct.py").read_bytes()
    prepared = validate_submission("correct.py", data, LIMITS)
    assert prepared.source == data.decode()
    assert prepared.kind == "py" and prepared.notes == ()
    assert prepared.sha256 == hashlib.sha256(data).hexdigest()


def test_a_notebook_is_converted_with_notes() -> None:
    data = (SOLUTIONS / "correct_magics.ipynb").read_bytes()
    prepared = validate_submission("Homework.IPYNB", data, LIMITS)
    assert prepared.kind == "ipynb"
    assert prepared.source.startswith("# cell 2\n")
    assert prepared.notes[0] == "dropped 3 IPython magic/shell lines (cells 2, 5)"
    assert prepared.sha256 == hashlib.sha256(data).hexdigest()  # of the upload, not the source


def test_a_byte_order_mark_is_accepted_and_removed() -> None:
    assert validate_submission("a.py", b"\xef\xbb\xbfx = 1\n", LIMITS).source == "x = 1\n"


@pytest.mark.parametrize(
    ("filename", "suffix", "message"),
    [
        (
            "answer.txt",
            ".txt",
            "`answer.txt` is a .txt file; send a Python file (.py) or a Jupyter",
        ),
        ("answer.py.zip", ".zip", "`answer.py.zip` is a .zip file; send a Python file (.py) or a"),
        ("Makefile", "", "`Makefile` is a file without an extension; send a Python file (.py)"),
    ],
)
def test_wrong_extensions_say_what_was_received_and_accepted(
    filename: str, suffix: str, message: str
) -> None:
    assert rejection(filename, b"x = 1\n").startswith(message)
    assert "(.ipynb)" in rejection(filename, b"x = 1\n")
    assert refusal(filename, b"x = 1\n") == WrongFileKind(filename, suffix)


@pytest.mark.parametrize(
    ("filename", "kind"),
    [
        ("a.py", "py"),
        ("A.PY", "py"),
        ("Homework.IPYNB", "ipynb"),
        ("folder/a.ipynb", "ipynb"),
        ("x" * 150 + ".py", "py"),  # the kind is the whole name's, not a shortened one's
        (".py", None),  # a hidden file with no extension
        ("a.py.zip", None),
        ("a.py ", None),
        ("a.txt", None),
        ("", None),
    ],
)
def test_which_names_are_graded(filename: str, kind: str | None) -> None:
    assert accepted_kind(filename) == kind
    if kind is not None:
        assert check_upload(filename, 0, LIMITS) == kind
        data = SMALL_NOTEBOOK if kind == "ipynb" else b"x = 1\n"
        assert validate_submission(filename, data, LIMITS).kind == kind
    else:
        with pytest.raises(Refused) as caught:
            check_upload(filename, 0, LIMITS)
        assert isinstance(caught.value.refusal, WrongFileKind)


def test_the_size_limit_is_per_kind_and_inclusive() -> None:
    limits = UploadLimits(max_py_bytes=2000, max_ipynb_bytes=5000)
    assert check_upload("a.py", 2000, limits) == "py"
    assert check_upload("a.ipynb", 5000, limits) == "ipynb"
    for name, size, limit, kind in [("a.py", 2001, 2000, "py"), ("b.ipynb", 5001, 5000, "ipynb")]:
        with pytest.raises(Refused) as caught:
            check_upload(name, size, limits)
        assert caught.value.refusal == TooLarge(name, size, limit, kind)


def test_paths_in_the_filename_are_not_echoed() -> None:
    assert rejection("../../etc/passwd", b"root").startswith("`passwd` is a file without")


def test_empty_and_blank_files() -> None:
    assert rejection("a.py", b"") == "`a.py` is empty (0 bytes)."
    assert rejection("a.py", b"  \n\t\n") == "`a.py` contains only whitespace."
    assert refusal("a.py", b"") == EmptyFile("a.py")
    assert refusal("a.py", b"  \n\t\n") == OnlyWhitespace("a.py")


def test_too_large_files_state_size_and_limit() -> None:
    assert rejection("a.py", b"#" * (300 * 1024)) == (
        "`a.py` is 300 KiB; the limit for .py files is 256 KiB."
    )
    assert rejection("a.py", b"x = 1\n", UploadLimits(4, LIMITS.max_ipynb_bytes)) == (
        "`a.py` is 6 bytes; the limit for .py files is 4 bytes."
    )
    assert refusal("a.py", b"#" * (300 * 1024)) == TooLarge("a.py", 300 * 1024, 256 * 1024, "py")
    message = rejection("a.ipynb", b" " * (3 * 1024 * 1024 + 512 * 1024))
    assert message.startswith("`a.ipynb` is 3.5 MiB; the limit for .ipynb files is 2 MiB.")
    assert "Clear All Outputs" in message


def test_notebook_code_is_held_to_the_python_limit() -> None:
    limits = UploadLimits(8, LIMITS.max_ipynb_bytes)
    assert rejection("a.ipynb", SMALL_NOTEBOOK, limits) == (
        "the code cells of `a.ipynb` add up to 15 bytes; the limit for code is 8 bytes."
    )
    assert refusal("a.ipynb", SMALL_NOTEBOOK, limits) == CodeTooLarge("a.ipynb", 15, 8)


def test_binary_files_are_rejected() -> None:
    assert rejection("a.py", b"PK\x03\x04\x00\x00zip") == (
        "`a.py` looks like a binary file, not text (a NUL byte at offset 4)."
    )
    assert rejection("a.py", b"x = 1\n" + bytes(range(1, 9)) * 4) == (
        "`a.py` looks like a binary file, not text (84% of its bytes are control characters)."
    )
    assert refusal("a.py", b"PK\x03\x04\x00") == NulByte("a.py", 4)
    assert refusal("a.py", b"x = 1\n" + bytes(range(1, 9)) * 4) == ControlBytes("a.py", 84)


def test_text_that_is_not_utf8_names_the_byte() -> None:
    data = b"# caf\xc3\xa9 is fine\nname = 'Jos\xe9'\n"
    assert rejection("a.py", data) == (
        "`a.py` is not valid UTF-8: byte 0xe9 at offset 27 (line 2) cannot be decoded. "
        "Save the file with UTF-8 encoding."
    )
    assert "byte 0x80 at offset 5 (line 1)" in rejection("a.py", b"\xef\xbb\xbfab\x80c\xff")
    assert refusal("a.py", data) == NotUtf8("a.py", 0xE9, 27, 2)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "malformed.ipynb",
            "`malformed.ipynb` is not a notebook that can be graded: cell 1: 'source' must be a "
            "string or a list of strings.",
        ),
        (
            "no_code.ipynb",
            "`no_code.ipynb` is not a notebook that can be graded: it has no code cells (only 2 "
            "markdown or raw cells).",
        ),
    ],
)
def test_bad_notebooks_are_rejected(name: str, message: str) -> None:
    assert rejection(name, (SOLUTIONS / name).read_bytes()) == message


def test_invalid_notebook_json_is_rejected() -> None:
    assert "it is not valid JSON (line 1, column 1" in rejection("a.ipynb", b"print('hi')")


@pytest.mark.parametrize(
    ("size", "text"),
    [(0, "0 bytes"), (1023, "1023 bytes"), (1024, "1 KiB"), (1536, "1.5 KiB"), (3 << 20, "3 MiB")],
)
def test_format_size(size: int, text: str) -> None:
    assert format_size(size) == text


def test_the_bot_process_can_import_it_without_torch_or_discord() -> None:
    probe = (
        "import sys, bot.intake.submission_input; "
        "print(sorted(m for m in ('torch', 'discord') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
