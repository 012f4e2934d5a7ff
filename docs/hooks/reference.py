"""MkDocs hook: the two command references, generated from the code at every build.

- ``reference/discord-commands.md``: the bot's application commands, from the command tree
  the bot itself builds (its extensions loaded offline, nothing sent to Discord), rendered
  from the same JSON the bot syncs to Discord: names, descriptions, options with their
  descriptions, choices and limits, subcommand groups, default permissions and where each
  command can be used.
- ``reference/cli.md``: the ``brrrbot`` command line, from ``bot.cli.build_parser()``: every
  subcommand, its help and description, its usage, arguments and options.

Both are virtual files: nothing generated is written into ``docs/``, so they cannot drift
from the code.  The hook imports only public entry points (``bot.app.BrrrBot`` and
``bot.app.EXTENSIONS``, ``bot.cli.build_parser``) and touches no database or network.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

DISCORD_PAGE = "reference/discord-commands.md"
CLI_PAGE = "reference/cli.md"

#: Discord's application command option types (the API's numbers)
OPTION_TYPES = {
    3: "text",
    4: "whole number",
    5: "true/false",
    6: "member",
    7: "channel",
    8: "role",
    9: "member or role",
    10: "number",
    11: "file",
}
SUBCOMMAND, SUBCOMMAND_GROUP = 1, 2
MENU_KINDS = {2: "member menu (*Apps* on a member)", 3: "message menu (*Apps* on a message)"}
CONTEXTS = {0: "servers", 1: "the bot's DMs", 2: "group DMs and other DMs"}
CHANNEL_TYPES = {
    0: "text",
    2: "voice",
    4: "category",
    5: "announcement",
    10: "announcement thread",
    11: "public thread",
    12: "private thread",
    13: "stage",
    15: "forum",
    16: "media",
}


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Document this checkout's code: put the repository root first on ``sys.path`` when
    mkdocs.yml sits beside the ``bot`` package (an installed brrrbot is used otherwise)."""
    root = Path(config.config_file_path).resolve().parent
    if (root / "bot").is_dir() and str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    files.append(File.generated(config, DISCORD_PAGE, content=discord_commands_page()))
    files.append(File.generated(config, CLI_PAGE, content=cli_page()))
    return files


# --- Discord application commands -------------------------------------------------------


class _NoServices:
    """The docs build builds the command tree only; no command runs, so nothing may ask
    (but a loop may listen for a doorbell that never rings: it touches nothing)."""

    def __init__(self) -> None:
        from bot.background import Doorbell

        self.verdicts = Doorbell()

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(
            f"the docs build has no services (asked for {name!r}): building the command "
            "tree must not touch the database or the settings"
        )


def command_payload() -> list[dict[str, Any]]:
    """What the bot would sync to Discord: each top-level command's JSON, in tree order."""
    from bot.app import EXTENSIONS, BrrrBot

    async def build() -> list[dict[str, Any]]:
        bot = BrrrBot(_NoServices())  # type: ignore[arg-type]
        bot.wait_until_ready = asyncio.Event().wait  # type: ignore[method-assign]  # offline: never
        try:
            for extension in EXTENSIONS:
                await bot.load_extension(extension)
            return [command.to_dict(bot.tree) for command in bot.tree.get_commands()]
        finally:  # stops the background loops the extensions started, before they run
            for extension in list(bot.extensions):
                await bot.unload_extension(extension)

    return asyncio.run(build())


def slug(text: str) -> str:
    return "-".join(text.lower().replace("/", " ").replace("_", "-").split())


def _cell(text: str) -> str:
    """One line of text as Markdown shows it literally, in a table cell too."""
    return " ".join(str(text).split()).replace("|", "\\|").replace("<", "&lt;")


def _permissions(value: str | None) -> str | None:
    if value is None:
        return None
    import discord

    names = [
        name.replace("_", " ").title().replace("Guild", "Server")  # as Discord's settings say
        for name, on in discord.Permissions(int(value))
        if on
    ]
    return ", ".join(names) if names else "nobody but administrators"


def _where(command: dict[str, Any]) -> str:
    contexts = command.get("contexts")
    if contexts:
        return ", ".join(CONTEXTS.get(number, str(number)) for number in contexts)
    return "servers" if command.get("dm_permission") is False else "servers and DMs"


def _option_notes(option: dict[str, Any]) -> str:
    notes = []
    if option.get("choices"):
        notes.append("one of " + ", ".join(f"`{choice['name']}`" for choice in option["choices"]))
    if option.get("channel_types"):
        kinds = [CHANNEL_TYPES.get(kind, str(kind)) for kind in option["channel_types"]]
        notes.append(" or ".join(kinds) + " channels")
    if option.get("autocomplete"):
        notes.append("suggestions as you type")
    for key, words in (
        ("min_value", "at least"),
        ("max_value", "at most"),
        ("min_length", "at least {} characters"),
        ("max_length", "at most {} characters"),
    ):
        if option.get(key) is not None:
            value = option[key]
            notes.append(words.format(value) if "{}" in words else f"{words} {value}")
    return "; ".join(notes)


def _children(command: dict[str, Any]) -> list[dict[str, Any]]:
    """A group's subcommands and subcommand groups, in tree order."""
    return [
        option
        for option in command.get("options", [])
        if option.get("type") in (SUBCOMMAND, SUBCOMMAND_GROUP)
    ]


def _options_table(command: dict[str, Any]) -> list[str]:
    parameters = [
        option
        for option in command.get("options", [])
        if option.get("type") not in (SUBCOMMAND, SUBCOMMAND_GROUP)
    ]
    if not parameters:
        return ["No options.", ""]
    lines = ["| Option | Kind | Required | Description |", "| --- | --- | --- | --- |"]
    for option in parameters:
        description = _cell(option.get("description", ""))
        notes = _option_notes(option)
        if notes:
            description += f" ({notes})"
        lines.append(
            f"| `{option['name']}` | {OPTION_TYPES.get(option['type'], option['type'])} "
            f"| {'yes' if option.get('required') else 'no'} | {description} |"
        )
    return [*lines, ""]


def _audience(command: dict[str, Any]) -> list[str]:
    who = _permissions(command.get("default_member_permissions"))
    visible = (
        f"members with {who} by default (a server can change this in its integration settings)"
        if who
        else "everyone"
    )
    return [f"- Visible to: {visible}", f"- Usable in: {_where(command)}", ""]


def _slash_sections(command: dict[str, Any], path: list[str]) -> list[str]:
    """A command's section, then its subcommands' (a group's nested groups included)."""
    name = " ".join(path)
    level = "#" * (len(path) + 1)
    lines = [f"{level} `/{name}` {{#{slug(name)}}}", "", _cell(command.get("description", "")), ""]
    if len(path) == 1:
        lines += _audience(command)
    children = _children(command)
    if not children:
        return lines + _options_table(command)
    links = []
    for child in children:
        child_name = f"{name} {child['name']}"
        links.append(f"[`/{child_name}`](#{slug(child_name)})")
    lines += ["Subcommands: " + ", ".join(links), ""]
    for child in children:
        lines += _slash_sections(child, [*path, child["name"]])
    return lines


def discord_commands_page() -> str:
    payload = command_payload()
    lines = [
        "# Discord commands",
        "",
        "Every application command the bot registers with Discord, generated from the bot's "
        "own command tree when these docs are built, so it lists exactly what the bot "
        "syncs. What each command does in more detail: "
        "[Using brrrbot in Discord](../learners/discord.md) for learners, "
        "[Moderating a server](../operators/moderation.md) for moderators.",
        "",
    ]
    for command in payload:
        name = command["name"]
        if command.get("type", 1) in MENU_KINDS:
            lines += [f"## {name} {{#menu-{slug(name)}}}", "", f"A {MENU_KINDS[command['type']]}."]
            lines += ["", *_audience(command)]
        else:
            lines += _slash_sections(command, [name])
    return "\n".join(lines)


# --- the brrrbot command line ------------------------------------------------------------


@contextlib.contextmanager
def _columns(width: int) -> Iterator[None]:
    """argparse wraps usage to the terminal's width; the page should not depend on it."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


def _subcommands(
    parser: argparse.ArgumentParser,
) -> Iterator[tuple[str, str | None, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each direct subcommand, in the order added."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name), sub


def _help_text(action: argparse.Action, prog: str) -> str:
    text = action.help or ""
    if "%" in text:  # argparse's own expansion of %(default)s and friends
        params = {k: v for k, v in vars(action).items() if v is not argparse.SUPPRESS}
        if params.get("choices") is not None:
            params["choices"] = ", ".join(map(str, params["choices"]))
        text = text % dict(params, prog=prog)
    return _cell(text)


def _argument_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.help is argparse.SUPPRESS:
            continue
        if isinstance(action, argparse._HelpAction):
            continue
        if action.option_strings:
            shown = ", ".join(f"`{option}`" for option in action.option_strings)
            if action.nargs != 0:
                metavar = action.metavar or action.dest.upper()
                if isinstance(metavar, tuple):
                    metavar = " ".join(metavar)
                shown = ", ".join(f"`{option} {metavar}`" for option in action.option_strings)
        else:
            shown = f"`{action.metavar or action.dest}`"
        notes = []
        if action.required and action.option_strings:
            notes.append("required")
        if not action.option_strings and action.nargs in ("?", "*"):
            notes.append("optional")
        if action.choices is not None:
            notes.append("one of " + ", ".join(f"`{choice}`" for choice in action.choices))
        description = _help_text(action, parser.prog)
        if notes:
            description += f" ({'; '.join(notes)})"
        rows.append(f"| {shown} | {description} |")
    return rows


def _cli_sections(
    parser: argparse.ArgumentParser, path: list[str], one_line: str | None
) -> list[str]:
    name = " ".join(path)
    level = "##" if len(path) <= 1 else "###"
    lines = [f"{level} {parser.prog} {{#{slug(name) or 'brrrbot'}}}", ""]
    if one_line:
        lines += [f"*{_cell(one_line[0].upper() + one_line[1:])}.*", ""]
    if parser.description:
        lines += [_cell(parser.description), ""]
    with _columns(88):
        usage = parser.format_usage().strip()
    lines += ["```text", usage, "```", ""]
    rows = _argument_rows(parser)
    if rows:
        lines += ["| Argument | Meaning |", "| --- | --- |", *rows, ""]
    children = list(_subcommands(parser))
    if children:
        lines += [
            "| Command | What it does |",
            "| --- | --- |",
            *(
                f"| [`{sub.prog}`](#{slug(' '.join([*path, child]))}) | {_cell(help_ or '')} |"
                for child, help_, sub in children
            ),
            "",
        ]
    for child, help_, sub in children:
        lines += _cli_sections(sub, [*path, child], help_)
    return lines


def cli_page() -> str:
    from bot.cli import build_parser

    parser = build_parser()
    lines = [
        "# The brrrbot command line",
        "",
        "Every `brrrbot` command, generated from the command line's own parser when these docs "
        "are built. `python -m bot` is the same as `brrrbot`, and every command has `--help`. "
        "A missing or invalid setting stops a command with one line naming it (exit code 2); "
        "the settings are in [Configuration](../operators/configuration.md).",
        "",
    ]
    lines += _cli_sections(parser, [], None)
    return "\n".join(lines)
