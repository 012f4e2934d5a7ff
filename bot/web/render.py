"""Turning a page's typed values into HTML: one Jinja2 environment, autoescaped everywhere.

Templates live in ``bot/web/templates`` and the one stylesheet in ``bot/web/static``; a page
loads nothing else (no script, font or image from anywhere), so it reads the same on a network
with no internet.  Numbers are formatted here, once, by the filters the templates use.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from importlib import resources
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markdown_it import MarkdownIt
from markupsafe import Markup

from graders.base import format_ratio


def duration(seconds: float) -> str:
    """A call's time in the unit that keeps it readable: 0.85 ms, 12 µs, 1.2 s."""
    if seconds >= 1:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"


def day(moment: datetime) -> str:
    """The UTC date of a moment, as the page shows it (ISO: no locale to guess)."""
    return moment.astimezone(UTC).date().isoformat()


#: CommonMark with raw HTML off: a quest's Markdown (a moderator's too) becomes markup, and any
#: tag it holds is shown as text; links that are not http(s), mailto or relative are dropped
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).disable("image")  # pages load no images


@functools.lru_cache(maxsize=4096)
def markdown(text: str) -> Markup:
    """Quest text (Markdown) as HTML, safe to place in a page (kept: quest text rarely
    changes, and parsing it is most of a map page's cost)."""
    return Markup(_MARKDOWN.render(text))  # html off: every tag in ``text`` comes out escaped


@functools.cache
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("bot.web", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(ratio=format_ratio, duration=duration, day=day, markdown=markdown)
    env.filters["count"] = lambda value: f"{value:,}"
    return env


def render(template: str, **context: Any) -> bytes:
    return environment().get_template(template).render(**context).encode()


#: the files under ``/static/``: name -> media type (nothing else is served from there)
STATIC = {"site.css": "text/css", "favicon.svg": "image/svg+xml"}


@functools.cache
def static_file(name: str) -> bytes:
    return resources.files("bot.web").joinpath("static", name).read_bytes()
