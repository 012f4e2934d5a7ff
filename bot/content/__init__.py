"""Quest content: YAML files validated into read-only models.

Imports neither discord nor torch, so the CLI checker and the bot share it.
"""

from bot.content.answer_matching import answer_matches, normalize_answer, parse_number
from bot.content.catalogue import Content
from bot.content.hashing import version_hash
from bot.content.loader import check_content, load_content
from bot.content.problems import ContentError, Problem
from bot.content.quest_add import check_quest_text
from bot.content.refs import BadTaskRef, TaskRef
from bot.content.schema import (
    AnyTask,
    BuildTask,
    ContentMap,
    ExerciseTask,
    Library,
    LibraryEntry,
    Phase,
    Quest,
    Question,
    QuizTask,
    ReadingRef,
    ReadingTask,
    function_name,
)

__all__ = [
    "AnyTask",
    "BadTaskRef",
    "BuildTask",
    "Content",
    "ContentError",
    "ContentMap",
    "ExerciseTask",
    "Library",
    "LibraryEntry",
    "Phase",
    "Problem",
    "Quest",
    "Question",
    "QuizTask",
    "ReadingRef",
    "ReadingTask",
    "TaskRef",
    "answer_matches",
    "check_content",
    "check_quest_text",
    "function_name",
    "load_content",
    "normalize_answer",
    "parse_number",
    "version_hash",
]
