"""Fingerprints of solutions (``bot.similarity.fingerprints``): normalization, k-grams,
winnowing and the Jaccard index, against expectations worked out by hand; and the measurement
on the graders' catalogue (``tests.similarity_catalogue``) that chose K, W and the threshold."""

from __future__ import annotations

import hashlib
import json
import statistics
import time

import pytest

from bot.similarity import fingerprints as fp
from bot.similarity.fingerprints import (
    MIN_TOKENS,
    THRESHOLD,
    K,
    W,
    fingerprints,
    jaccard,
    kgram_hashes,
    normalize,
    segments,
    similarity,
    solution_source,
    winnow,
)
from graders.registry import registry
from tests.similarity_catalogue import TaskFigures, measure, rename_and_reorder


def words(text: str) -> list[str]:
    return text.split()


def test_names_literals_comments_and_layout_are_normalized() -> None:
    source = (
        "total = len(xs)  # how many\nif total > 0:\n    print(f'{total} items', xs.shape[1])\n"
    )
    assert normalize(source) == words(
        "V = len ( V ) ; if V > L : ; { print ( L , V . shape [ L ] ) ; }"
    )


def test_renaming_and_reformatting_change_nothing() -> None:
    first = "def f(a, b):\n    # sum\n    return a+b\n"
    second = "def f( x,\n       y ):\n    return x + y  # the same\n\n\n"
    assert normalize(first) == normalize(second)


def test_the_interface_signatures_are_left_out_and_helpers_kept() -> None:
    source = (
        "def attention(q, k,\n        v=None) -> int:\n    return q\n\n"
        "def helper(x):\n    return x\n"
    )
    assert normalize(source, ["attention"]) == (
        words("; { return V ; } def V ( V ) : ; { return V ; }")
    )


def test_each_top_level_statement_is_a_segment_of_its_own() -> None:
    source = "import torch\n\n@dec\ndef f(x):\n    if x:\n        return 1\n\nY = 2\n"
    assert segments(source) == [
        words("import V ;"),
        words("@ V ;"),
        words("def V ( V ) : ; { if V : ; { return L ; } }"),
        words("V = L ;"),
    ]


def test_a_source_that_does_not_tokenize_has_no_tokens() -> None:
    assert normalize('x = """never closed\n') == []


def test_kgram_hashes_are_blake2b_of_the_tokens_as_63_bit_integers() -> None:
    tokens = ["a", "b", "c", "d"]
    expected = int.from_bytes(hashlib.blake2b(b"a\x1fb\x1fc", digest_size=8).digest()) >> 1
    hashes = kgram_hashes(tokens, 3)
    assert hashes[0] == expected
    assert len(hashes) == 2
    assert all(0 <= h < 2**63 for h in hashes)
    assert kgram_hashes(["a", "b"], 3) == [
        int.from_bytes(hashlib.blake2b(b"a\x1fb", digest_size=8).digest()) >> 1
    ]


def test_winnowing_keeps_each_windows_minimum() -> None:
    # the example of Schleimer, Wilkerson and Aiken (2003), windows of 4
    hashes = [77, 74, 42, 17, 98, 50, 17, 98, 8, 88, 67, 39, 77, 74, 42, 17, 98]
    assert winnow(hashes, 4) == {17, 8, 39}
    assert winnow([5, 3], 4) == {5, 3}


def test_jaccard_by_hand() -> None:
    assert jaccard({1, 2, 3}, {2, 3, 4}) == pytest.approx(2 / 4)
    assert jaccard(set(), set()) == 0.0
    assert jaccard({1}, {1}) == 1.0


def _long(body_lines: int) -> str:
    lines = [f"    v{i} = torch.relu(v{i - 1} @ w{i}.T + b[{i}])" for i in range(1, body_lines)]
    return "import torch\n\ndef solve(v0, w, b):\n" + "\n".join(lines) + "\n    return v0\n"


def test_a_solution_under_the_minimum_has_no_fingerprints_and_is_never_in_a_pair() -> None:
    short = "def f(x):\n    return x.sum(dim=0) * 2\n"
    assert len(normalize(short)) < MIN_TOKENS
    assert fingerprints(short) == frozenset()
    assert similarity(short, short) is None
    long = _long(6)
    assert len(normalize(long)) >= MIN_TOKENS
    assert similarity(long, long) == 1.0


def test_reordered_functions_match_in_full() -> None:
    source = _long(6) + "\n\ndef other(a):\n    return [a[i] * 2 for i in range(len(a))]\n"
    assert similarity(source, rename_and_reorder(source, ("solve", "other"))) == 1.0


def test_a_notebook_is_read_as_its_code_cells() -> None:
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "source": ["x = 1\n"]}
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell]}
    source = solution_source(json.dumps(notebook).encode(), "ipynb")
    assert source is not None and "x = 1" in source
    assert solution_source(b"y = 2\n", "py") == "y = 2\n"
    assert solution_source(b"\xff\xfe", "py") is None
    assert solution_source(b"not json", "ipynb") is None


def test_the_chosen_parameters() -> None:
    """A common run of W + K - 1 normalized tokens is always found (the winnowing guarantee)."""
    assert (K, W, MIN_TOKENS, THRESHOLD) == (5, 4, 50, 0.85)
    assert fp.W + fp.K - 1 == 8


@pytest.fixture(scope="module")
def figures() -> dict[str, TaskFigures]:
    return {grader: measure(grader) for grader in sorted(registry())}


@pytest.mark.parametrize("grader", sorted(registry()))
def test_honest_styles_score_below_the_threshold_and_renamed_copies_above(
    figures: dict[str, TaskFigures], grader: str
) -> None:
    found = figures[grader]
    assert found.honest, "no honest pair long enough to measure"
    assert found.copies, "no solution long enough to copy"
    above = [(a, b, round(s, 3)) for a, b, s in found.honest if s >= THRESHOLD]
    assert above == []
    below = [(name, round(s, 3)) for name, s in found.copies if s < THRESHOLD]
    assert below == []


def test_fingerprinting_a_few_kb_is_well_under_20_ms_and_linear_in_size() -> None:
    """The budget is 20 ms added to a settlement for a typical solution (a few KB), linear up
    to the upload limit; ``bench/similarity.py`` measures it (about 1 ms per KB).  Held here
    at the budget itself for 4 KB (a loaded machine), and the cost per KB of 64 KB within 3× of
    that of 4 KB (a quadratic step would be 16×)."""
    from bench.similarity import every_solution, solution_of

    corpus = every_solution()

    def per_kb(size: int, runs: int) -> float:
        source = solution_of(size, corpus)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            fingerprints(source, ("decode_step",))
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1000 / (len(source) / 1024)

    small = per_kb(4_000, 9)
    assert small * 4 < 20, f"{small * 4:.1f} ms for 4 KB"
    assert per_kb(64_000, 3) < 3 * small
