"""Fault injection: make the next N requests fail the way Discord sometimes does.

A fault answers instead of the route, so a rejected request changes nothing;
that is what lets a test check that discord.py's retry posts exactly once.
"""

from __future__ import annotations

from dataclasses import dataclass

RETRYABLE = {429, 500, 502, 503, 504}


@dataclass
class Fault:
    status: int
    #: ``"METHOD /template"``, or None for any request
    route: str | None
    remaining: int
    retry_after: float
    #: matching requests still let through before the fault starts firing
    after: int = 0


class FaultPlan:
    def __init__(self) -> None:
        self._faults: list[Fault] = []

    def add(self, fault: Fault) -> None:
        if fault.status not in RETRYABLE:
            raise ValueError(f"status {fault.status} is not one of {sorted(RETRYABLE)}")
        if fault.remaining < 1:
            raise ValueError("a fault must fire at least once")
        self._faults.append(fault)

    def take(self, key: str) -> Fault | None:
        """The first pending fault for this request, used up by one."""
        for fault in self._faults:
            if fault.route is None or fault.route == key:
                if fault.after > 0:
                    fault.after -= 1
                    continue
                fault.remaining -= 1
                if fault.remaining == 0:
                    self._faults.remove(fault)
                return fault
        return None

    def clear(self) -> None:
        self._faults.clear()
