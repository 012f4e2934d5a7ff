"""Check an uploaded file before any job is queued, and turn it into Python source.

Runs in the bot process (no torch, no discord): everything here is cheap and
reads the bytes only, so a bad upload gets a specific answer at once instead of
a failed grading job later.  Every "no" is a typed ``Refused`` (``bot.intake.refusals``);
the front ends word it.  The rules that need only the name and the size (``check_upload``)
are the ones a front end may ask before it downloads, or while it reads: ``validate_submission``
applies the same ones again, so nothing depends on a front end having asked.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import PurePath

from bot.config import Settings
from bot.intake.notebook import NotebookError, notebook_to_source
from bot.intake.refusals import (
    CodeTooLarge,
    ControlBytes,
    EmptyFile,
    NotANotebook,
    NotUtf8,
    NulByte,
    OnlyWhitespace,
    Refused,
    TooLarge,
    WrongFileKind,
)
from bot.jobs.job_spec import PreparedSource, SourceKind

ACCEPTED = (".py", ".ipynb")
_BOM = b"\xef\xbb\xbf"
#: share of control bytes (not tab, newline, carriage return, form feed) that means "binary"
_BINARY_SHARE = 0.10
_CONTROL = bytes(sorted(set(range(32)) - {9, 10, 12, 13} | {127}))


@dataclass(frozen=True)
class UploadLimits:
    """The largest uploads accepted, per kind of file: the settings' ``MAX_PY_BYTES`` and
    ``MAX_NOTEBOOK_BYTES`` (``bot.config``, their one source)."""

    max_py_bytes: int
    max_ipynb_bytes: int

    @classmethod
    def of(cls, settings: Settings) -> UploadLimits:
        return cls(settings.max_py_bytes, settings.max_notebook_bytes)

    @classmethod
    def defaults(cls) -> UploadLimits:
        """The limits of a deployment that sets neither variable."""
        fields = Settings.model_fields
        return cls(fields["max_py_bytes"].default, fields["max_notebook_bytes"].default)

    def cap(self, kind: SourceKind) -> int:
        """The limit for a file of this kind."""
        return self.max_ipynb_bytes if kind == "ipynb" else self.max_py_bytes

    @property
    def largest(self) -> int:
        """The largest upload of any kind."""
        return max(self.max_py_bytes, self.max_ipynb_bytes)


def accepted_kind(filename: str) -> SourceKind | None:
    """The kind of a file of this name, or None when it is not one that is graded."""
    suffix = PurePath(filename).suffix.lower()
    return ("py" if suffix == ".py" else "ipynb") if suffix in ACCEPTED else None


def check_upload(filename: str, size: int, limits: UploadLimits) -> SourceKind:
    """The kind of an upload of ``size`` bytes named ``filename``, or ``Refused``
    (``WrongFileKind``, ``TooLarge``): what can be decided before the bytes are read."""
    kind = accepted_kind(filename)
    if kind is None:
        raise Refused(WrongFileKind(filename, PurePath(filename).suffix.lower()))
    if size > limits.cap(kind):
        raise Refused(TooLarge(filename, size, limits.cap(kind), kind))
    return kind


def validate_submission(filename: str, data: bytes, limits: UploadLimits) -> PreparedSource:
    """The source to run, or ``Refused`` with an ``UploadRefusal`` saying what is wrong."""
    kind = check_upload(filename, len(data), limits)
    if not data:
        raise Refused(EmptyFile(filename))
    text = _decode(filename, data)
    if not text.strip():
        raise Refused(OnlyWhitespace(filename))
    sha256 = hashlib.sha256(data).hexdigest()
    if kind == "py":
        return PreparedSource(text, kind, (), sha256)
    try:
        notebook = notebook_to_source(text)
    except NotebookError as exc:
        raise Refused(NotANotebook(filename, str(exc))) from None
    size = len(notebook.source.encode())
    if size > limits.max_py_bytes:
        raise Refused(CodeTooLarge(filename, size, limits.max_py_bytes))
    return PreparedSource(notebook.source, kind, notebook.notes, sha256)


def format_size(size: int) -> str:
    """Sizes as people read them: bytes, KiB or MiB, one decimal where it matters."""
    if size < 1024:
        return f"{size} bytes"
    value, unit = (size / 1024, "KiB") if size < 1024 * 1024 else (size / 1024 / 1024, "MiB")
    return f"{value:.1f} {unit}".replace(".0 ", " ")


def _decode(filename: str, data: bytes) -> str:
    """UTF-8 text (a BOM is allowed), or a refusal naming where the bytes go wrong."""
    nul = data.find(b"\x00")
    if nul >= 0:
        raise Refused(NulByte(filename, nul))
    control = len(data) - len(data.translate(None, _CONTROL))
    if control > _BINARY_SHARE * len(data):
        raise Refused(ControlBytes(filename, control * 100 // len(data)))
    body = data.removeprefix(_BOM)
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = exc.start + len(data) - len(body)
        line = data.count(b"\n", 0, offset) + 1
        raise Refused(NotUtf8(filename, data[offset], offset, line)) from None
