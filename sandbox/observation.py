"""What was observed of one job: its life (the zygote's report) and its streams (the client's).

The zygote sees only how the job lived and ended (``Life``); the client reads what the job
sent and how much (``Streams``).  The verdict (``sandbox.verdict``) reads both together
as an ``Observation``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from sandbox.codec import MAX_ERROR_CHARS, field_of, seconds_of, text_of
from sandbox.framing import ProtocolError


@dataclass(frozen=True)
class ExitRecord:
    exited: bool  # True: exited with ``value`` as code; False: killed by signal ``value``
    value: int
    cpu_s: float


@dataclass
class Life:
    """The zygote's facts about one job, which outrank anything the job said."""

    setup_error: str = ""
    exit: ExitRecord | None = None
    timed_out: bool = False
    oom: bool = False
    pids_exhausted: bool = False
    wall_s: float = 0.0


@dataclass
class Streams:
    """The client's facts about what one job sent."""

    over: str = ""  # "stdout", "stderr" or "tensors" when that cap was exceeded
    protocol_error: str = ""
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)


@dataclass
class Observation:
    setup_error: str = ""
    exit: ExitRecord | None = None
    timed_out: bool = False
    over: str = ""
    protocol_error: str = ""
    oom: bool = False
    pids_exhausted: bool = False
    wall_s: float = 0.0
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)

    @classmethod
    def of(cls, life: Life, streams: Streams) -> Observation:
        return cls(**asdict(life) | asdict(streams) | {"exit": life.exit})


def life_to_json(life: Life) -> dict[str, Any]:
    return {"kind": "ended", **asdict(life)}


def life_from_json(header: dict[str, Any]) -> Life:
    """The zygote's ``ended`` report, checked field by field."""
    if header.get("kind") != "ended":
        raise ProtocolError(f"expected an 'ended' report, got {str(header.get('kind'))[:40]!r}")
    raw_exit = header.get("exit")
    exit_record = None
    if raw_exit is not None:
        if not isinstance(raw_exit, dict):
            raise ProtocolError("bad exit record")
        exit_record = ExitRecord(
            field_of(raw_exit, "exited", bool),
            field_of(raw_exit, "value", int),
            seconds_of(raw_exit, "cpu_s"),
        )
    return Life(
        setup_error=text_of(header, "setup_error", MAX_ERROR_CHARS),
        exit=exit_record,
        timed_out=field_of(header, "timed_out", bool),
        oom=field_of(header, "oom", bool),
        pids_exhausted=field_of(header, "pids_exhausted", bool),
        wall_s=seconds_of(header, "wall_s"),
    )
