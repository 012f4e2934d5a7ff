"""Check an uploaded file before any job is queued, and turn it into Python source.

Runs in the bot process (no torch, no discord): everything here is cheap and
reads the bytes only, so a bad upload gets a specific answer at once instead of
a failed grading job later.
"""

from __future__ import annotations

import hashlib
from pathlib import PurePath

from bot.intake.notebook import NotebookError, notebook_to_source
from bot.jobs.job_spec import PreparedSource, SourceKind

ACCEPTED = (".py", ".ipynb")
_BOM = b"\xef\xbb\xbf"
#: share of control bytes (not tab, newline, carriage return, form feed) that means "binary"
_BINARY_SHARE = 0.10
_CONTROL = bytes(sorted(set(range(32)) - {9, 10, 12, 13} | {127}))


class SubmissionRejected(ValueError):
    """The upload cannot be graded; ``str(exc)`` tells the learner exactly why."""


def validate_submission(
    filename: str,
    data: bytes,
    *,
    max_py_bytes: int = 256 * 1024,
    max_ipynb_bytes: int = 2 * 1024 * 1024,
) -> PreparedSource:
    """The source to run, or SubmissionRejected with a message for the learner."""
    name = PurePath(filename).name[:100] or "the file"
    suffix = PurePath(name).suffix.lower()
    if suffix not in ACCEPTED:
        received = f"a {suffix} file" if suffix else "a file without an extension"
        raise SubmissionRejected(
            f"`{name}` is {received}; send a Python file (.py) or a Jupyter notebook (.ipynb)."
        )
    kind: SourceKind = "py" if suffix == ".py" else "ipynb"
    if not data:
        raise SubmissionRejected(f"`{name}` is empty (0 bytes).")
    cap = max_py_bytes if kind == "py" else max_ipynb_bytes
    if len(data) > cap:
        raise SubmissionRejected(
            f"`{name}` is {format_size(len(data))}; the limit for {suffix} files is "
            f"{format_size(cap)}."
            + (" Clear the outputs (Edit > Clear All Outputs) and save." if kind == "ipynb" else "")
        )
    text = _decode(name, data)
    if not text.strip():
        raise SubmissionRejected(f"`{name}` contains only whitespace.")
    sha256 = hashlib.sha256(data).hexdigest()
    if kind == "py":
        return PreparedSource(text, kind, (), sha256)
    try:
        notebook = notebook_to_source(text)
    except NotebookError as exc:
        raise SubmissionRejected(f"`{name}` is not a notebook that can be graded: {exc}.") from None
    size = len(notebook.source.encode())
    if size > max_py_bytes:
        raise SubmissionRejected(
            f"the code cells of `{name}` add up to {format_size(size)}; the limit for code is "
            f"{format_size(max_py_bytes)}."
        )
    return PreparedSource(notebook.source, kind, notebook.notes, sha256)


def format_size(size: int) -> str:
    """Sizes as people read them: bytes, KiB or MiB, one decimal where it matters."""
    if size < 1024:
        return f"{size} bytes"
    value, unit = (size / 1024, "KiB") if size < 1024 * 1024 else (size / 1024 / 1024, "MiB")
    return f"{value:.1f} {unit}".replace(".0 ", " ")


def _decode(name: str, data: bytes) -> str:
    """UTF-8 text (a BOM is allowed), or a rejection naming where the bytes go wrong."""
    nul = data.find(b"\x00")
    if nul >= 0:
        raise SubmissionRejected(
            f"`{name}` looks like a binary file, not text (a NUL byte at offset {nul})."
        )
    control = len(data) - len(data.translate(None, _CONTROL))
    if control > _BINARY_SHARE * len(data):
        raise SubmissionRejected(
            f"`{name}` looks like a binary file, not text ({control * 100 // len(data)}% of its "
            "bytes are control characters)."
        )
    body = data.removeprefix(_BOM)
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start + len(data) - len(body)
        line = data.count(b"\n", 0, offset) + 1
        raise SubmissionRejected(
            f"`{name}` is not valid UTF-8: byte 0x{data[offset]:02x} at offset {offset} "
            f"(line {line}) cannot be decoded. Save the file with UTF-8 encoding."
        ) from None
