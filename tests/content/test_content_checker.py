"""check_content: one broken thing in a small directory gives exactly one located problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.content import ContentError, check_content, load_content
from tests.content.fixture_dir import SECOND_QUEST, ContentDir

XP_HINT = "(fix: XP is a whole number above 0, e.g. xp: 20)"


def test_fixture_is_clean(content_dir: ContentDir) -> None:
    assert content_dir.report() == []


# --- schema violations: field path, line of that field, a hint --------------------------


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "xp: 10",
            "xp: 0",
            f"quests/first.yaml:12: `tasks[0].xp` should be greater than 0 (got 0) {XP_HINT}",
        ),
        (
            "xp: 10",
            "xp: ten",
            "quests/first.yaml:12: `tasks[0].xp` should be a valid integer (got 'ten') "
            "(fix: write a whole number without quotes, e.g. 20)",
        ),
        (
            "    interface:\n      - softmax(x)\n",
            "    interface: []\n",
            "quests/first.yaml:15: `tasks[0].interface` must list at least 1 item "
            "(fix: leave `interface` out to take the grader's functions, or list them all, "
            'e.g. interface: ["f(A, B)"])',
        ),
        (
            '        answers: ["1"]\n',
            "",
            "quests/first.yaml:23: missing required field `tasks[1].questions[0].answers` "
            '(fix: list every accepted answer, synonyms too, e.g. answers: ["(4, 128, 128)"])',
        ),
        (
            "    xp: 5\n",
            "    xp: 5\n    xpp: 6\n",
            "quests/first.yaml:21: unknown field `tasks[1].xpp` (fix: did you mean `xp`?)",
        ),
        (
            "kind: quiz",
            "kind: essay",
            "quests/first.yaml:19: `tasks[1].kind` is 'essay', not a task kind "
            "(fix: use one of: build, quiz, exercise, reading)",
        ),
        (
            "    kind: quiz\n",
            "",
            "quests/first.yaml:17: missing required field `tasks[1].kind` "
            "(fix: give the task a kind: build, quiz, exercise, reading)",
        ),
        (
            "title: First",
            "title: 2024",
            "quests/first.yaml:2: `title` should be a valid string (got 2024) "
            "(fix: write text; quote it if YAML reads it as a number, date or yes/no)",
        ),
        (
            "summary: Hello.\n",
            "",
            "quests/first.yaml:1: missing required field `summary` (fix: write a Markdown summary)",
        ),
        (
            "id: build-it",
            "id: Build It",
            "quests/first.yaml:9: `tasks[0].id`: `Build It` is not a slug "
            "(fix: use lowercase letters, digits and hyphens, e.g. go-brrrr)",
        ),
        (
            "phase: basics\n",
            "phase: basics\ndays: 0\n",
            "quests/first.yaml:4: `days` should be greater than or equal to 1 (got 0) "
            "(fix: days is a whole number, at least 1 (the default))",
        ),
        (
            "readings:\n  - ref: intro\n    note: read it\n",
            "readings: intro\n",
            "quests/first.yaml:5: `readings` should be a list (got 'intro') "
            "(fix: write a YAML list: one `- item` per line, or [a, b])",
        ),
        (
            "- softmax(x)",
            "- soft max",
            "quests/first.yaml:16: `tasks[0].interface[0]`: `soft max` is not a function "
            'signature (fix: write it like "matmul_loops(A, B) -> Tensor")',
        ),
        (
            'answers: ["1"]',
            'answers: ["one"]\n        tolerance: 0.01',
            "quests/first.yaml:23: `tasks[1].questions[0]`: answer `one` is not a number but "
            "the question has a tolerance (fix: write numbers like 1e12 or 2.5, or drop tolerance)",
        ),
    ],
)
def test_quest_schema_problem(content_dir: ContentDir, old: str, new: str, expected: str) -> None:
    content_dir.edit("first.yaml", old, new)
    assert content_dir.report() == [expected]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "kind: post",
            "kind: blog",
            "quests/library.yaml:5: `entries[0].kind` should be 'book', 'course', 'post', "
            "'podcast', 'video', 'reference', 'repo' or 'exercises' (got 'blog') "
            "(fix: use one of the listed kinds)",
        ),
        (
            "cost: free",
            "cost: cheap",
            "quests/library.yaml:7: `entries[0].cost` should be 'free', 'paid' or "
            "'free online, print paid' (got 'cheap') (fix: use one of the listed costs)",
        ),
        (
            "https://example.com/intro",
            "example.com/intro",
            "quests/library.yaml:6: `entries[0].url`: `example.com/intro` is not an http(s) "
            "link (fix: use a full link starting with https://)",
        ),
        (
            "authors: [Ann]",
            "authors: []",
            "quests/library.yaml:4: `entries[0].authors` must list at least 1 item "
            "(fix: list at least one author)",
        ),
    ],
)
def test_library_schema_problem(content_dir: ContentDir, old: str, new: str, expected: str) -> None:
    content_dir.edit("library.yaml", old, new)
    assert content_dir.report() == [expected]


def test_problems_in_several_files_are_all_reported(content_dir: ContentDir) -> None:
    content_dir.edit("first.yaml", "xp: 10", "xp: 0")
    content_dir.edit("library.yaml", "kind: post", "kind: blog")
    content_dir.add_second_quest(SECOND_QUEST.replace("xp: 1", "xp: -1"))
    assert [(content_dir.relative(p.file), p.line) for p in content_dir.problems()] == [
        ("quests/first.yaml", 12),
        ("quests/library.yaml", 5),
        ("quests/second.yaml", 10),
    ]


def test_schema_invalid_quest_still_counts_as_existing(content_dir: ContentDir) -> None:
    """The map lists `first`; its bad XP must not also produce "unknown quest"."""
    content_dir.edit("first.yaml", "xp: 10", "xp: -1")
    assert len(content_dir.problems()) == 1


# --- cross-references ------------------------------------------------------------------


def test_unknown_reading_suggests_the_close_id(content_dir: ContentDir) -> None:
    content_dir.edit("first.yaml", "ref: intro", "ref: intor")
    assert content_dir.report() == [
        "quests/first.yaml:6: unknown reading `intor` "
        "(fix: did you mean `intro`? otherwise add `intor` to library.yaml)"
    ]


def test_unknown_grader(content_dir: ContentDir) -> None:
    content_dir.edit("first.yaml", "grader: stable_softmax", "grader: no_such_grader")
    assert content_dir.report() == [
        "quests/first.yaml:14: unknown grader `no_such_grader` "
        "(fix: fix the id, or add the grader to graders/tasks/)"
    ]


def test_unknown_prerequisite(content_dir: ContentDir) -> None:
    content_dir.edit("first.yaml", "phase: basics\n", "phase: basics\nprerequisite: zeroth\n")
    assert content_dir.report() == [
        "quests/first.yaml:4: unknown prerequisite quest `zeroth` "
        "(fix: fix the id, or write a quest with that id)"
    ]


def test_prerequisite_cycle_is_reported_once(content_dir: ContentDir) -> None:
    content_dir.add_second_quest(
        SECOND_QUEST.replace("phase: basics\n", "phase: basics\nprerequisite: first\n")
    )
    content_dir.edit("first.yaml", "phase: basics\n", "phase: basics\nprerequisite: second\n")
    assert content_dir.report() == [
        "quests/first.yaml:4: prerequisite cycle: first -> second -> first "
        "(fix: remove one `prerequisite` so the on-ramps form a chain)"
    ]


def test_prerequisite_on_itself_is_a_cycle(content_dir: ContentDir) -> None:
    content_dir.edit("first.yaml", "phase: basics\n", "phase: basics\nprerequisite: first\n")
    assert [p.message for p in content_dir.problems()] == ["prerequisite cycle: first -> first"]


def test_prerequisite_chain_is_fine(content_dir: ContentDir) -> None:
    content_dir.add_second_quest(
        SECOND_QUEST.replace("phase: basics\n", "phase: basics\nprerequisite: first\n")
    )
    assert content_dir.report() == []


def test_duplicate_library_id(content_dir: ContentDir) -> None:
    content_dir.edit(
        "library.yaml",
        "    tags: [basics]\n",
        "    tags: [basics]\n  - id: intro\n    title: Again\n    authors: [Bob]\n"
        "    kind: book\n    url: https://example.com/b\n    cost: paid\n    why: Dup.\n"
        "    tags: []\n",
    )
    assert content_dir.report() == [
        "quests/library.yaml:10: duplicate library id `intro` (first at line 2) "
        "(fix: make each library id unique, or remove the repeat)"
    ]


def test_duplicate_quest_id_across_files(content_dir: ContentDir) -> None:
    """Files are read in path order; the later one is the duplicate."""
    content_dir.write("later.yaml", SECOND_QUEST.replace("id: second", "id: first"))
    assert content_dir.report() == [
        "quests/later.yaml:1: duplicate quest id `first` (also in quests/first.yaml:1) "
        "(fix: give each quest its own id)"
    ]


def test_duplicate_task_id(content_dir: ContentDir) -> None:
    content_dir.edit("first.yaml", "id: quiz-it", "id: build-it")
    assert content_dir.report() == [
        "quests/first.yaml:17: duplicate task id `build-it` (first at line 9) "
        "(fix: make each task id unique, or remove the repeat)"
    ]


def test_duplicate_question_id(content_dir: ContentDir) -> None:
    content_dir.edit(
        "first.yaml",
        '        answers: ["1"]\n',
        '        answers: ["1"]\n      - id: one\n        prompt: Again?\n        answers: ["2"]\n',
    )
    assert content_dir.report() == [
        "quests/first.yaml:26: duplicate question id `one` (first at line 23) "
        "(fix: make each question id unique, or remove the repeat)"
    ]


def test_reading_cited_twice_in_one_quest(content_dir: ContentDir) -> None:
    content_dir.edit(
        "first.yaml", "    note: read it\n", "    note: read it\n  - ref: intro\n    note: again\n"
    )
    assert content_dir.report() == [
        "quests/first.yaml:8: duplicate reading `intro` (first at line 6) "
        "(fix: cite each reading once)"
    ]


def test_unknown_phase(content_dir: ContentDir) -> None:
    content_dir.edit("first.yaml", "phase: basics", "phase: advanced")
    assert content_dir.report() == [
        "quests/first.yaml:3: unknown phase `advanced` (fix: use a phase id from map.yaml: basics)"
    ]


def test_phase_differs_from_map(content_dir: ContentDir) -> None:
    content_dir.edit(
        "map.yaml",
        "      - first\n",
        "      - first\n  - id: later\n    title: Later\n    quests: []\n",
    )
    content_dir.edit("first.yaml", "phase: basics", "phase: later")
    assert content_dir.report() == [
        "quests/first.yaml:3: quest says phase `later` but map.yaml lists it under `basics` "
        "(fix: make the quest's `phase` and its place in map.yaml agree)"
    ]


def test_map_names_unknown_quest(content_dir: ContentDir) -> None:
    content_dir.edit("map.yaml", "      - first\n", "      - first\n      - ghost\n")
    assert content_dir.report() == [
        "quests/map.yaml:6: map lists unknown quest `ghost` "
        "(fix: add a quest file with id: ghost, or remove it from the map)"
    ]


def test_quest_missing_from_map(content_dir: ContentDir) -> None:
    content_dir.write("second.yaml", SECOND_QUEST)
    assert content_dir.report() == [
        "quests/second.yaml:1: quest `second` is not in map.yaml "
        "(fix: add `second` to the `quests:` list of phase `basics` in map.yaml)"
    ]


def test_quest_listed_twice_in_map(content_dir: ContentDir) -> None:
    content_dir.edit("map.yaml", "      - first\n", "      - first\n      - first\n")
    assert content_dir.report() == [
        "quests/map.yaml:6: duplicate map entry `first` (first at line 5) "
        "(fix: list each quest once; a quest belongs to one phase)"
    ]


def test_duplicate_phase_id(content_dir: ContentDir) -> None:
    content_dir.edit(
        "map.yaml",
        "      - first\n",
        "      - first\n  - id: basics\n    title: Again\n    quests: []\n",
    )
    assert content_dir.report() == [
        "quests/map.yaml:6: duplicate phase id `basics` (first at line 2) "
        "(fix: make each phase id unique, or remove the repeat)"
    ]


def test_library_entry_cited_by_no_quest_is_fine(content_dir: ContentDir) -> None:
    content_dir.edit(
        "first.yaml", "readings:\n  - ref: intro\n    note: read it\n", "readings: []\n"
    )
    assert content_dir.report() == []
    assert load_content(content_dir.path).cited_by == {"intro": ()}


# --- text that would ping --------------------------------------------------------------


@pytest.mark.parametrize(
    ("file", "old", "new", "expected"),
    [
        (
            "first.yaml",
            "title: First",
            "title: First @everyone",
            "quests/first.yaml:2: `title` would ping: it contains @everyone",
        ),
        (
            "first.yaml",
            "summary: Hello.",
            "summary: Hello @here",
            "quests/first.yaml:4: `summary` would ping: it contains @here",
        ),
        (
            "first.yaml",
            "prompt: Do it.",
            "prompt: Do it, <@&123>.",
            "quests/first.yaml:13: `tasks[0].prompt` would ping: it contains <@&123>",
        ),
        (
            "library.yaml",
            "why: Start here.",
            "why: Ask <@42>.",
            "quests/library.yaml:8: `entries[0].why` would ping: it contains <@42>",
        ),
    ],
)
def test_mentions_are_problems(
    content_dir: ContentDir, file: str, old: str, new: str, expected: str
) -> None:
    content_dir.edit(file, old, new)
    assert content_dir.report() == [f"{expected} (fix: remove the mention; the bot never pings)"]


def test_email_like_text_is_not_a_mention(content_dir: ContentDir) -> None:
    content_dir.edit("first.yaml", "summary: Hello.", "summary: Mail ann@example.com, see <#12>.")
    assert content_dir.report() == []


# --- files and YAML --------------------------------------------------------------------


def test_yaml_syntax_error_has_line_and_column(content_dir: ContentDir) -> None:
    content_dir.add_second_quest("id: second\n  title: Second\n")
    assert content_dir.report() == [
        "quests/second.yaml:2:8: mapping values are not allowed here "
        "(fix: check indentation, colons and quoting at this spot)"
    ]


def test_duplicate_key_in_one_file(content_dir: ContentDir) -> None:
    content_dir.edit("first.yaml", "title: First\n", "title: First\ntitle: Again\n")
    assert content_dir.report() == [
        "quests/first.yaml:3: duplicate key `title` (first at line 2) "
        "(fix: keep one of them; YAML would silently use only the last)"
    ]


def test_duplicate_key_nested_names_its_place(content_dir: ContentDir) -> None:
    content_dir.edit("first.yaml", "    xp: 5\n", "    xp: 5\n    xp: 6\n")
    assert [p.message for p in content_dir.problems()] == [
        "duplicate key `xp` in tasks[1] (first at line 20)"
    ]


def test_empty_quest_file(content_dir: ContentDir) -> None:
    content_dir.write("second.yaml", "# nothing yet\n")
    assert content_dir.report() == [
        "quests/second.yaml:1: file is empty (fix: write the YAML content or delete the file)"
    ]


def test_top_level_list_instead_of_mapping(content_dir: ContentDir) -> None:
    content_dir.write("second.yaml", "- id: second\n")
    assert content_dir.report() == [
        "quests/second.yaml:1: the file should be a mapping of fields (got a list) "
        "(fix: write `field: value` lines here)"
    ]


def test_aliases_are_refused_without_cascading(content_dir: ContentDir) -> None:
    content_dir.edit("first.yaml", "title: First\n", "title: &t First\nfoo: *t\n")
    assert content_dir.report() == [
        "quests/first.yaml:3: YAML aliases (*name) are not supported "
        "(fix: write the value out in full)"
    ]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "library.yaml",
            "quests/library.yaml: file is missing "
            "(fix: create it with `entries:`, one item per reading)",
        ),
        (
            "map.yaml",
            "quests/map.yaml: file is missing "
            "(fix: create it with `phases:`, each listing its quest ids in order)",
        ),
    ],
)
def test_missing_index_file(content_dir: ContentDir, name: str, expected: str) -> None:
    (content_dir.path / name).unlink()
    assert content_dir.report() == [expected]


def test_missing_directory(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    assert [str(p) for p in check_content(missing)] == [
        f"{missing}: does not exist (fix: a content directory holds library.yaml, map.yaml "
        "and one YAML file per quest, side by side)"
    ]


def test_non_utf8_file(content_dir: ContentDir) -> None:
    (content_dir.path / "second.yaml").write_bytes(b"id: \xff\n")
    assert [(content_dir.relative(p.file), p.line, p.message) for p in content_dir.problems()] == [
        ("quests/second.yaml", 1, "not UTF-8 text (invalid start byte)")
    ]


def test_dot_files_are_not_quests(content_dir: ContentDir) -> None:
    content_dir.write(".cache/junk.yaml", "not: [valid")
    assert content_dir.report() == []


# --- load_content ----------------------------------------------------------------------


def test_load_content_raises_with_every_problem(content_dir: ContentDir) -> None:
    content_dir.edit("first.yaml", "xp: 10", "xp: 0")
    content_dir.edit("map.yaml", "      - first\n", "      - first\n      - ghost\n")
    with pytest.raises(ContentError) as raised:
        load_content(content_dir.path)
    assert [(content_dir.relative(p.file), p.line) for p in raised.value.problems] == [
        ("quests/first.yaml", 12),
        ("quests/map.yaml", 6),
    ]
    assert "2 content problems" in str(raised.value)


def test_loaded_content_is_ordered_by_map(content_dir: ContentDir) -> None:
    content_dir.write("aaa.yaml", SECOND_QUEST)  # sorts first on disk, second in the map
    content_dir.edit("map.yaml", "      - first\n", "      - first\n      - second\n")
    content = load_content(content_dir.path)
    assert [q.id for q in content.quests] == ["first", "second"]
    assert [p.id for p in content.phases] == ["basics"]
    assert content.phase_of("second").id == "basics"
    assert content.cited_by == {"intro": ("first",)}


def test_loaded_content_is_read_only(content_dir: ContentDir) -> None:
    content = load_content(content_dir.path)
    with pytest.raises(TypeError):
        content.library["x"] = content.library["intro"]  # type: ignore[index]
    with pytest.raises(ValueError, match="frozen"):
        content.quests[0].title = "Changed"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("speed", "expected"),
    [
        ("{function: softmax, reference: softmax_rows}", None),
        (
            "{function: softmax, reference: torch_softmax}",
            "quests/first.yaml:17: `tasks[0].speed.reference`: `torch_softmax` is not a speed "
            "reference (fix: speed references are: attention_naive, cumsum_mask, "
            "decode_step, gelu_bias_eager, softmax_rows)",
        ),
        (
            "{function: soft_max, reference: softmax_rows}",
            "quests/first.yaml:9: `tasks[0]`: speed.function `soft_max` is not in the interface "
            "(fix: race one of: softmax)",
        ),
    ],
)
def test_a_speed_ranked_task_names_a_known_reference_and_one_of_its_functions(
    content_dir: ContentDir, speed: str, expected: str | None
) -> None:
    content_dir.edit(
        "first.yaml", "      - softmax(x)\n", f"      - softmax(x)\n    speed: {speed}\n"
    )
    assert content_dir.report() == ([expected] if expected else [])
