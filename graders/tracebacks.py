"""One line about an exception a learner's function raised, for a chat message.

The sandbox sends a traceback trimmed to the learner's frames; the exception's last
line plus the learner line that raised it is enough to act on.
"""

from __future__ import annotations

import re

#: "IndexError: ..." or "torch.OutOfMemoryError" at the start of a line
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*)(:|$)", re.MULTILINE)
#: '  File "submission.py", line 9, in matmul_loops' and the code line after it
_FRAME_LINE = re.compile(r'^\s*File "[^"]*", line (\d+), in [^\n]*\n(?:( {4}.*)$)?', re.MULTILINE)


def summarise_error(error: str) -> tuple[str, str]:
    """The exception type, and its last line with the learner's line that raised it."""
    kinds = _EXCEPTION_LINE.findall(error)
    kind = kinds[-1][0].rsplit(".", 1)[-1] if kinds else ""
    lines = error.strip().splitlines()
    last = next((line for line in reversed(lines) if _EXCEPTION_LINE.match(line)), "")
    message = last or (lines[-1] if lines else "an exception")
    frames = _FRAME_LINE.findall(error)
    if frames:
        number, code = frames[-1]
        message += f" (line {number}: `{code.strip()}`)" if code.strip() else f" (line {number})"
    return kind, message
