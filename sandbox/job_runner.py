"""What the job process does once it is confined: load the submission, call it, report.

Everything here runs next to hostile code in the same process, so nothing it
reports is trusted: the client validates every frame, and a tensor leaves only
as dtype, shape and raw bytes.
"""

from __future__ import annotations

import contextlib
import ctypes
import linecache
import os
import sys
import traceback
import types
from time import perf_counter  # bound now: a learner patching time.* cannot break it
from typing import Any, NoReturn

import torch

from sandbox import framing, linux, seccomp
from sandbox.api import DTYPE_SIZES, Call, CallResult, RawTensor, SandboxRequest
from sandbox.codec import (
    MAX_ERROR_CHARS,
    MAX_NAME_CHARS,
    JobKind,
    call_to_json,
    clip,
    decode_request,
)
from sandbox.framing import FrameReader, ProtocolError
from sandbox.jail import FEED_FD
from sandbox.profiling import CallProfiler
from sandbox.tracer import OpRecorder
from sandbox.turns import Answer, TensorShape, TurnSource, decode_go, decode_turn, encode_answer

MODULE_NAME = "submission"
REQUEST_HEADER_MAX = 64 << 20
REQUEST_PAYLOAD_MAX = 1 << 36  # the client's own inputs, whatever their size
NO_REQUEST_EXIT = 71  # the feed ended or broke before a request: the client's fault
DTYPES: dict[str, torch.dtype] = {name: getattr(torch, name) for name in DTYPE_SIZES}
NAMES: dict[torch.dtype, str] = {dtype: name for name, dtype in DTYPES.items()}
_MEMORY_HINTS = ("can't allocate memory", "not enough memory", "out of memory")
_MISSING = object()


def type_name(value: object) -> str:
    kind = type(value)
    module, name = str(kind.__module__), str(kind.__qualname__)
    return (name if module == "builtins" else f"{module}.{name}")[:MAX_NAME_CHARS]


def describe(exc: BaseException, filename: str) -> str:
    """The exception with a traceback trimmed to the learner's own frames."""
    try:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
        lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames)]
        text = "".join((lines if frames else []) + traceback.format_exception_only(type(exc), exc))
    except BaseException:  # a hostile __str__ may raise anything
        text = type_name(exc)
    return clip(text.rstrip("\n"), MAX_ERROR_CHARS)


def is_memory_error(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return True
    try:
        return isinstance(exc, RuntimeError) and any(h in str(exc) for h in _MEMORY_HINTS)
    except BaseException:
        return False


def to_torch(raw: RawTensor, device: str) -> torch.Tensor:
    dtype = DTYPES[raw.dtype]
    if not raw.data:
        return torch.empty(raw.shape, dtype=dtype, device=device)
    # the bytearray is the tensor's own, writable copy: no clone needed
    tensor = torch.frombuffer(bytearray(raw.data), dtype=dtype).reshape(raw.shape)
    return tensor if device == "cpu" else tensor.to(device)


def dense_on_host(value: torch.Tensor) -> tuple[torch.Tensor | None, str]:
    """A returned tensor as a plain, dense, C-contiguous host tensor (no copy when it is one
    already), or why it cannot be returned."""
    try:
        with torch._C.DisableTorchFunctionSubclass():
            tensor = torch.Tensor.detach(value)  # the base method: subclasses cannot intercept
            if tensor.layout != torch.strided:
                return None, f"{tensor.layout} tensors cannot be returned; return a dense tensor"
            if tensor.dtype not in NAMES:
                return None, f"dtype {tensor.dtype} cannot be returned"
            return torch.Tensor.contiguous(torch.Tensor.to(tensor, "cpu")), ""
    except BaseException as exc:
        return None, f"could not read the returned tensor: {type_name(exc)}"


def from_torch(value: torch.Tensor) -> tuple[RawTensor | None, str]:
    """Raw bytes of a returned tensor, or why it cannot be returned."""
    tensor, error = dense_on_host(value)
    if tensor is None:
        return None, error
    try:
        nbytes = tensor.numel() * tensor.element_size()
        data = ctypes.string_at(tensor.data_ptr(), nbytes) if nbytes else b""
        return RawTensor(NAMES[tensor.dtype], tuple(tensor.shape), data), ""
    except BaseException as exc:
        return None, f"could not read the returned tensor: {type_name(exc)}"


def serve(kind: JobKind, device: str, threads: int, out: int) -> NoReturn:
    """The job process's body: read what to do from the feed, then do it.

    The request reaches the job only here, after it is confined, straight from the client:
    the zygote it was forked from never held it.
    """
    reader = FrameReader(REQUEST_HEADER_MAX, REQUEST_PAYLOAD_MAX)
    try:
        frame = framing.read_frame(FEED_FD, reader)
        if frame is None:
            os._exit(NO_REQUEST_EXIT)
        work = decode_request(*frame) if kind is JobKind.CALLS else decode_turn(frame[0])
    except (ProtocolError, OSError):
        os._exit(NO_REQUEST_EXIT)
    runner = Runner(device, threads, out)
    if isinstance(work, SandboxRequest):
        runner.run(work)
    runner.serve_feed(work, FEED_FD, reader)


class Runner:
    """Loads one submission and runs its calls, streaming a frame per step to ``out``."""

    def __init__(self, device: str, threads: int, out: int) -> None:
        self.device = device
        self.threads = threads
        self.out = out
        self.module = types.ModuleType(MODULE_NAME)
        self.source, self.filename, self.trace_ops = "", "", False
        self.wall_s = 0.0
        self.began = perf_counter()  # the job started just before
        self.kept: torch.Tensor | None = None

    def run(self, request: SandboxRequest) -> NoReturn:
        self.source, self.filename, self.trace_ops = (
            request.source,
            request.filename,
            request.trace_ops,
        )
        self.wall_s = request.limits.wall_s
        self._redirect_streams()
        torch.set_num_threads(self.threads)
        if not self._load():
            self._finish(0)
        self._send({"kind": "loaded"})
        for call in request.calls:
            result, memory = self._call(call)
            payload = result.tensor.data if result.tensor is not None else b""
            self._send(call_to_json(result) | {"kind": "call", "memory": memory}, payload)
        self._flush()  # the client stops the job as soon as it reads the last frame
        self._send({"kind": "done"})
        self._finish(0)

    def _load(self) -> bool:
        source, filename = self.source, self.filename
        self.module.__file__ = filename
        sys.modules[MODULE_NAME] = self.module
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        try:
            code = compile(source, filename, "exec", dont_inherit=True)
            exec(code, self.module.__dict__)
        except SystemExit as exc:
            self._exit_like(exc)
        except BaseException as exc:
            error = describe(exc, filename)
            self._flush()
            self._send({"kind": "load_error", "error": error, "memory": is_memory_error(exc)})
            return False
        return True

    def _call(self, call: Call) -> tuple[CallResult, bool]:
        base = {"function": call.function, "label": call.label}
        function = self.module.__dict__.get(call.function, _MISSING)
        if function is _MISSING:
            return CallResult(**base, status="not_defined"), False
        if not callable(function):
            return CallResult(
                **base, status="not_callable", returned_type=type_name(function)
            ), False
        try:
            args = [to_torch(arg, self.device) for arg in call.args]
        except Exception as exc:
            error = clip(f"could not build the inputs: {describe(exc, '')}", MAX_ERROR_CHARS)
            return CallResult(**base, status="raised", error=error), is_memory_error(exc)
        recorder = OpRecorder() if self.trace_ops and call.trace else None
        profiler = (
            CallProfiler(self.device, self.wall_s, self.began + self.wall_s)
            if call.profile
            else None
        )
        if profiler is not None:
            profiler.start()  # never raises: a profiler that did not start says why
        started = perf_counter()
        try:
            value = self._invoke(function, args, recorder, profiler)
        except SystemExit as exc:
            self._exit_like(exc)
        except BaseException as exc:
            ops = recorder.ops if recorder else ()
            error = describe(exc, self.filename)
            profile, problem = profiler.finish() if profiler is not None else (None, "")
            result = CallResult(
                **base,
                status="raised",
                error=error,
                ops=ops,
                profile=profile,
                profile_problem=problem,
            )
            return result, is_memory_error(exc)
        duration = max(perf_counter() - started, 0.0)
        profile, problem = profiler.finish() if profiler is not None else (None, "")
        ops = recorder.ops if recorder else ()
        tensor, error = from_torch(value) if issubclass(type(value), torch.Tensor) else (None, "")
        result = CallResult(
            **base,
            status="ok",
            returned_type=type_name(value),
            tensor=tensor,
            error=error,
            ops=ops,
            duration_s=duration,
            profile=profile,
            profile_problem=problem,
        )
        return result, False

    def _invoke(
        self,
        function: Any,
        args: list[torch.Tensor],
        recorder: OpRecorder | None,
        profiler: CallProfiler | None = None,
    ) -> Any:
        mark = profiler.mark if profiler is not None else None
        if mark is None:
            value = self._apply(function, args, recorder)
        else:  # the mark holds the learner's function alone: not the wait below
            with mark:
                value = self._apply(function, args, recorder)
        if self.device == "cuda":
            torch.cuda.synchronize()
        return value

    @staticmethod
    def _apply(function: Any, args: list[torch.Tensor], recorder: OpRecorder | None) -> Any:
        if recorder is None:
            return function(*args)
        with recorder:
            return function(*args)

    def serve_feed(self, turn: TurnSource, feed: int, reader: FrameReader) -> NoReturn:
        """A speed-trial turn (``sandbox.turns``): allocate the input buffers, load, then
        answer each ``go`` on ``feed`` with where the result lies, until the worker ends it.
        The worker holds this process stopped between calls and reads the result itself."""
        self.source, self.filename = turn.source, turn.filename
        self._redirect_streams()
        torch.set_num_threads(self.threads)
        linux.keep_freed_memory()
        threads_only = seccomp.build(threads_only=True)
        if threads_only is not None:  # no process of its own, so stopping this one stops all
            threads_only.install()
        # zeros, not empty: every page is touched now, not inside a timed call
        buffers = [torch.zeros(s.shape, dtype=DTYPES[s.dtype]) for s in turn.inputs]
        if not self._load():
            self._finish(0)
        self._send({"kind": "loaded", "buffers": [b.data_ptr() for b in buffers]})
        function = self.module.__dict__.get(turn.function, _MISSING)
        while (frame := framing.read_frame(feed, reader)) is not None:
            nonce = decode_go(frame[0])
            if not nonce:  # the worker has read the last result: free it, outside the clock
                self.kept = None
                self._send({"kind": "released"})
                continue
            # the result stays alive in self.kept until the worker has read it
            answer, memory, self.kept = self._held_call(function, turn.function, buffers, nonce)
            self._send(encode_answer(answer) | {"memory": memory})
        self._finish(0)

    def _held_call(
        self, function: Any, name: str, buffers: list[torch.Tensor], nonce: str
    ) -> tuple[Answer, bool, torch.Tensor | None]:
        if function is _MISSING or not callable(function):
            return Answer(nonce, "raised", error=f"{name} is not defined"), False, None
        try:
            args = buffers if self.device == "cpu" else [b.to(self.device) for b in buffers]
            value = self._invoke(function, args, None)
        except SystemExit as exc:
            self._exit_like(exc)
        except BaseException as exc:
            return (
                Answer(nonce, "raised", error=describe(exc, self.filename)),
                (is_memory_error(exc)),
                None,
            )
        if not issubclass(type(value), torch.Tensor):
            error = f"returned {type_name(value)}, not a tensor"
            return Answer(nonce, "raised", error=error), False, None
        tensor, error = dense_on_host(value)  # a CUDA run's result is copied to the host here
        if tensor is None:
            return Answer(nonce, "raised", error=error), False, None
        shape = TensorShape(NAMES[tensor.dtype], tuple(tensor.shape))
        return Answer(nonce, "returned", tensor.data_ptr(), shape), False, tensor

    def _send(self, header: dict[str, Any], payload: bytes = b"") -> None:
        framing.write_frame(self.out, header, payload)

    @staticmethod
    def _redirect_streams() -> None:
        """Fresh text streams on fds 1 and 2 (the capped pipes), line-buffered."""
        for number, name in ((1, "stdout"), (2, "stderr")):
            stream = open(  # noqa: SIM115  # lives until the job exits
                number, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False
            )
            setattr(sys, name, stream)

    def _exit_like(self, exc: SystemExit) -> NoReturn:
        """End the process as ``sys.exit`` would have, so the verdict says "exited"."""
        code = exc.code
        if code is None:
            self._finish(0)
        if isinstance(code, int):
            self._finish(code & 0xFF)
        try:
            print(code, file=sys.stderr)
        finally:
            self._finish(1)

    @staticmethod
    def _flush() -> None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):  # the learner may have broken the stream
                stream.flush()

    def _finish(self, code: int) -> NoReturn:
        self._flush()
        os._exit(code)
