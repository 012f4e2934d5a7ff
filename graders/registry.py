"""Every grader, found by walking ``graders/tasks/``; what the bot needs of each, read
without importing it (the bot never imports torch).

One naming rule makes a grader: ``graders/tasks/<name>.py`` (a name not starting with ``_``)
is the grader ``<name>``; it declares ``DECLARATION = Declaration(...)`` at top level, in
literals (``graders.declaration``), and defines the class ``<Name>`` (the name in CamelCase:
``fused_pointwise`` -> ``FusedPointwise``) that grades.  The declaration is read from the
file's syntax tree, so the bot and the class see one value; ``tests/graders/test_registry.py``
holds every module to it.

Jobs already queued name their grader (``JobSpec.grader``) as the quest did when they were
queued: a grader that is renamed keeps its old name in ``RENAMED``, so those jobs still grade.
"""

from __future__ import annotations

import ast
import functools
import importlib
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from graders.declaration import Declaration, Signature, Speed
from sandbox.api import GiB, KiB, Limits, MiB

if TYPE_CHECKING:
    from graders.base import Grader

TASKS = Path(__file__).parent / "tasks"
PACKAGE = f"{__package__}.tasks"
#: old grader name -> its name now, for jobs queued before a rename (none renamed yet)
RENAMED: Mapping[str, str] = MappingProxyType({})

#: what a declaration may be written with: these constructors and constants, and literals
_CONSTRUCTORS: dict[str, Callable[..., Any]] = {
    "Declaration": Declaration,
    "Speed": Speed,
    "Limits": Limits,
}
_CONSTANTS = {"GiB": GiB, "MiB": MiB, "KiB": KiB}
_OPERATORS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Mult: operator.mul,
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.LShift: operator.lshift,
    ast.Pow: operator.pow,
}


class BadDeclaration(ValueError):
    """A grader module whose declaration cannot be read; the message says where and why."""


@dataclass(frozen=True)
class GraderInfo:
    """A grader as the bot knows it: its name, where its code is, and its declaration."""

    name: str
    declaration: Declaration

    @property
    def module(self) -> str:
        return f"{PACKAGE}.{self.name}"

    @property
    def class_name(self) -> str:
        return "".join(part[:1].upper() + part[1:] for part in self.name.split("_"))

    @property
    def interface(self) -> tuple[str, ...]:
        return self.declaration.interface

    @property
    def signatures(self) -> tuple[Signature, ...]:
        return self.declaration.signatures

    @property
    def limits(self) -> Limits:
        return self.declaration.limits

    @property
    def prefers_cuda(self) -> bool:
        return self.declaration.prefers_cuda

    @property
    def speed(self) -> Speed | None:
        return self.declaration.speed


@functools.cache
def registry(folder: Path = TASKS) -> Mapping[str, GraderInfo]:
    """Every grader in ``folder``, by name, read once per process."""
    found = {
        path.stem: GraderInfo(path.stem, read_declaration(path))
        for path in sorted(folder.glob("*.py"))
        if not path.stem.startswith("_")
    }
    return MappingProxyType(found)


def grader_names() -> frozenset[str]:
    return frozenset(registry())


def find(name: str) -> GraderInfo | None:
    """The grader called ``name``, or once called so (``RENAMED``); None when there is none."""
    graders = registry()
    return graders.get(name) or graders.get(RENAMED.get(name, ""))


def load_grader(name: str) -> Grader:
    """Import and instantiate a grader (imports torch: worker processes only)."""
    info = find(name)
    if info is None:
        known = ", ".join(sorted(registry()))
        raise KeyError(f"unknown grader {name!r}; known: {known}")
    factory = getattr(importlib.import_module(info.module), info.class_name)
    grader: Grader = factory()
    return grader


def read_declaration(path: Path) -> Declaration:
    """The ``DECLARATION`` at the top level of the module at ``path``, from its syntax alone."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        target, value = _assigned(node)
        if target == "DECLARATION" and value is not None:
            try:
                declared = _literal(value)
            except (BadDeclaration, TypeError, ValueError) as exc:
                raise BadDeclaration(f"{path.name}:{value.lineno}: {exc}") from None
            if not isinstance(declared, Declaration):
                raise BadDeclaration(f"{path.name}: DECLARATION is not a Declaration(...)")
            return declared
    raise BadDeclaration(f"{path.name}: no top-level DECLARATION = Declaration(...)")


def _assigned(node: ast.stmt) -> tuple[str | None, ast.expr | None]:
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
        return (target.id if isinstance(target, ast.Name) else None), node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id, node.value
    return None, None


def _literal(node: ast.expr) -> Any:
    """The value of a declaration's expression: literals, tuples, the constructors and
    constants above, and arithmetic on numbers; anything else is refused, never run."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Tuple | ast.List):
        return tuple(_literal(item) for item in node.elts)
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_literal(node.operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _literal(node.left), _literal(node.right)
        if not all(isinstance(v, int | float) for v in (left, right)):
            raise BadDeclaration("arithmetic is on numbers only")
        return _OPERATORS[type(node.op)](left, right)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _CONSTRUCTORS
        and all(k.arg is not None for k in node.keywords)
    ):
        args = [_literal(a) for a in node.args]
        kwargs = {str(k.arg): _literal(k.value) for k in node.keywords}
        return _CONSTRUCTORS[node.func.id](*args, **kwargs)
    raise BadDeclaration(
        f"`{ast.unparse(node)}` is not a literal: write the declaration with strings, "
        f"numbers, tuples, {', '.join(f'{c}(...)' for c in _CONSTRUCTORS)} and "
        f"{', '.join(_CONSTANTS)}"
    )
