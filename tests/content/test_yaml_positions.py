"""parse_yaml keeps a line for every data path and refuses what SafeLoader would hide."""

from __future__ import annotations

from bot.content import Problem
from bot.content.yaml_source import format_path, parse_yaml

TEXT = """\
id: q
tasks:
  - id: a
    xp: 1
  - id: b
    questions:
      - id: c
"""


def test_every_key_and_item_has_its_line() -> None:
    doc, problems = parse_yaml(TEXT, "q.yaml")
    assert problems == [] and doc is not None
    assert doc.data["tasks"][1]["questions"][0]["id"] == "c"
    assert doc.line_of(("id",)) == 1
    assert doc.line_of(("tasks", 0)) == 3
    assert doc.line_of(("tasks", 0, "xp")) == 4
    assert doc.line_of(("tasks", 1, "questions", 0, "id")) == 7


def test_missing_path_falls_back_to_nearest_parent() -> None:
    doc, _ = parse_yaml(TEXT, "q.yaml")
    assert doc is not None
    assert doc.line_of(("tasks", 1, "prompt")) == 5
    assert doc.line_of(("nothing",)) == 1


def test_syntax_error_points_at_line_and_column() -> None:
    doc, problems = parse_yaml("a: 1\nb: [1, 2\nc: 3\n", "bad.yaml")
    assert doc is None
    assert [(p.line, p.column) for p in problems] == [(3, 2)]


def test_tab_indentation_is_a_syntax_error() -> None:
    doc, problems = parse_yaml("a:\n\tb: 1\n", "tab.yaml")
    assert doc is None
    assert (problems[0].line, problems[0].column) == (2, 1)


def test_duplicate_keys_are_reported_where_they_repeat() -> None:
    doc, problems = parse_yaml("a: 1\nb:\n  c: 1\n  c: 2\na: 3\n", "dup.yaml")
    assert doc is not None
    assert problems == [
        Problem("dup.yaml", 4, "duplicate key `c` in b (first at line 3)", problems[0].hint),
        Problem("dup.yaml", 5, "duplicate key `a` (first at line 1)", problems[1].hint),
    ]


def test_unsafe_tags_are_refused() -> None:
    doc, problems = parse_yaml("a: !!python/object/apply:os.system [echo hi]\n", "evil.yaml")
    assert doc is None
    assert problems[0].line == 1 and "constructor" in problems[0].message


def test_recursive_alias_does_not_hang() -> None:
    doc, problems = parse_yaml("a: &x [*x]\n", "loop.yaml")
    assert doc is not None and doc.aliased
    assert [p.message for p in problems] == ["YAML aliases (*name) are not supported"]


def test_absurd_nesting_is_a_problem_not_a_crash() -> None:
    doc, problems = parse_yaml("[" * 5000 + "]" * 5000, "deep.yaml")
    assert doc is None
    assert [p.message for p in problems] == ["YAML is nested too deeply"]


def test_byte_order_mark_is_accepted() -> None:
    doc, problems = parse_yaml("\ufeffid: q\n", "bom.yaml")
    assert problems == [] and doc is not None and doc.data == {"id": "q"}


def test_multiple_documents_are_an_error() -> None:
    doc, problems = parse_yaml("a: 1\n---\nb: 2\n", "two.yaml")
    assert doc is None and problems[0].line == 2


def test_format_path() -> None:
    assert format_path(("tasks", 0, "questions", 2, "answers")) == "tasks[0].questions[2].answers"
    assert format_path(()) == "(top level)"


def test_problem_str() -> None:
    assert str(Problem("q.yaml", 3, "bad", "fix it")) == "q.yaml:3: bad (fix: fix it)"
    assert str(Problem("q.yaml", 3, "bad", "fix it", column=7)) == "q.yaml:3:7: bad (fix: fix it)"
    assert str(Problem("q.yaml", None, "gone", "add it")) == "q.yaml: gone (fix: add it)"
