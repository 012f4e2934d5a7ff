"""The near-copy measurement over the graders' catalogue (tests/graders/catalogue/): honest
pairs of independent correct styles of one task, and mechanical copies of each solution with
renamed variables and reordered functions.

A catalogue style's code is appended to the reference and replaces its top-level defs (see
``tests.graders.catalogue``), so a style that rewrites one function of four shares the other
three with the reference: that is not independent work.  An honest pair is therefore compared
on what both authors wrote: each side keeps its imports, constants and helpers, and of the
task's interface functions only those both sides define.  A copy is made of each whole
solution (the reference, and each style as submitted: the reference with the style's defs in
place of its own) by ``rename_and_reorder``: an ``ast`` transformer written apart from the
normalizer, which renames every parameter, local variable and helper function and reverses the
order of the top-level functions.

    .venv/bin/python -m tests.similarity_catalogue   prints the figures per task
"""

from __future__ import annotations

import ast
import builtins
import itertools
from dataclasses import dataclass

from bot.similarity.fingerprints import MIN_TOKENS, THRESHOLD, normalize, similarity
from graders.registry import load_grader, registry
from tests.graders.catalogue import catalogue_for

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Solution:
    name: str
    source: str  # as submitted, complete


@dataclass(frozen=True)
class TaskFigures:
    grader: str
    task: str
    honest: tuple[tuple[str, str, float], ...]  # pairs long enough to flag
    honest_short: int  # pairs under MIN_TOKENS on a side: never flagged
    copies: tuple[tuple[str, float], ...]
    copies_short: int

    @property
    def honest_max(self) -> float | None:
        return max((s for *_, s in self.honest), default=None)

    @property
    def copies_min(self) -> float | None:
        return min((s for _, s in self.copies), default=None)


def interface_of(grader: str) -> tuple[str, ...]:
    return tuple(load_grader(grader).interface)


def solutions(grader: str) -> tuple[Solution, list[Solution], list[Solution]]:
    """The reference, each style's own code, and each style as submitted (complete)."""
    catalogue = catalogue_for(grader)
    reference = Solution("reference", catalogue.reference.read_text())
    own = [Solution(style.name, style.code) for style in catalogue.styles]
    whole = [Solution(style.name, _replaced(reference.source, style.source)) for style in own]
    return reference, own, whole


def _replaced(reference: str, code: str) -> str:
    """The reference's text without its top-level defs that ``code`` defines again, then
    ``code``: the solution the grader runs, comments and layout as written."""
    names = {node.name for node in ast.parse(code).body if isinstance(node, _DEFS)}
    lines = reference.splitlines()
    for node in reversed(ast.parse(reference).body):
        if isinstance(node, _DEFS) and node.name in names:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            del lines[first - 1 : node.end_lineno]
    return "\n".join(lines) + "\n\n" + code


def _defined(source: str, interface: tuple[str, ...]) -> set[str]:
    return {n.name for n in ast.parse(source).body if isinstance(n, _DEFS) and n.name in interface}


def _restricted(source: str, interface: tuple[str, ...], keep: set[str]) -> str:
    """``source`` with only the interface functions in ``keep`` (all else stays)."""
    body = [
        node
        for node in ast.parse(source).body
        if not (isinstance(node, _DEFS) and node.name in interface and node.name not in keep)
    ]
    return ast.unparse(ast.Module(body=body, type_ignores=[]))


def _bound_names(tree: ast.Module, interface: tuple[str, ...]) -> set[str]:
    imported = {
        (alias.asname or alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            bound.add(node.name)
    return bound - set(interface) - imported - set(dir(builtins))


def _spots(tree: ast.Module, names: dict[str, str], lines: list[str]) -> list[tuple[int, int, str]]:
    """Where each bound name is written: (line index, column, old name)."""
    spots: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in names:
            spots.append((node.lineno - 1, node.col_offset, node.id))
        elif isinstance(node, ast.arg) and node.arg in names:
            spots.append((node.lineno - 1, node.col_offset, node.arg))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in names:
            line = lines[node.lineno - 1]
            column = line.index("def", node.col_offset) + 3
            column = line.index(node.name, column)
            spots.append((node.lineno - 1, column, node.name))
    return spots


def rename_and_reorder(source: str, interface: tuple[str, ...]) -> str:
    """A copy of ``source`` as someone would make it by hand: every bound name (parameters,
    variables, helper functions; not the interface's functions, imports or builtins) renamed
    where it is written, and the top-level functions moved into reverse order, text, comments
    and layout otherwise kept.  Built from the ``ast``'s positions, not from tokens."""
    tree = ast.parse(source)
    names = {name: f"renamed_{i}" for i, name in enumerate(sorted(_bound_names(tree, interface)))}
    lines = source.splitlines()
    for row, column, old in sorted(_spots(tree, names, lines), reverse=True):
        line = lines[row]
        assert line[column : column + len(old)] == old, (line, column, old)
        lines[row] = line[:column] + names[old] + line[column + len(old) :]
    functions: list[list[str]] = []
    taken: set[int] = set()
    for node in tree.body:
        if isinstance(node, _DEFS):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
            assert node.end_lineno is not None
            functions.append(lines[first : node.end_lineno])
            taken.update(range(first, node.end_lineno))
    rest = [line for i, line in enumerate(lines) if i not in taken]
    return "\n".join([*rest, *("\n".join(f) + "\n" for f in reversed(functions))]) + "\n"


def long_enough(source: str, interface: tuple[str, ...]) -> bool:
    return len(normalize(source, interface)) >= MIN_TOKENS


def measure(grader: str) -> TaskFigures:
    interface = interface_of(grader)
    reference, own, whole = solutions(grader)
    honest: list[tuple[str, str, float]] = []
    honest_short = 0
    for first, second in itertools.combinations([reference, *own], 2):
        common = _defined(first.source, interface) & _defined(second.source, interface)
        if not common:
            continue
        a = _restricted(first.source, interface, common)
        b = _restricted(second.source, interface, common)
        score = similarity(a, b, interface)
        if score is None:
            honest_short += 1
        else:
            honest.append((first.name, second.name, score))
    copies: list[tuple[str, float]] = []
    copies_short = 0
    for solution in [reference, *whole]:
        copy = rename_and_reorder(solution.source, interface)
        score = similarity(solution.source, copy, interface)
        if score is None:
            copies_short += 1
        else:
            copies.append((solution.name, score))
    return TaskFigures(
        grader,
        catalogue_for(grader).task,
        tuple(honest),
        honest_short,
        tuple(copies),
        copies_short,
    )


def every_task() -> list[TaskFigures]:
    return [measure(grader) for grader in sorted(registry())]


def report(figures: list[TaskFigures]) -> str:
    lines = [
        f"threshold {THRESHOLD:.2f}, minimum {MIN_TOKENS} normalized tokens",
        f"{'task':46} {'honest pairs':>12} {'max':>6} {'copies':>6} {'min':>6}  short (h/c)",
    ]
    for f in figures:
        hi = f"{f.honest_max:.3f}" if f.honest_max is not None else "-"
        lo = f"{f.copies_min:.3f}" if f.copies_min is not None else "-"
        lines.append(
            f"{f.task:46} {len(f.honest):>12} {hi:>6} {len(f.copies):>6} {lo:>6}"
            f"  {f.honest_short}/{f.copies_short}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(every_task()))
