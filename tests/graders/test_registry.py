"""The registry finds every grader by walking graders/tasks/ and reads what each declares
without importing it; each grader's class is what its declaration says; a grader's old name
still grades the jobs queued under it."""

from __future__ import annotations

import dataclasses
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import graders.registry
from bot.jobs.job_spec import read_spec
from bot.worker.grade_job import SandboxRunner, grade_prepared
from bot.worker.job_loop import Ungradable, gradable_spec
from graders.declaration import Declaration, Signature, Speed
from graders.registry import (
    BadDeclaration,
    find,
    grader_names,
    load_grader,
    read_declaration,
    registry,
)
from graders.speed import REFERENCES
from sandbox.api import GiB, Limits, MiB
from tests.support import BUILD_TASK, REPO, SOLUTIONS, seed_spec

#: the graders there are, named as the quests name them
GRADERS = {
    "attention": "Attention",
    "bpe_merge": "BpeMerge",
    "count_flops": "CountFlops",
    "fused_pointwise": "FusedPointwise",
    "gpt2_block": "Gpt2Block",
    "int8_weights": "Int8Weights",
    "kv_cache_decode": "KvCacheDecode",
    "lora_linear": "LoraLinear",
    "matmul_three_ways": "MatmulThreeWays",
    "mlp_backward": "MlpBackward",
    "paged_kv": "PagedKv",
    "speculative_accept": "SpeculativeAccept",
    "stable_softmax": "StableSoftmax",
    "tensor_puzzles": "TensorPuzzles",
}


def test_every_grader_is_found_by_its_file_in_graders_tasks() -> None:
    assert grader_names() == set(GRADERS)
    for name, info in registry().items():
        assert info.module == f"graders.tasks.{name}" and info.class_name == GRADERS[name]


@pytest.mark.parametrize("name", sorted(GRADERS))
def test_what_the_bot_reads_is_what_the_grader_is(name: str) -> None:
    """The declaration read from the file's syntax is the module's own value, and the class
    takes its name, interface, limits and device from it."""
    info = registry()[name]
    module = importlib.import_module(f"graders.tasks.{name}")
    assert info.declaration == module.DECLARATION
    grader = load_grader(name)
    assert type(grader) is getattr(module, GRADERS[name])
    assert grader.declaration is module.DECLARATION
    assert grader.name == name
    assert grader.interface == info.interface == tuple(s.name for s in info.signatures)
    assert grader.limits == info.limits
    assert grader.needs_cuda == info.prefers_cuda
    # what the grader checks per function is about functions it declares
    assert set(getattr(grader, "forbidden", {})) <= set(grader.interface)
    assert set(getattr(grader, "hints", {})) <= set(grader.interface)
    if info.speed is not None:
        assert info.speed.reference in REFERENCES and info.speed.function in grader.interface


def test_the_declarations_state_the_limits_and_races_the_tasks_need() -> None:
    """Facts stated here, not read back from the code: only fused-gelu needs more than the
    default limits (torch.compile's first compiles) and a GPU; five tasks are speed-ranked, one
    with a batch trial."""
    fused = find("fused_pointwise")
    assert fused is not None and fused.prefers_cuda
    assert fused.limits == Limits(wall_s=60, cpu_s=60, memory_bytes=2 << 30, output_bytes=160 << 20)
    others = {info.limits for name, info in registry().items() if name != "fused_pointwise"}
    assert others == {Limits(wall_s=10, cpu_s=10, memory_bytes=2 << 30)}
    assert {name: info.speed for name, info in registry().items() if info.speed} == {
        "attention": Speed("attention", "attention_naive"),
        "fused_pointwise": Speed("fused_gelu_bias", "gelu_bias_eager"),
        "kv_cache_decode": Speed("decode_step", "decode_step", batch=16),
        "stable_softmax": Speed("softmax", "softmax_rows"),
        "tensor_puzzles": Speed("cumsum", "cumsum_mask"),
    }
    gpt2 = find("gpt2_block")
    assert gpt2 is not None and gpt2.signatures[1] == Signature(
        "causal_self_attention", ("x", "w_qkv", "b_qkv", "w_proj", "b_proj", "n_head")
    )


def test_reading_the_registry_imports_no_torch() -> None:
    script = (
        "import sys\nfrom graders.registry import registry, find\n"
        f"assert len(registry()) == {len(GRADERS)} and find('fused_pointwise').prefers_cuda\n"
        "print('torch' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"


GRADER_FILE = """\
raise SystemExit("the registry must never run a grader module")
from graders.declaration import Declaration, Speed
from sandbox.api import GiB, Limits, MiB

DECLARATION = Declaration(
    functions=("go(x, y) -> Tensor", "stop(x)"),
    limits=Limits(wall_s=30.0, memory_bytes=3 * GiB, output_bytes=2 * 80 * MiB),
    prefers_cuda=True,
    speed=Speed("go", "softmax_rows"),
)
"""


def test_a_grader_is_a_file_in_the_folder_read_without_running_it(tmp_path: Path) -> None:
    (tmp_path / "warp_drive.py").write_text(GRADER_FILE)
    (tmp_path / "_helpers.py").write_text("not a grader, and not even Python (")
    (tmp_path / "notes.txt").write_text("nor this")
    (info,) = registry(tmp_path).values()
    assert (info.name, info.module, info.class_name) == (
        "warp_drive",
        "graders.tasks.warp_drive",
        "WarpDrive",
    )
    assert info.declaration == Declaration(
        ("go(x, y) -> Tensor", "stop(x)"),
        Limits(wall_s=30.0, memory_bytes=3 * GiB, output_bytes=160 * MiB),
        prefers_cuda=True,
        speed=Speed("go", "softmax_rows"),
    )
    assert info.interface == ("go", "stop")
    assert info.signatures == (Signature("go", ("x", "y")), Signature("stop", ("x",)))


@pytest.mark.parametrize(
    ("declaration", "message"),
    [
        (
            "DECLARATION = Declaration(functions=tuple(NAMES))",
            "warp_drive.py:1: `tuple(NAMES)` is not a literal: write the declaration with "
            "strings, numbers, tuples, Declaration(...), Speed(...), Limits(...) and GiB, "
            "MiB, KiB",
        ),
        (
            "DECLARATION = Declaration(functions=('go(x)',), limits=Limits(wall_s=WALL))",
            "warp_drive.py:1: `WALL` is not a literal",
        ),
        (
            "DECLARATION = Declaration(functions=('go(x)',), speed=Speed('stop', 'softmax_rows'))",
            "warp_drive.py:1: speed races 'stop', which is not in ('go',)",
        ),
        (
            "DECLARATION = Declaration(functions=('go(x)', 'go(y)'))",
            "warp_drive.py:1: a grader declares its functions once each, got ('go', 'go')",
        ),
        ("DECLARATION = Declaration(functions=('go',))", "warp_drive.py:1: 'go' is not a"),
        ("DECLARATION = ('go(x)',)", "warp_drive.py: DECLARATION is not a Declaration(...)"),
        ("INTERFACE = Declaration(functions=('go(x)',))", "warp_drive.py: no top-level"),
    ],
)
def test_a_declaration_the_bot_cannot_read_is_refused_saying_where(
    tmp_path: Path, declaration: str, message: str
) -> None:
    path = tmp_path / "warp_drive.py"
    path.write_text(declaration + "\n")
    with pytest.raises(BadDeclaration) as raised:
        read_declaration(path)
    assert str(raised.value).startswith(message)


def test_an_unknown_grader_is_named_with_the_known_ones() -> None:
    with pytest.raises(KeyError, match="unknown grader 'nope'; known: attention, bpe_merge"):
        load_grader("nope")


def test_renamed_graders_point_at_graders_there_are() -> None:
    for old, new in graders.registry.RENAMED.items():
        assert old not in registry() and new in registry(), (old, new)


def test_a_stored_job_naming_a_grader_by_its_old_name_still_grades(
    zygote: SandboxRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job queued before a rename carries the old name: the worker accepts its stored spec
    and grades it with the grader that name now belongs to."""
    stored = seed_spec(BUILD_TASK, "solution.py", (SOLUTIONS / "correct.py").read_bytes())
    assert stored.grader == "matmul_three_ways"
    data = {**stored.to_json(), "grader": "matmul_by_hand"}  # as the database holds it
    with pytest.raises(Ungradable, match="needs grader `matmul_by_hand`, which the worker"):
        gradable_spec(read_spec(data))

    monkeypatch.setattr(graders.registry, "RENAMED", {"matmul_by_hand": "matmul_three_ways"})
    spec = gradable_spec(read_spec(data))  # as a claim parses it
    assert spec.grader == "matmul_by_hand"
    assert type(load_grader(spec.grader)).__name__ == "MatmulThreeWays"
    verdict = grade_prepared(spec, zygote)
    assert (verdict.task, verdict.status, verdict.score) == (BUILD_TASK, "passed", 1.0)
    assert dataclasses.replace(stored, grader="matmul_by_hand") == spec
