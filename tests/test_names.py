"""One name, one thing: below the front ends, no two modules or packages share a name.

A front end's module (a cog in ``bot/exts``, a route module in ``bot/http``, a command in
``bot/cli``) may share the name of the feature it fronts (``bot/exts/privacy.py`` fronts
``bot/progress/privacy.py``); two Discord-free modules of one name are two things a reader
must tell apart, as ``delivery_failures`` twice with different limits once were.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from tests.support import REPO

LAYERS = ("bot", "graders", "sandbox")
FRONT_ENDS = ("bot/exts", "bot/http", "bot/cli")


def names_below_the_front_ends(root: Path) -> dict[str, list[str]]:
    found: defaultdict[str, list[str]] = defaultdict(list)
    for layer in LAYERS:
        for path in sorted((root / layer).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if "__pycache__" in relative or relative.startswith(FRONT_ENDS):
                continue
            if path.name == "__init__.py":
                if path.parent != root / layer:
                    found[path.parent.name].append(path.parent.relative_to(root).as_posix())
            else:
                found[path.stem].append(relative)
    return found


def test_no_two_things_below_the_front_ends_share_a_name() -> None:
    shared = {n: where for n, where in names_below_the_front_ends(REPO).items() if len(where) > 1}
    assert not shared, shared


def test_a_second_module_of_one_name_is_found(tmp_path: Path) -> None:
    for path in ("bot/delivery/failures.py", "bot/presentation/failures.py", "bot/exts/x.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    (tmp_path / "graders").mkdir()
    (tmp_path / "sandbox").mkdir()
    found = names_below_the_front_ends(tmp_path)
    assert found["failures"] == ["bot/delivery/failures.py", "bot/presentation/failures.py"]
    assert "x" not in found
