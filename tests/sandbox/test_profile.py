"""A learner's call profiled inside a real job: what the profiler names, and what the trusted
side does with a profile the job made up."""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch

from sandbox.api import Call, CallResult, OpTime, SandboxResult
from sandbox.client import Zygote
from sandbox.codec import CLEAN_NAME_CHARS, MAX_PROFILE_OPS
from tests.sandbox.support import FAST, add_call, raw, reports, request, to_tensor

X = torch.randn(64, 16, generator=torch.Generator().manual_seed(27))

SOURCE = """
import torch
from torch.autograd.profiler import record_function

def chain(x):
    y = x * 2 + 1
    return torch.tanh(y)

def rows(x):
    out = torch.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] * 2
    return out

def whole(x):
    return x * 2

def labelled(x):
    with record_function("@everyone `evil`\\n"):
        return x + 1

def long_label(x):
    with record_function("@" * (1 << 20)):
        return x + 1

def half_then_raise(x):
    x * 2
    raise ValueError("after the multiplication")

def profiling(x):
    return torch.tensor([float(torch.autograd._profiler_enabled())])
"""


def profiled(function: str, label: str = "", **options: bool) -> Call:
    options.setdefault("profile", True)
    return Call(function, (raw(X),), label or function, trace=False, **options)


def run(zygote: Zygote, *calls: Call) -> SandboxResult:
    result = zygote.run(request(SOURCE, calls))
    assert (result.status, result.stderr) == ("ok", ""), result  # the profiler wrote nothing
    return result


def ops(call: CallResult) -> dict[str, OpTime]:
    assert call.profile is not None, call.profile_problem
    assert call.profile_problem == ""
    names = [op.name for op in call.profile]
    assert len(set(names)) == len(names)
    return {op.name: op for op in call.profile}


def top_level(call: CallResult) -> dict[str, int]:
    return {name: op.top_level for name, op in ops(call).items() if op.top_level}


def check_sane(call: CallResult) -> None:
    """What holds of any honest CPU profile of one call."""
    assert call.profile is not None
    assert 0 < len(call.profile) <= MAX_PROFILE_OPS
    assert [op.self_s for op in call.profile] == sorted(
        (op.self_s for op in call.profile), reverse=True
    )
    assert all(not op.kernel and 0 <= op.top_level <= op.count for op in call.profile)
    # one thread: the self times of what ran inside the call add up to less than the call
    assert 0 < sum(op.self_s for op in call.profile) <= call.duration_s


def test_an_eager_chain_shows_each_operator_it_calls(sandbox: Zygote) -> None:
    (chain,) = run(sandbox, profiled("chain")).calls
    assert chain.status == "ok"
    assert chain.tensor is not None
    assert torch.equal(to_tensor(chain.tensor), torch.tanh(X * 2 + 1))
    check_sane(chain)
    # x * 2, + 1, torch.tanh: three operators the source calls, each once, and nothing else
    # at its level (the rest, such as the scalars' conversion, runs inside them)
    assert top_level(chain) == {"aten::mul": 1, "aten::add": 1, "aten::tanh": 1}
    assert all(ops(chain)[name].count == 1 for name in ("aten::mul", "aten::add", "aten::tanh"))


def test_a_python_loop_shows_an_operator_per_row(sandbox: Zygote) -> None:
    loop, once = run(sandbox, profiled("rows"), profiled("whole")).calls
    assert loop.tensor is not None and torch.equal(to_tensor(loop.tensor), X * 2)
    check_sane(loop)
    # per row: x[i] and out[i] select, * 2 multiplies, out[i] = copies
    assert top_level(loop) == {
        "aten::empty_like": 1,
        "aten::select": 2 * 64,
        "aten::mul": 64,
        "aten::copy_": 64,
    }
    assert sum(top_level(loop).values()) >= 64
    assert top_level(once) == {"aten::mul": 1}  # the same work in one operator


def test_a_learners_label_comes_back_cleaned(sandbox: Zygote) -> None:
    labelled, long_label = run(sandbox, profiled("labelled"), profiled("long_label")).calls
    check_sane(labelled)
    label = ops(labelled)["?everyone ?evil?"]  # @ and backticks, then the line break
    assert (label.count, label.top_level) == (1, 1)
    # a label is no operator: what runs inside it still ran at the learner's own level
    assert top_level(labelled) == {"?everyone ?evil?": 1, "aten::add": 1}
    (longest,) = (op for op in long_label.profile or () if op.top_level and op.name != "aten::add")
    assert longest.name == "?" * (CLEAN_NAME_CHARS - 1) + "…"
    for call in (labelled, long_label):
        assert all("@" not in op.name and "`" not in op.name for op in call.profile or ())


def test_a_call_that_raises_keeps_its_profile(sandbox: Zygote) -> None:
    (call,) = run(sandbox, profiled("half_then_raise")).calls
    assert call.status == "raised"
    assert call.error.endswith("ValueError: after the multiplication")
    assert top_level(call) == {"aten::mul": 1}


def test_an_unprofiled_call_carries_no_profile_and_runs_no_profiler(sandbox: Zygote) -> None:
    plain, measured, again = run(
        sandbox,
        profiled("profiling", "plain", profile=False),
        profiled("profiling", "measured"),
        profiled("profiling", "again", profile=False),
    ).calls
    for call, enabled in ((plain, 0.0), (measured, 1.0), (again, 0.0)):
        assert call.tensor is not None and to_tensor(call.tensor).tolist() == [enabled]
    assert (plain.profile, plain.profile_problem) == (None, "")
    assert (again.profile, again.profile_problem) == (None, "")  # stopped after its call
    check_sane(measured)


def test_a_profile_too_big_to_sum_in_the_time_left_is_given_up(sandbox: Zygote) -> None:
    # the runner's own profiler, run by the learner with a deadline that leaves 50 ms
    source = """
import sys
from time import perf_counter
profiling = sys.modules["sandbox.profiling"]
def add(a, b):
    for left_s in (0.05, 60.0):
        profiler = profiling.CallProfiler("cpu", 10.0, perf_counter() + left_s)
        profiler.start()
        with profiler.mark:
            for _ in range(2000):  # 5 events each: too many to sum in 50 ms at 10 us each
                a.add(1)
        profile, problem = profiler.finish()
        print("summed", left_s, profile is not None, problem)
    return a + b
"""
    result = sandbox.run(request(source))
    assert result.status == "ok", result
    given_up, summed = reports(result.stdout, "summed")
    assert re.fullmatch(
        r"0\.05 False the profile failed: \d{5} events are too many to sum in the time left",
        given_up,
    )
    assert summed == "60.0 True "


def test_a_big_profile_gives_its_memory_back(sandbox: Zygote) -> None:
    source = """
import torch
def resident(x):
    with open("/proc/self/statm") as statm:
        return torch.tensor([int(statm.read().split()[1]) * 4096], dtype=torch.int64)
def loop(x):
    for _ in range(20_000):  # 100,000 events: kineto's stop alone takes 120 MB for them
        x.add(1)
    return x
"""
    calls = (
        profiled("resident", "before", profile=False),
        dataclasses.replace(profiled("loop"), args=(raw(torch.zeros(4)),)),
        profiled("resident", "after", profile=False),
    )
    result = sandbox.run(request(source, calls, dataclasses.replace(FAST, wall_s=20.0, cpu_s=20.0)))
    assert result.status == "ok", result
    before, loop, after = result.calls
    assert ops(loop)["aten::add"].count == 20_000
    assert before.tensor is not None and after.tensor is not None
    grown = int(to_tensor(after.tensor)[0]) - int(to_tensor(before.tensor)[0])
    assert grown < 40 << 20, grown  # 120 MB and more while the profile was read


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_cuda_chain_shows_its_kernels(sandbox: Zygote) -> None:
    result = sandbox.run(request(SOURCE, (profiled("chain"),), device="cuda"))
    assert (result.status, result.device) == ("ok", "cuda"), result.message + result.stderr
    (chain,) = result.calls
    assert chain.profile is not None, chain.profile_problem
    kernels = [op for op in chain.profile if op.kernel]
    assert sum(op.count for op in kernels) >= 3  # x * 2, + 1, tanh: a kernel each
    assert all(op.top_level == 0 and op.self_s > 0 for op in kernels)
    assert all(top_level(chain).get(name) == 1 for name in ("aten::mul", "aten::add", "aten::tanh"))
    # the runner's wait for the GPU after the call is not the learner's
    assert not [op.name for op in chain.profile if "Synchronize" in op.name]


# -- a learner that breaks the profiler: the call stands, the profile says why -------------

BREAK_THE_PROFILER = {
    "stopped": (
        "print('breaking', flush=True)\ntorch.autograd._disable_profiler()\n",
        # the learner's own stop ended the profile before the call did
        "the profile failed: the call's mark is missing from the profile",
    ),
    "summary-raises": (
        "def boom(*args):\n    raise OSError('no summary')\n"
        "sys.modules['sandbox.profiling'].summarise = boom\nprint('breaking', flush=True)\n",
        "the profile failed: OSError: no summary",
    ),
}


@pytest.mark.parametrize("trick", sorted(BREAK_THE_PROFILER))
def test_a_learner_who_breaks_the_profiler_still_gets_the_call(sandbox: Zygote, trick: str) -> None:
    code, problem = BREAK_THE_PROFILER[trick]
    body = "".join(f"    {line}\n" for line in code.splitlines())
    source = f"import sys, torch\ndef add(a, b):\n{body}    return a + b\n"
    call, expected = add_call(3)
    result = sandbox.run(request(source, (dataclasses.replace(call, profile=True),)))
    assert result.status == "ok"
    assert result.stdout.splitlines() == ["breaking"]  # the trick ran
    (only,) = result.calls
    assert only.tensor is not None and torch.equal(to_tensor(only.tensor), expected)
    assert only.profile is None
    assert only.profile_problem.startswith(problem)


# -- a learner that makes up the profile: refused by the trusted side ---------------------

#: replaces the job's result frames with ``JUNK`` as the profile of every call, and lets the
#: job write NaN (its own encoder refuses to)
FORGE = """
import json, sys
def forge(junk):
    runner, framing = sys.modules["sandbox.job_runner"], sys.modules["sandbox.framing"]
    framing.encode_header = lambda header: json.dumps(header).encode()
    real = runner.call_to_json
    def forged(result):
        return real(result) | {"profile": junk, "profile_problem": ""}
    runner.call_to_json = forged
    print("forging", flush=True)
def entry(name="aten::mul", self_s=1e-6):
    return {"name": name, "self_s": self_s, "count": 1, "top_level": 1, "kernel": False}
"""

JUNK = {
    "ten-thousand-ops": (
        "[entry(f'op{i}') for i in range(10_000)]",
        True,
        "a profile of more than 48 entries",
    ),
    "nan": ("[entry(self_s=float('nan'))]", True, "field 'self_s' is not a valid duration"),
    "negative": ("[entry(self_s=-1.0)]", True, "field 'self_s' is not a valid duration"),
    "huge": ("[entry(self_s=1e300)]", True, "field 'self_s' is not a valid duration"),
    "over-the-wall-limit": (
        f"[entry(self_s={FAST.wall_s + 1})]",
        True,
        "field 'self_s' is not a valid duration",
    ),
    "megabyte-name": ("[entry('@' * (1 << 20))]", True, "frame header of "),
    "on-an-unprofiled-call": ("[entry()]", False, "a profile came with a call that did not ask"),
}


@pytest.mark.parametrize("junk", sorted(JUNK))
def test_a_made_up_profile_is_a_protocol_error(sandbox: Zygote, junk: str) -> None:
    made_up, asked, reason = JUNK[junk]
    source = FORGE + f"def add(a, b):\n    forge({made_up})\n    return a + b\n"
    call = dataclasses.replace(add_call(4)[0], profile=asked)
    result = sandbox.run(request(source, (call,)))
    assert result.stdout.splitlines() == ["forging"]  # the forgery ran
    assert result.status == "protocol_error"
    assert result.message.startswith("the job's reply was malformed: ")
    assert reason in result.message
    assert all(call.profile is None and call.status == "skipped" for call in result.calls)
