"""Human-readable limits for verdict messages ("2 GiB", "10 s")."""

from __future__ import annotations

from sandbox.api import GiB, KiB, MiB


def _number(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def format_bytes(n: int) -> str:
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size:
            return f"{_number(n / size)} {unit}"
    return f"{n} B"


def format_seconds(seconds: float) -> str:
    return f"{_number(seconds)} s"
