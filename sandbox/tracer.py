"""Record which torch functions a learner's call used (feedback only, never trusted).

The submission runs in the same process and can disable or fool this mode, so
graders may show the list ("you used torch.matmul") but must not rely on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch.overrides import TorchFunctionMode, resolve_name

from sandbox.codec import MAX_NAME_CHARS, MAX_OPS


def op_name(func: Callable[..., Any]) -> str:
    name = resolve_name(func) or getattr(func, "__qualname__", None) or repr(func)
    return name[:MAX_NAME_CHARS]


class OpRecorder(TorchFunctionMode):
    """Collects the distinct torch functions seen, in first-use order."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: dict[str, None] = {}

    @property
    def ops(self) -> tuple[str, ...]:
        return tuple(self._seen)

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        if len(self._seen) < MAX_OPS:
            self._seen.setdefault(op_name(func))
        return func(*args, **(kwargs or {}))
