"""Timed runs: samples come back per call, validated, and never more than were asked for."""

from __future__ import annotations

import pytest

from bot.sandbox.api import MAX_TIMED_RUNS, Call, CallResult, SandboxResult
from bot.sandbox.client import Zygote
from bot.sandbox.codec import (
    ProtocolError,
    decode_request,
    decode_result,
    encode_request,
    encode_result,
)
from tests.sandbox.support import add_call, request

ADD = "def add(a, b):\n    return a + b\n"


def _timed(runs: int) -> Call:
    call, _ = add_call(3)
    return Call(call.function, call.args, call.label, timed_runs=runs)


def test_timed_runs_come_back_as_samples(sandbox: Zygote) -> None:
    result = sandbox.run(request(ADD, (_timed(5), add_call(4, "untimed")[0])))
    assert result.status == "ok"
    timed, untimed = result.calls
    assert len(timed.samples_s) == 5 and all(0 <= s < 1 for s in timed.samples_s)
    assert untimed.samples_s == ()


def test_a_failing_timed_run_leaves_the_result_and_drops_the_samples(sandbox: Zygote) -> None:
    source = (
        "calls = []\ndef add(a, b):\n    calls.append(1)\n    if len(calls) > 1:\n"
        "        raise RuntimeError('only once')\n    return a + b\n"
    )
    result = sandbox.run(request(source, (_timed(3),)))
    assert result.calls[0].status == "ok" and result.calls[0].tensor is not None
    assert result.calls[0].samples_s == ()


def test_timed_runs_round_trip_and_are_bounded() -> None:
    original = request(ADD, (_timed(7),))
    header, payload = encode_request(original)
    assert decode_request(header, payload).calls[0].timed_runs == 7
    header["calls"][0]["timed_runs"] = MAX_TIMED_RUNS + 1
    with pytest.raises(ProtocolError, match="timed_runs"):
        decode_request(header, payload)


def test_more_samples_than_runs_is_a_protocol_error() -> None:
    job = request(ADD, (_timed(2),))
    answer = CallResult("add", job.calls[0].label, "ok", "int", samples_s=(0.1, 0.1, 0.1))
    header, payload = encode_result(SandboxResult("ok", "ok", (answer,)))
    with pytest.raises(ProtocolError, match="more timing samples"):
        decode_result(header, payload, job)
