"""inference-engine/paged-kv: the paged KV-cache gather graded for real in the sandbox,
its cases checked against a token-by-token gather written here, and the fixed cases
checked for the tables the prompt promises.

Learner code runs only inside ``sandbox``'s jobs, never in this process.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from bot.content.schema import BuildTask
from bot.worker.grade_job import SandboxRunner
from graders.base import Verdict
from graders.comparison import Case
from graders.registry import load_grader
from graders.tasks.paged_kv import PagedKv
from tests.graders.support import failing, grade_in_sandbox, load_quest

QUEST = "inference-engine"
TASK = f"{QUEST}/paged-kv"
CHECK = "gather_kv: correct results"
SOLUTIONS = Path(__file__).parent / "solutions" / QUEST

pytestmark = pytest.mark.usefixtures("one_thread")


def grade(zygote: SandboxRunner, name: str) -> Verdict:
    verdict, _ = grade_in_sandbox(zygote, PagedKv(), TASK, SOLUTIONS / name)
    return verdict


def by_hand(k_pages: torch.Tensor, v_pages: torch.Tensor, table: list[int], n: int) -> torch.Tensor:
    """Token t from block table[t // block_size], slot t % block_size, one at a time."""
    block_size = k_pages.shape[1]
    keys = [k_pages[table[t // block_size]][t % block_size] for t in range(n)]
    values = [v_pages[table[t // block_size]][t % block_size] for t in range(n)]
    return torch.stack([torch.stack(keys), torch.stack(values)])


def facts(case: Case) -> tuple[list[int], int, int, int, int]:
    """The case's table, seq_len, block_size, num_blocks and the blocks it needs."""
    k_pages, _, table, seq_len = case.args
    n, block_size = int(seq_len), k_pages.shape[1]
    return table.tolist(), n, block_size, k_pages.shape[0], -(-n // block_size)


def test_the_quest_names_the_grader_and_its_interface() -> None:
    task = load_quest(QUEST).task("paged-kv")
    assert isinstance(task, BuildTask)
    assert load_grader(task.grader).interface == task.function_names() == ("gather_kv",)
    for stated in (
        "(num_blocks, block_size, n_head, head_dim)",
        "(2, seq_len, n_head, head_dim)",
        "float32 or float16",
        "1-D int64",
        "0-d int64",
        "exactly",
        "/submit",
        "brrrbot grade FILE --task inference-engine/paged-kv",
    ):
        assert stated in task.prompt, stated


@pytest.mark.parametrize("seed", [0, 1, 28, 2**40 + 3])
def test_every_case_expects_the_token_by_token_gather(seed: int) -> None:
    cases = PagedKv().plan(seed, "cpu").expected["cases"]
    assert len(cases) == 12
    for case in cases:
        k_pages, v_pages, table, seq_len = case.args
        assert table.dtype == seq_len.dtype == torch.int64 and seq_len.dim() == 0
        assert k_pages.dtype == v_pages.dtype == case.expected.dtype
        assert (case.rtol, case.atol) == (0.0, 0.0)  # a gather is exact
        want = by_hand(k_pages, v_pages, table.tolist(), int(seq_len))
        assert torch.equal(case.expected, want), case.label


def test_the_fixed_cases_hold_every_table_the_prompt_promises() -> None:
    fixed = PagedKv().fixed_cases("cpu")
    assert not any(c.drawn for c in fixed)
    seen = [facts(c) for c in fixed]
    dtypes = {c.args[0].dtype for c in fixed}
    assert dtypes == {torch.float32, torch.float16}
    assert any(n % size for _, n, size, _, _ in seen)  # the last block partly filled
    assert any(n % size == 0 and n > size for _, n, size, _, _ in seen)  # a multiple
    assert any(n < size for _, n, size, _, _ in seen)
    for table, _, _, num_blocks, needed in seen:
        used, junk = table[:needed], table[needed:]
        assert junk and all(0 <= b < num_blocks for b in used)
        assert len(used) < 2 or used != sorted(used)  # out of order
        assert used != list(range(needed))  # never the contiguous blocks
    # junk of every kind past the needed entries: -1, another block, past the end
    junk = [(b, nb) for table, _, _, nb, needed in seen for b in table[needed:]]
    assert any(b == -1 for b, _ in junk) and any(0 <= b < nb for b, nb in junk)
    assert any(b >= nb for b, nb in junk)
    # right after a multiple of block_size: a readable block and one past the cache
    after = [(table[needed], nb) for table, n, size, nb, needed in seen if n % size == 0]
    assert any(0 <= b < nb for b, nb in after) and any(b >= nb for b, nb in after)
    # two tables on the very same pages share their first blocks (a common prefix)
    pairs = [
        (a, b)
        for i, a in enumerate(fixed)
        for b in fixed[i + 1 :]
        if a.args[0].shape == b.args[0].shape and torch.equal(a.args[0], b.args[0])
    ]
    assert any(facts(a)[0][:2] == facts(b)[0][:2] for a, b in pairs)
    # as many blocks as slots per block, so a block and a slot index swapped still index
    assert any(c.args[0].shape[0] == c.args[0].shape[1] for c in fixed)


def test_drawn_plans_share_a_prefix_between_two_sequences() -> None:
    for seed in range(10):
        cases = PagedKv().plan(seed, "cpu").expected["cases"]
        a, b = (c for c in cases if "sharing" in c.label and c.drawn)
        assert torch.equal(a.args[0], b.args[0]) and torch.equal(a.args[1], b.args[1])
        assert facts(a)[0][0] == facts(b)[0][0]


@pytest.mark.parametrize("name", ["paged_kv_correct.py", "paged_kv_correct_blocks.py"])
def test_correct_gathers_pass(zygote: SandboxRunner, name: str) -> None:
    verdict = grade(zygote, name)
    assert verdict.status == "passed", [c.message for c in verdict.checks if not c.passed]
    assert verdict.score == 1.0 and len(verdict.checks) == 1


#: each wrong file -> what its failing check must say
WRONG = {
    "paged_kv_wrong_full_block.py": (
        "expected shape (2, 10, 2, 3), got (2, 12, 2, 3)",
        "Likely cause: you returned every slot of the last block",
    ),
    "paged_kv_wrong_sorted.py": ("entries wrong", "Likely cause: your blocks are in increasing"),
    "paged_kv_wrong_whole_table.py": (
        "raised IndexError: index 9 is out of bounds for dimension 0 with size 8",
        "the entries after those are junk",  # the task's hint: no slip explains a raise
    ),
    "paged_kv_wrong_cat.py": (
        "expected shape (2, 10, 2, 3), got (20, 2, 3)",
        "Likely cause: keys and values are concatenated",
    ),
    "paged_kv_wrong_dtype.py": (
        "expected dtype float16, got float32",
        "Likely cause: the numbers are right but your result is float32 for float16 pages",
    ),
    "paged_kv_wrong_tuple.py": ("returned a tuple; build and return a torch.Tensor instead",),
    "paged_kv_wrong_list.py": ("returned a list; build and return a torch.Tensor instead",),
    "paged_kv_wrong_missing.py": ("gather_kv is not defined at the top level of your file",),
    "paged_kv_cheat_liar.py": ("entries wrong", "expected"),
}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_wrong_and_cheating_files_fail_saying_why(zygote: SandboxRunner, name: str) -> None:
    verdict = grade(zygote, name)
    assert verdict.status == "failed" and verdict.score == 0.0
    text = failing(verdict, CHECK)
    assert all(e in text for e in WRONG[name]), text


def test_the_whole_table_is_read_only_where_the_junk_is_out_of_range(
    zygote: SandboxRunner,
) -> None:
    """Cut to seq_len, the junk a whole-table read picks up is harmless where it is -1 or
    another sequence's block; it raises exactly on the cases whose junk is past the end."""
    verdict, result = grade_in_sandbox(
        zygote, PagedKv(), TASK, SOLUTIONS / "paged_kv_wrong_whole_table.py"
    )
    assert verdict.status == "failed"
    cases = PagedKv().fixed_cases("cpu")
    fixed_results = result.calls[: len(cases)]
    for case, call in zip(cases, fixed_results, strict=True):
        table, _, _, num_blocks, _ = facts(case)
        past_the_end = any(b >= num_blocks for b in table)
        assert (call.status == "raised") == past_the_end, case.label
