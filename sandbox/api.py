"""Plain data exchanged between the trusted grader and the sandbox.

Nothing here imports torch: tensors cross the boundary as raw bytes with a
declared dtype and shape, so the trusted side can rebuild them with
``torch.frombuffer`` and never has to unpickle anything a submission produced.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

#: dtypes allowed across the boundary, with their item sizes in bytes.
DTYPE_SIZES: dict[str, int] = {
    "float16": 2,
    "bfloat16": 2,
    "float32": 4,
    "float64": 8,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "bool": 1,
}

GiB = 1 << 30
MiB = 1 << 20
KiB = 1 << 10


@dataclass(frozen=True)
class RawTensor:
    """A dense, C-contiguous tensor as bytes; validated on construction."""

    dtype: str
    shape: tuple[int, ...]
    data: bytes

    def __post_init__(self) -> None:
        if self.dtype not in DTYPE_SIZES:
            raise ValueError(f"dtype {self.dtype!r} is not allowed")
        if any((not isinstance(d, int)) or d < 0 for d in self.shape):
            raise ValueError(f"bad shape {self.shape!r}")
        expected = math.prod(self.shape) * DTYPE_SIZES[self.dtype]
        if len(self.data) != expected:
            raise ValueError(
                f"{len(self.data)} bytes do not match dtype {self.dtype} and shape {self.shape}"
            )

    @property
    def nbytes(self) -> int:
        return len(self.data)


@dataclass(frozen=True)
class Limits:
    """Per-job resource limits; every one has its own verdict when hit."""

    wall_s: float = 10.0
    cpu_s: float = 10.0
    memory_bytes: int = 2 * GiB
    processes: int = 64
    file_bytes: int = 16 * MiB
    scratch_bytes: int = 64 * MiB
    output_bytes: int = 64 * MiB  # all returned tensors together
    stdout_bytes: int = 64 * KiB  # captured stdout/stderr kept for feedback, each
    threads: int = 1  # torch intra-op threads inside the job


@dataclass(frozen=True)
class Call:
    """One call of a learner function with positional tensor arguments."""

    function: str
    args: tuple[RawTensor, ...]
    label: str = ""  # e.g. "square 5x5 float32", shown in feedback
    trace: bool = True  # record torch ops for this call (when the request traces at all)
    #: run this call under torch's profiler (``CallResult.profile``): CPU operators, and GPU
    #: kernels too when the job runs on "cuda".  Its ``duration_s`` then includes the
    #: profiler's cost (about 0.5 µs an operator); False costs nothing
    profile: bool = False


@dataclass(frozen=True)
class SandboxRequest:
    source: str  # Python source of the submission (notebooks already converted)
    filename: str  # shown in tracebacks, e.g. "submission.py"
    calls: tuple[Call, ...]
    limits: Limits = field(default_factory=Limits)
    device: Literal["cpu", "cuda"] = "cpu"
    trace_ops: bool = True  # record which torch functions each call used (best effort)


@dataclass(frozen=True)
class OpTime:
    """One operator (or GPU kernel, or a learner's record_function label) as the job's own
    profiler saw one call: untrusted advice.

    ``name`` is cleaned by the trusted decoder (``sandbox.codec.clean_name``), so it is safe
    to show anywhere; names that the cleaning made equal are summed into one.
    """

    name: str
    self_s: float  # self time in this call, seconds (CPU self time; for kernels the device time)
    count: int  # times it ran in this call, nested ones included
    #: of those, how many ran directly under the learner's code (not inside another
    #: operator; a record_function label is no operator); always 0 for kernels
    top_level: int
    kernel: bool  # a GPU kernel (or a device copy or fill) rather than a CPU operator


CallStatus = Literal["ok", "raised", "not_defined", "not_callable", "skipped"]


@dataclass(frozen=True)
class CallResult:
    function: str
    label: str
    status: CallStatus
    returned_type: str = ""  # "torch.Tensor", "list", "numpy.ndarray", "NoneType", ...
    tensor: RawTensor | None = None  # set when a tensor came back
    error: str = ""  # exception type and message, traceback trimmed to learner frames
    ops: tuple[str, ...] = ()  # torch functions seen during the call (untrusted, best effort)
    duration_s: float = 0.0
    #: for a call that asked for one and ran: what the profiler saw (untrusted advice), by
    #: self time, descending; None when not asked, or when the profiler could not run
    profile: tuple[OpTime, ...] | None = None
    profile_problem: str = ""  # why a profiled call that ran has no profile


JobStatus = Literal[
    "ok",  # the job ran to the end; look at the calls
    "load_error",  # importing the submission raised (SyntaxError, ImportError, ...)
    "exited",  # the submission ended the process itself (sys.exit, os._exit)
    "timeout",  # wall or CPU time limit
    "memory",  # memory limit
    "output_limit",  # returned tensors or printed output over the cap
    "crashed",  # killed by a signal (SIGSEGV, ...)
    "protocol_error",  # the job's reply was malformed: treated as a failure, never trusted
    "internal_error",  # the sandbox itself failed; not the learner's fault
]


@dataclass(frozen=True)
class SandboxResult:
    status: JobStatus
    message: str  # human text, e.g. "time limit 10 s exceeded", "crashed with SIGSEGV"
    calls: tuple[CallResult, ...] = ()
    stdout: str = ""
    stderr: str = ""
    wall_s: float = 0.0  # measured by the zygote, from launch until the job ended or was stopped
    device: str = "cpu"
    #: CPU time (user + system) of the job process and the children it reaped, reported by
    #: its init when the job died on its own (a CPU limit, a crash, an exit); 0.0 when the
    #: zygote stopped the job first (all results in, wall limit, a cap)
    cpu_s: float = 0.0


@dataclass(frozen=True)
class IsolationLayer:
    name: str  # e.g. "network namespace"
    active: bool
    required: bool  # part of the minimum: separate process, no network, rlimits, job kill
    detail: str = ""
