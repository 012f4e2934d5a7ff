"""Turn a Jupyter notebook (nbformat 4) into the Python source the sandbox runs.

Parsed by hand rather than with nbformat, which the bot does not need for anything
else.  Code cells run in order, each after a ``# cell N`` line (N counts every cell,
markdown included, as the learner sees them), so a traceback's line leads back to
its cell.  IPython-only lines become ``pass`` rather than vanishing, which keeps
line numbers and indented blocks intact.  Outputs and markdown are never looked at.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

#: lines only IPython understands: magics, shell escapes, help, get_ipython() calls
_IPYTHON_LINE = re.compile(
    r"""^\s*(
        [%!?]                      # %time f(), !pip install x, ?torch.dot
      | [\w.\[\]]+\s*\?{1,2}\s*$   # torch.dot?  torch.dot??
      | [\w\s,]+=\s*[%!]           # files = !ls   t = %timeit -o f()
      | .*\bget_ipython\(          # what nbconvert writes for a magic
    )""",
    re.VERBOSE,
)
#: valid Python, but get_ipython only exists inside IPython
_GET_IPYTHON_LINE = re.compile(r".*\bget_ipython\(")
_TRIPLE_QUOTES = re.compile(r'"""|' + r"'''")


class NotebookError(ValueError):
    """The file is not a notebook we can run; ``str(exc)`` says what to fix."""


@dataclass(frozen=True)
class ConvertedNotebook:
    source: str
    notes: tuple[str, ...]


def notebook_to_source(text: str) -> ConvertedNotebook:
    """Python source for the code cells of ``text``, or NotebookError saying what is wrong."""
    cells = _cells(_load(text))
    parts: list[str] = []
    line_cells: list[int] = []
    magic_cells: list[str] = []
    code_cells = 0
    has_code = False
    for number, cell in enumerate(cells, start=1):
        if cell["cell_type"] != "code":
            continue
        code_cells += 1
        code = _source(cell, number)
        first = code.lstrip().split(maxsplit=1)
        if first and first[0].startswith("%%"):
            magic_cells.append(f"cell {number} {first[0]}")
            continue
        cleaned, dropped = _drop_ipython_lines(code)
        line_cells += [number] * dropped
        has_code = has_code or sum(1 for line in code.splitlines() if line.strip()) > dropped
        if cleaned.strip():
            parts.append(f"# cell {number}\n{cleaned.rstrip()}\n")
    if code_cells == 0:
        only = f"only {_plural(len(cells), 'markdown or raw cell')}" if cells else "no cells at all"
        raise NotebookError(f"it has no code cells ({only})")
    if not has_code:
        raise NotebookError("its code cells are empty or contain only IPython magics")
    return ConvertedNotebook("\n".join(parts), _notes(line_cells, magic_cells))


def _load(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(
            f"it is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except (ValueError, RecursionError):
        raise NotebookError("it is not valid notebook JSON") from None


def _cells(notebook: Any) -> list[dict[str, Any]]:
    if not isinstance(notebook, dict):
        raise NotebookError("the top level must be a JSON object with a 'cells' list")
    if "worksheets" in notebook:
        raise NotebookError("it is an old nbformat 3 notebook; open and save it in Jupyter")
    if "nbformat" not in notebook:
        raise NotebookError("it has no 'nbformat' field, so it is not a Jupyter notebook")
    if notebook["nbformat"] != 4:
        version = notebook["nbformat"]
        raise NotebookError(f"it is nbformat {version!r}; only nbformat 4 notebooks are supported")
    cells = notebook.get("cells")
    if not isinstance(cells, list):
        raise NotebookError("it has no 'cells' list")
    for number, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
            raise NotebookError(f"cell {number} is not an object with a 'cell_type'")
    return cells


def _source(cell: dict[str, Any], number: int) -> str:
    source = cell.get("source")
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    raise NotebookError(f"cell {number}: 'source' must be a string or a list of strings")


def _drop_ipython_lines(code: str) -> tuple[str, int]:
    """Replace IPython-only lines with ``pass``.

    In a cell that parses as Python only ``get_ipython()`` lines go: a ``%`` or ``!`` at
    the start of a line there is an operator or inside a string, not a magic.
    """
    try:
        ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # the parser's limits
        pattern = _IPYTHON_LINE
    else:
        pattern = _GET_IPYTHON_LINE
    lines = code.split("\n")
    in_string = False
    dropped = 0
    for i, line in enumerate(lines):
        if not in_string and pattern.match(line):
            indent = line[: len(line) - len(line.lstrip())]
            lines[i] = f"{indent}pass  # IPython line dropped"
            dropped += 1
        elif len(_TRIPLE_QUOTES.findall(line)) % 2:
            in_string = not in_string
    return "\n".join(lines), dropped


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _notes(line_cells: list[int], magic_cells: list[str]) -> tuple[str, ...]:
    notes: list[str] = []
    if line_cells:
        where = ", ".join(str(n) for n in sorted(set(line_cells)))
        label = "cell" if len(set(line_cells)) == 1 else "cells"
        notes.append(
            f"dropped {_plural(len(line_cells), 'IPython magic/shell line')} ({label} {where})"
        )
    if magic_cells:
        notes.append(
            f"skipped {_plural(len(magic_cells), 'cell')} starting with a cell magic "
            f"({', '.join(magic_cells)}); move any definitions out of such cells"
        )
    return tuple(notes)
