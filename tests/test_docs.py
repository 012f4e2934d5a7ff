"""The docs site builds strictly, its links and anchors hold, and its generated reference pages
cover the real command tree and the real command line.

The build runs as a contributor runs it (``python -m mkdocs build --strict``), in a
subprocess, with the MkDocs validation of mkdocs.yml (every link, anchor and nav entry) turned
up to warnings, which ``--strict`` makes failures.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import REPO

README = REPO / "README.md"
DOCS = REPO / "docs"


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    )
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=config.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("site")
    result = build(REPO / "mkdocs.yml", site)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "WARNING" not in output, output
    return site


class _Sections(HTMLParser):
    """A page's headings and the text under each, up to the next heading."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[tuple[str, str]] = []  # (heading text, text below it)
        self._in_heading = False
        self._heading = ""
        self._body: list[str] = []
        self._in_main = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "div" and ("role", "main") in attrs:
            self._in_main = True
        if self._in_main and re.fullmatch(r"h[1-6]", tag):
            self._close()
            self._in_heading, self._heading = True, ""

    def handle_endtag(self, tag: str) -> None:
        if re.fullmatch(r"h[1-6]", tag) and self._in_heading:
            self._in_heading = False

    def handle_data(self, data: str) -> None:
        if self._in_heading:
            self._heading += data
        elif self._in_main:
            self._body.append(data)

    def _close(self) -> None:
        if self._heading:
            self.sections.append((" ".join(self._heading.split()), " ".join(self._body)))
        self._heading, self._body = "", []

    def close(self) -> None:
        super().close()
        self._close()


def sections(page: Path) -> list[tuple[str, str]]:
    parser = _Sections()
    parser.feed(page.read_text())
    parser.close()
    assert parser.sections, f"{page}: no headings found"
    return parser.sections


def squash(text: str) -> str:
    return " ".join(text.split())


# --- the build and its validation ---------------------------------------------------------


def test_the_site_builds_with_links_anchors_and_nav_validated(site: Path) -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    assert config["validation"] == {
        "nav": {"omitted_files": "warn", "not_found": "warn", "absolute_links": "warn"},
        "links": {
            "not_found": "warn",
            "anchors": "warn",
            "absolute_links": "warn",
            "unrecognized_links": "warn",
        },
    }
    assert config["theme"]["name"] in {"mkdocs", "readthedocs"}, "a built-in theme only"
    for section in ("Learners", "Operators", "Contributors"):
        assert any(section in entry for entry in config["nav"]), f"no {section} section"
    assert (site / "index.html").is_file()
    generated = {"reference/discord-commands.md", "reference/cli.md"}
    for page in generated:
        assert not (DOCS / page).exists(), f"{page} is generated at build time, not committed"
        assert (site / page.replace(".md", ".html")).is_file()


def test_a_broken_link_or_anchor_fails_the_build(tmp_path: Path) -> None:
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(DOCS, tmp_path / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    page = tmp_path / "docs" / "learners" / "index.md"
    page.write_text(
        page.read_text() + "\nSee [a page that is gone](no-such-page.md), [a heading that is gone]"
        "(terminal.md#no-such-heading) and [a command that is gone]"
        "(../reference/cli.md#no-such-command).\n"
    )
    result = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "strict mode" in output, output
    # each one a warning (MkDocs' default reports a missing anchor only as INFO, which
    # --strict lets pass), naming the link
    warnings = [line for line in output.splitlines() if line.startswith("WARNING")]
    for link in ("'no-such-page.md'", "'#no-such-heading'", "'#no-such-command'"):
        assert any(link in line for line in warnings), f"{link} not a warning:\n{output}"


def test_the_built_site_loads_nothing_from_the_network(site: Path) -> None:
    remote = re.compile(r"""<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=["'](?:https?:)?//""")
    imports = re.compile(r"""@import\s+(?:url\()?["']?(?:https?:)?//|url\(["']?(?:https?:)?//""")
    for path in site.rglob("*"):
        if path.suffix == ".html":
            found = remote.findall(path.read_text())
            assert not found, f"{path.relative_to(site)} loads {found}"
        elif path.suffix == ".css":
            found = imports.findall(path.read_text(errors="replace"))
            assert not found, f"{path.relative_to(site)} imports {found}"


# --- the generated reference pages --------------------------------------------------------


def _cli_commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.append(((*path, name), sub))
                found += _cli_commands(sub, (*path, name))
    return found


def test_the_cli_page_names_every_subcommand_and_option(site: Path) -> None:
    from bot.cli import build_parser

    page = sections(site / "reference" / "cli.html")
    by_heading = dict(page)
    commands = _cli_commands(build_parser())
    assert len(commands) > 5, "the walk found the subcommands"
    for path, parser in commands:
        heading = " ".join(("brrrbot", *path))
        assert heading in by_heading, f"no section for {heading}: {list(by_heading)}"
        text = by_heading[heading]
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue  # the page says once that every command has --help
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert option in text, f"{heading}: {option} not described"
            if not action.option_strings and not isinstance(action, argparse._SubParsersAction):
                assert str(action.metavar or action.dest) in text, f"{heading}: {action.dest}"
            if action.help and action.help is not argparse.SUPPRESS and "%" not in action.help:
                assert squash(action.help) in text, f"{heading}: help of {action.dest} missing"


def _command_tree() -> list[Any]:
    """Every command the bot's tree holds, subcommands included, built here independently
    of the docs hook: the bot's own extensions loaded into its own client, offline."""
    from types import SimpleNamespace

    import discord

    from bot.app import EXTENSIONS, BrrrBot
    from bot.background import Doorbell

    async def load() -> list[Any]:
        bot = BrrrBot(SimpleNamespace(verdicts=Doorbell()))  # type: ignore[arg-type]
        bot.wait_until_ready = asyncio.Event().wait  # type: ignore[method-assign]  # offline: never
        try:
            for extension in EXTENSIONS:
                await bot.load_extension(extension)
            found: list[Any] = list(bot.tree.walk_commands())
            for kind in (discord.AppCommandType.message, discord.AppCommandType.user):
                found += list(bot.tree.walk_commands(type=kind))
            return found
        finally:
            for extension in list(bot.extensions):
                await bot.unload_extension(extension)

    return asyncio.run(load())


def test_the_discord_page_names_every_command_in_the_tree(site: Path) -> None:
    from discord import app_commands

    page = sections(site / "reference" / "discord-commands.html")
    by_heading = dict(page)
    tree = _command_tree()
    assert any(isinstance(c, app_commands.ContextMenu) for c in tree), "the menus were found"
    assert any(isinstance(c, app_commands.Group) for c in tree), "the groups were found"
    for command in tree:
        if isinstance(command, app_commands.ContextMenu):
            assert command.name in by_heading, f"no section for the menu {command.name!r}"
            continue
        heading = f"/{command.qualified_name}"
        assert heading in by_heading, f"no section for {heading}: {list(by_heading)}"
        text = by_heading[heading]
        assert squash(command.description) in text, f"{heading}: description missing"
        if isinstance(command, app_commands.Command):
            for parameter in command.parameters:
                assert parameter.display_name in text, f"{heading}: {parameter.display_name}"
                assert squash(parameter.description) in text, f"{heading}: {parameter.name}"
                for choice in parameter.choices:
                    assert choice.name in text, f"{heading}: choice {choice.name}"
        if command.default_permissions is not None and command.parent is None:
            assert "Visible to: members with" in text, f"{heading}: who sees it"


# --- what the pages say -------------------------------------------------------------------


def _markdown_links(text: str) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", text)


def test_the_readme_is_short_and_its_links_lead_into_the_docs() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 150
    links = [link for link in _markdown_links(text) if "://" not in link]
    assert links, "the README links into the docs"
    for link in links:
        target = link.split("#", 1)[0]
        assert (REPO / target).is_file(), f"README links to {link}, which does not exist"
    for section in ("learners", "operators", "contributors"):
        assert f"docs/{section}/" in text, f"the README leads {section} to their section"


# Numbers that only a test or bench run could keep true: they are wrong by the next commit.
RUN_NUMBERS = re.compile(
    r"\b\d[\d,]* (?:tests|test cases|cases run)\b|\bin (?:the|our) (?:last )?run\b|"
    r"\bthe (?:test )?suite takes\b|\bmeasured on the\b",
    re.IGNORECASE,
)


def test_no_page_states_a_result_only_a_run_keeps_true() -> None:
    for path in [README, *sorted(DOCS.rglob("*.md"))]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            found = RUN_NUMBERS.search(line)
            assert not found, f"{path.relative_to(REPO)}:{number}: {found.group(0)!r}"


def test_every_setting_is_documented() -> None:
    from bot.config import Settings

    page = (DOCS / "operators" / "configuration.md").read_text()
    for name in Settings.model_fields:
        assert f"| `{name.upper()}` |" in page, f"{name.upper()} is not in the settings table"


CODE_PATH = re.compile(
    r"(?:bot|graders|sandbox|fakediscord|tests|bench|migrations|quests)/[\w./-]*"
)
MODULE = re.compile(r"(?:bot|graders|sandbox|fakediscord)(?:\.\w+)+")


def _named_in_code_spans(text: str) -> list[str]:
    return [span.rstrip(".,:;)") for span in re.findall(r"`([^`\s]+)`", text)]


def _importable_prefix(dotted: str) -> int:
    """How many leading parts of ``dotted`` name a module or package of the tree."""
    parts = dotted.split(".")
    for count in range(len(parts), 0, -1):
        base = REPO.joinpath(*parts[:count])
        if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
            return count
    return 0


def test_every_path_and_module_the_docs_name_exists() -> None:
    """A page that names code keeps up with it: a moved module fails here, not in a reader's hands.

    ``bot.x.y`` may end in one attribute of a module (``bot.config.Settings``), no more.
    """
    stale = []
    for page in [REPO / "README.md", *DOCS.rglob("*.md")]:
        for name in _named_in_code_spans(page.read_text()):
            if CODE_PATH.fullmatch(name) and "*" not in name:
                if not (REPO / name.split("::")[0]).exists():
                    stale.append(f"{page.relative_to(REPO)}: {name}")
            elif MODULE.fullmatch(name) and _importable_prefix(name) < len(name.split(".")) - 1:
                stale.append(f"{page.relative_to(REPO)}: {name}")
    # the generated reference pages are written at build time, not kept in docs/
    stale = [line for line in stale if not line.endswith(": docs/reference/")]
    assert not stale, "\n".join(stale)


def test_a_moved_module_named_in_the_docs_is_found() -> None:
    assert _importable_prefix("bot.worker.job_loop.Worker") == 3
    assert _importable_prefix("bot.grading.worker") == 1  # bot only: the package moved
    assert CODE_PATH.fullmatch("tests/grading/test_outcomes.py")
    assert not (REPO / "tests/grading/test_outcomes.py").exists()
