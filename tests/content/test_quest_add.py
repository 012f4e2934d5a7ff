"""check_quest_text: one quest file validated against loaded content, as /admin quest-add does."""

from __future__ import annotations

import pytest

from bot.content import BuildTask, Content, check_quest_text, load_content
from bot.content.schema import TaskSpeed
from tests.content.fixture_dir import FIRST_QUEST, SECOND_QUEST, ContentDir


@pytest.fixture
def content(content_dir: ContentDir) -> Content:
    return load_content(content_dir.path)


def report(text: str, content: Content) -> list[str]:
    quest, problems = check_quest_text(text, "upload.yaml", content)
    assert (quest is None) == bool(problems)
    return [str(p) for p in problems]


def test_valid_new_quest(content: Content) -> None:
    quest, problems = check_quest_text(SECOND_QUEST, "second.yaml", content)
    assert problems == []
    assert quest is not None and quest.id == "second"
    assert "second" not in content.quests_by_id  # the caller decides what to do with it


def test_replacing_an_existing_quest_is_allowed(content: Content) -> None:
    quest, problems = check_quest_text(FIRST_QUEST.replace("Hello.", "Hi."), "f.yaml", content)
    assert problems == []
    assert quest is not None and quest.id in content.quests_by_id
    assert quest.summary == "Hi."


def test_schema_problem_uses_the_given_filename(content: Content) -> None:
    assert report(SECOND_QUEST.replace("xp: 1", "xp: 0"), content) == [
        "upload.yaml:10: `tasks[0].xp` should be greater than 0 (got 0) "
        "(fix: XP is a whole number above 0, e.g. xp: 20)"
    ]


def test_yaml_syntax_error(content: Content) -> None:
    assert report("id: second\n  title: x\n", content) == [
        "upload.yaml:2:8: mapping values are not allowed here "
        "(fix: check indentation, colons and quoting at this spot)"
    ]


def test_phase_must_exist(content: Content) -> None:
    assert report(SECOND_QUEST.replace("phase: basics", "phase: later"), content) == [
        "upload.yaml:3: unknown phase `later` (fix: use a phase id from map.yaml: basics)"
    ]


def test_references_must_resolve(content: Content) -> None:
    text = SECOND_QUEST.replace(
        "readings: []\n", "prerequisite: zeroth\nreadings:\n  - ref: nope\n    note: n\n"
    )
    assert report(text, content) == [
        "upload.yaml:5: unknown prerequisite quest `zeroth` "
        "(fix: fix the id, or write a quest with that id)",
        "upload.yaml:7: unknown reading `nope` (fix: fix the id, or add `nope` to library.yaml)",
    ]


def test_prerequisite_on_an_existing_quest(content: Content) -> None:
    text = SECOND_QUEST.replace("readings: []\n", "prerequisite: first\nreadings: []\n")
    assert report(text, content) == []


def test_replacement_cannot_close_a_prerequisite_loop(content_dir: ContentDir) -> None:
    content_dir.add_second_quest(
        SECOND_QUEST.replace("readings: []\n", "prerequisite: first\nreadings: []\n")
    )
    content = load_content(content_dir.path)
    first_needs_second = FIRST_QUEST.replace(
        "phase: basics\n", "phase: basics\nprerequisite: second\n"
    )
    assert report(first_needs_second, content) == [
        "upload.yaml:4: prerequisite cycle: first -> second -> first "
        "(fix: remove one `prerequisite` so the on-ramps form a chain)"
    ]


def test_mentions_are_refused(content: Content) -> None:
    assert report(SECOND_QUEST.replace("prompt: Read.", "prompt: Read it @everyone"), content) == [
        "upload.yaml:11: `tasks[0].prompt` would ping: it contains @everyone "
        "(fix: remove the mention; the bot never pings)"
    ]


def test_unknown_grader(content: Content) -> None:
    text = FIRST_QUEST.replace("grader: stable_softmax", "grader: stable_sofmax")
    assert report(text, content) == [
        "upload.yaml:14: unknown grader `stable_sofmax` "
        "(fix: did you mean `stable_softmax`? otherwise add the grader to graders/tasks/)"
    ]


def test_an_interface_the_grader_does_not_call_is_refused_where_it_is_written(
    content: Content,
) -> None:
    # the shipped grader `stable_softmax` calls `softmax`; a learner asked for `soft` could
    # never pass, so the quest is refused before anyone can submit to it
    text = FIRST_QUEST.replace("      - softmax(x)\n", "      - soft(x)\n")
    assert report(text, content) == [
        "upload.yaml:15: interface names soft but grader `stable_softmax` calls softmax "
        "(fix: list exactly the grader's functions, in its order)"
    ]


def test_a_build_task_that_leaves_its_interface_out_takes_the_graders(content: Content) -> None:
    text = FIRST_QUEST.replace("    interface:\n      - softmax(x)\n", "")
    quest, problems = check_quest_text(text, "upload.yaml", content)
    assert problems == [] and quest is not None
    task = quest.task("build-it")
    assert isinstance(task, BuildTask)
    assert task.interface == ("softmax(x) -> Tensor",)  # as graders/tasks/stable_softmax.py
    assert task.speed == TaskSpeed(function="softmax", reference="softmax_rows")


@pytest.mark.parametrize("signature", ["softmax(x) -> Tensor", "softmax( x )", "softmax(x)->T"])
def test_a_stated_interface_may_differ_from_the_graders_in_spacing_and_result_only(
    content: Content, signature: str
) -> None:
    assert report(FIRST_QUEST.replace("- softmax(x)\n", f"- {signature}\n"), content) == []


@pytest.mark.parametrize("signature", ["softmax(logits)", "softmax(x, dim) -> Tensor", "softmax()"])
def test_parameters_other_than_the_graders_are_refused_where_they_are_written(
    content: Content, signature: str
) -> None:
    text = FIRST_QUEST.replace("- softmax(x)\n", f"- {signature}\n")
    assert report(text, content) == [
        f"upload.yaml:16: interface has `{signature}` but grader `stable_softmax` declares "
        "`softmax(x) -> Tensor` (fix: write the grader's parameters, or leave `interface` out "
        "to take the grader's)"
    ]


@pytest.mark.parametrize(
    ("grader", "function", "speed", "declared"),
    [
        (
            "stable_softmax",
            "softmax(x)",
            "{function: softmax, reference: attention_naive}",
            "speed races softmax against attention_naive but grader `stable_softmax` races "
            "softmax against softmax_rows",
        ),
        (
            "stable_softmax",
            "softmax(x)",
            "null",
            "speed is null but grader `stable_softmax` races softmax against softmax_rows",
        ),
        (
            "bpe_merge",
            "bpe_merge_step(ids)",
            "{function: bpe_merge_step, reference: softmax_rows}",
            "speed races bpe_merge_step against softmax_rows but grader `bpe_merge` is not "
            "speed-ranked",
        ),
    ],
)
def test_a_stated_speed_trial_must_be_the_graders(
    content: Content, grader: str, function: str, speed: str, declared: str
) -> None:
    text = FIRST_QUEST.replace("grader: stable_softmax", f"grader: {grader}").replace(
        "      - softmax(x)\n", f"      - {function}\n    speed: {speed}\n"
    )
    assert report(text, content) == [
        f"upload.yaml:17: {declared} (fix: leave `speed` out to take the grader's)"
    ]
    same = {"stable_softmax": "{function: softmax, reference: softmax_rows}"}.get(grader)
    if same is not None:  # stating the grader's own trial is fine
        assert report(text.replace(f"speed: {speed}", f"speed: {same}"), content) == []
