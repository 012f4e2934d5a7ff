"""What a grader declares about itself, once, for the torch-free bot and for its own class.

Every grader module in ``graders/tasks/`` starts with ``DECLARATION = Declaration(...)``,
written with literals only (strings, numbers, tuples, ``Speed(...)``, ``Limits(...)``,
``GiB``/``MiB``/``KiB``), so ``graders.registry`` reads it from the file's syntax tree without
importing the module (and torch with it), and the grader's class takes its interface, limits
and device from the very same value (``graders.cases.CaseGrader``).  Torch-free.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sandbox.api import Limits

#: ``name(params) -> result``: a Python name, its parameters, an optional result
_SIGNATURE = re.compile(r"(?P<name>[A-Za-z_]\w*)\s*\((?P<params>.*)\)\s*(?:->\s*\S.*)?")


@dataclass(frozen=True)
class Signature:
    """A function the learner defines, as a quest shows it: ``f(A, B) -> Tensor``."""

    name: str
    parameters: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> Signature:
        """The name and the parameters (whitespace dropped) of ``text``; ValueError when it
        is not a signature."""
        match = _SIGNATURE.fullmatch(text.strip())
        if match is None:
            raise ValueError(f"{text!r} is not a function signature")
        inside = re.sub(r"\s+", "", match["params"])
        return cls(match["name"], tuple(inside.split(",")) if inside else ())


@dataclass(frozen=True)
class Speed:
    """A speed-ranked grader's trial: after a pass, ``function`` races ``reference`` (a
    module in ``graders/speed/``) by the worker's clock.  ``batch``: then a shorter trial on
    the reference's inputs for that many sequences at once (``inputs(generator, batch)``),
    to report what batching buys; it never ranks."""

    function: str
    reference: str
    batch: int | None = None


@dataclass(frozen=True)
class Declaration:
    """A grader's interface: the functions a submission defines, in the order the grader
    calls them (as signatures, which quests show), the sandbox limits of its jobs, whether
    it grades on a GPU when the worker has one, and its speed trial, if it is speed-ranked."""

    functions: tuple[str, ...]
    limits: Limits = field(default_factory=Limits)
    prefers_cuda: bool = False
    speed: Speed | None = None

    def __post_init__(self) -> None:
        names = self.interface  # parses every signature: ValueError for one that is not
        if not names or len(set(names)) != len(names):
            raise ValueError(f"a grader declares its functions once each, got {names}")
        if self.speed is not None and self.speed.function not in names:
            raise ValueError(f"speed races {self.speed.function!r}, which is not in {names}")

    @property
    def signatures(self) -> tuple[Signature, ...]:
        return tuple(Signature.parse(text) for text in self.functions)

    @property
    def interface(self) -> tuple[str, ...]:
        """The function names, in the order the grader calls them."""
        return tuple(s.name for s in self.signatures)
