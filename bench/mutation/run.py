"""Mutation bench over the guard code (issue 26): cosmic-ray, one session per guarded module.

Each module in ``modules.toml`` is mutated only on its guard lines, and each mutant runs only
the tests that claim to guard it.  The sessions run in a copy of the checkout (the working
tree is never mutated), one mutant at a time.  A surviving mutant is either killed by a
better test or listed in ``equivalent.toml`` with the reason no test can tell it apart.

    python bench/mutation/run.py [module ...]      # all modules when none is named

Prints, per module: mutants, killed, survived, equivalent, score = killed / (mutants -
equivalent), and the session's wall time; then each unexplained survivor's diff.  Needs the
``bench`` extra (cosmic-ray).  Not part of CI: it takes tens of minutes.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import TestOutcome, WorkerOutcome, WorkResult

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
#: see modules.toml for why these are left out
EXCLUDED_OPERATORS = (
    r"core/ReplaceBinaryOperator_.*_(BitAnd|BitOr|BitXor|LShift|RShift|Pow|Mod|FloorDiv)$",
    r"core/ReplaceComparisonOperator_(Eq|NotEq|Lt|LtE|Gt|GtE)_(Is|IsNot)$",
    r"core/ReplaceComparisonOperator_(Eq|NotEq)_(Lt|LtE|Gt|GtE)$",
    r"core/ReplaceComparisonOperator_(Is|IsNot)_(Eq|NotEq|Lt|LtE|Gt|GtE)$",
    r"core/ReplaceUnaryOperator_.*_(Invert|UAdd)$",
)


@dataclass(frozen=True)
class Module:
    name: str
    path: str
    lines: tuple[str, ...]
    tests: tuple[str, ...]
    timeout_s: float


@dataclass
class Survivor:
    operator: str
    line: int
    source: str  # the original line, stripped: how equivalent.toml names a mutant
    diff: str


@dataclass
class Tally:
    mutants: int = 0
    killed: int = 0
    equivalent: int = 0
    survivors: list[Survivor] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # listed equivalents that did not survive
    wall_s: float = 0.0

    @property
    def score(self) -> float:
        judged = self.mutants - self.equivalent
        return self.killed / judged if judged else 1.0


def load_modules() -> list[Module]:
    table = tomllib.loads((HERE / "modules.toml").read_text())
    return [
        Module(name, spec["module"], tuple(spec["lines"]), tuple(spec["tests"]), spec["timeout_s"])
        for name, spec in table.items()
    ]


def load_equivalents() -> dict[str, list[dict[str, str]]]:
    """module name -> [{operator, line, reason, and optionally mutated}]: the mutants no test
    can tell apart.  ``mutated`` (the mutated line, stripped) picks one of several mutants an
    operator makes of one line (a number replaced up or down, one number of several)."""
    table = tomllib.loads((HERE / "equivalent.toml").read_text())
    for name, entries in table.items():
        for entry in entries:
            if not entry.get("reason", "").strip():
                raise SystemExit(f"equivalent.toml: {name}: {entry} has no reason")
    return table


def _key(entry: dict[str, str]) -> tuple[str, str, str]:
    return entry["operator"], entry["line"].strip(), entry.get("mutated", "").strip()


def _mutated_line(diff: str) -> str:
    """The line a mutant's diff puts in place of the original, stripped."""
    added = [
        line[1:]
        for line in diff.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
    return added[0].strip() if added else ""


def annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where the type annotations of ``source`` lie, as (start, end) (line, column) pairs."""
    spans = []
    for node in ast.walk(ast.parse(source)):
        annotations: list[ast.expr | None] = []
        if isinstance(node, ast.arg):
            annotations.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            annotations.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
        for annotation in filter(None, annotations):
            assert annotation.end_lineno is not None and annotation.end_col_offset is not None
            spans.append(
                (
                    (annotation.lineno, annotation.col_offset),
                    (annotation.end_lineno, annotation.end_col_offset),
                )
            )
    return spans


def skip_annotations(session: Path, source: str) -> None:
    """Mark the mutants inside type annotations skipped: every guarded module has
    ``from __future__ import annotations``, so no annotation is ever evaluated and no test
    could tell such a mutant from the code (``X | None`` made ``X + None``, four times over
    in every optional argument)."""
    if "from __future__ import annotations" not in source:
        return
    spans = annotation_spans(source)
    skipped = WorkResult(WorkerOutcome.SKIPPED, output="inside a type annotation")
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item in list(db.pending_work_items):
            (mutation,) = item.mutations
            start, end = tuple(mutation.start_pos), tuple(mutation.end_pos)
            if any(first <= start and end <= last for first, last in spans):
                db.set_result(item.job_id, skipped)


def copy_tree(destination: Path) -> None:
    """The checkout's tracked and untracked-but-not-ignored files (what the tests see)."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for relative in filter(None, listed):
        source = ROOT / relative
        if source.is_file():
            target = destination / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


#: plugins no guarded module's tests use; loading them costs 1.5 s of every mutant's run
UNUSED_PLUGINS = ("cacheprovider", "schemathesis", "hypothesispytest", "anyio")


def test_command(module: Module) -> str:
    pytest = [sys.executable, "-m", "pytest", "-x", "-q"]
    pytest += [arg for plugin in UNUSED_PLUGINS for arg in ("-p", f"no:{plugin}")]
    return shlex.join([*pytest, *module.tests])


def write_config(module: Module, path: Path) -> None:
    lines = ", ".join(f'"{spec}"' for spec in module.lines)
    excluded = ", ".join(f"'{pattern}'" for pattern in EXCLUDED_OPERATORS)
    path.write_text(
        "[cosmic-ray]\n"
        f'module-path = "{module.path}"\n'
        f"timeout = {module.timeout_s}\n"
        "excluded-modules = []\n"
        f"test-command = {json.dumps(test_command(module))}\n"
        '[cosmic-ray.distributor]\nname = "local"\n'
        f'[cosmic-ray.filters.line-filter.lines]\n"{module.path}" = [{lines}]\n'
        f"[cosmic-ray.filters.operators-filter]\nexclude-operators = [{excluded}]\n"
    )


def cosmic(tool: str, *args: str, cwd: Path) -> None:
    binary = Path(sys.executable).with_name(tool)
    subprocess.run([str(binary), *args], cwd=cwd, check=True, capture_output=True)


def run_module(module: Module, tree: Path, equivalents: list[dict[str, str]]) -> Tally:
    started = time.monotonic()
    baseline = subprocess.run(shlex.split(test_command(module)), cwd=tree, capture_output=True)
    if baseline.returncode != 0:
        raise SystemExit(f"{module.name}: the unmutated tests fail:\n{baseline.stdout.decode()}")
    config, session = tree / f"{module.name}.toml", tree / f"{module.name}.sqlite"
    write_config(module, config)
    cosmic("cosmic-ray", "init", str(config), str(session), cwd=tree)
    cosmic("cr-filter-operators", str(session), str(config), cwd=tree)
    cosmic("cr-filter-lines", "--config", str(config), str(session), cwd=tree)
    skip_annotations(session, (tree / module.path).read_text())
    cosmic("cosmic-ray", "exec", str(config), str(session), cwd=tree)
    source = (tree / module.path).read_text().splitlines()
    tally = Tally()
    unmatched = {_key(entry): entry for entry in equivalents}
    matched: set[tuple[str, str, str]] = set()
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item, result in db.completed_work_items:
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                continue
            (mutation,) = item.mutations
            tally.mutants += 1
            if result.worker_outcome != WorkerOutcome.NORMAL:
                raise SystemExit(f"{module.name}: {item.job_id}: {result.worker_outcome}")
            if result.test_outcome != TestOutcome.SURVIVED:
                tally.killed += 1
                continue
            line = mutation.start_pos[0]
            operator, original = mutation.operator_name, source[line - 1].strip()
            mutated = _mutated_line(result.diff or "")
            key = next(
                (
                    k
                    for k in ((operator, original, mutated), (operator, original, ""))
                    if k in unmatched
                ),
                None,
            )
            if key is not None:
                tally.equivalent += 1
                matched.add(key)
            else:
                tally.survivors.append(Survivor(operator, line, original, result.diff or ""))
    tally.stale = [
        f"{op} @ {text} {into}".rstrip()
        for op, text, into in unmatched
        if (op, text, into) not in matched
    ]
    tally.wall_s = time.monotonic() - started
    return tally


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help="module names from modules.toml")
    chosen = parser.parse_args().modules
    modules = [m for m in load_modules() if not chosen or m.name in chosen]
    equivalents = load_equivalents()
    started = time.monotonic()
    tallies: dict[str, Tally] = {}
    with tempfile.TemporaryDirectory(prefix="brrrbot-mutation-") as scratch:
        tree = Path(scratch)
        copy_tree(tree)
        # the copy's packages, not the checkout's (an editable install points there)
        os.environ["PYTHONPATH"] = str(tree)
        for module in modules:
            tally = run_module(module, tree, equivalents.get(module.name, []))
            tallies[module.name] = tally
            print(
                f"{module.name:<10} mutants {tally.mutants:>4}  killed {tally.killed:>4}  "
                f"survived {len(tally.survivors) + tally.equivalent:>3}  "
                f"equivalent {tally.equivalent:>3}  score {tally.score:6.1%}  "
                f"{tally.wall_s:7.1f} s",
                flush=True,
            )
    print(f"total wall time {time.monotonic() - started:.1f} s")
    for name, tally in tallies.items():
        for survivor in tally.survivors:
            print(f"\n{name}: survived {survivor.operator} line {survivor.line}\n{survivor.diff}")
        for stale in tally.stale:
            print(f"\n{name}: equivalent.toml lists a mutant that did not survive: {stale}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
