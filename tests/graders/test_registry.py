"""The registry tells the torch-free bot what each grader is: it must say what the grader does."""

from __future__ import annotations

import pytest

from graders import REGISTRY, load_grader


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_the_registry_states_each_graders_interface_limits_and_device(name: str) -> None:
    info, grader = REGISTRY[name], load_grader(name)
    assert grader.name == name
    assert info.interface == tuple(grader.interface)
    assert info.limits == grader.limits
    assert info.prefers_cuda == grader.needs_cuda


def test_an_unknown_grader_is_named_with_the_known_ones() -> None:
    with pytest.raises(KeyError, match="unknown grader 'nope'; known: attention, bpe_merge"):
        load_grader("nope")
