"""Headless Chromium for the web pages' browser tests: Debian's build, driven by Playwright.

Playwright drives the distribution's Chromium (``/usr/bin/chromium``), never a browser of its
own (``playwright install`` downloads one, which a machine without the internet cannot).  Where
Chromium or Playwright is missing the tests skip with one line naming what to install, unless
``BRRRBOT_REQUIRE_CHROMIUM=1`` (set by ``.ci/run``) turns that skip into a failure, as
``BRRRBOT_REQUIRE_POSTGRES`` does for PostgreSQL.

axe-core (``axe-playwright-python`` bundles ``axe.min.js``) checks each page's accessibility.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page

REQUIRE_ENV = "BRRRBOT_REQUIRE_CHROMIUM"
CHROMIUM = Path("/usr/bin/chromium")
PACKAGES = "chromium fonts-dejavu-core"
#: Playwright's own launch gives every browser a fresh, empty profile in a temporary folder
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
#: the axe impacts that fail a page
FAILING_IMPACTS = ("serious", "critical")


def missing() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if not CHROMIUM.is_file() or not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} not found (apt-get install {PACKAGES})"
    try:
        import axe_playwright_python  # noqa: F401
        import playwright.async_api  # noqa: F401
    except ImportError as exc:
        return f"{exc.name} is not installed (pip install -e '.[test]')"
    return None


def require_chromium(*, module: bool = False) -> None:
    """Skip the test where Chromium is missing; fail it instead under
    ``BRRRBOT_REQUIRE_CHROMIUM=1`` (CI).  With ``module`` (at a test module's top), skip the
    whole module in one line, and under ``BRRRBOT_REQUIRE_CHROMIUM=1`` leave the failing to
    each test, so that the rest of the suite still runs."""
    why = missing()
    if why is None:
        return
    if os.environ.get(REQUIRE_ENV) == "1":
        if module:
            return
        pytest.fail(f"{REQUIRE_ENV}=1 but {why}")
    pytest.skip(why, allow_module_level=module)


@contextlib.asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """One headless Chromium, the distribution's; skips (or fails, see above) without it."""
    require_chromium()
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield browser
        finally:
            await browser.close()


@dataclass(frozen=True)
class Violation:
    rule: str
    impact: str
    help: str
    targets: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.rule} ({self.impact}): {self.help} at {', '.join(self.targets)}"


#: the rules whose outcome depends on the window's width: a phone-width run checks only these
#: (the others read the same document and colours as at desktop width, and take the time)
LAYOUT_RULES = (
    "scrollable-region-focusable",
    "target-size",
    "meta-viewport",
    "meta-viewport-large",
)


async def axe(page: Page, rules: tuple[str, ...] = ()) -> list[Violation]:
    """Every axe-core violation on the page as it is now, of any impact: of every rule axe
    runs by default, or only of ``rules``."""
    from axe_playwright_python.async_playwright import Axe

    options: dict[str, Any] = {"resultTypes": ["violations"]}
    if rules:
        options["runOnly"] = {"type": "rule", "values": list(rules)}
    results = await Axe().run(page, options=options)
    found: list[dict[str, Any]] = results.response["violations"]
    return [
        Violation(
            rule=v["id"],
            impact=v.get("impact") or "unknown",
            help=v["help"],
            targets=tuple(" ".join(map(str, node["target"])) for node in v["nodes"][:5]),
        )
        for v in found
    ]


def failing(violations: list[Violation]) -> list[Violation]:
    return [v for v in violations if v.impact in FAILING_IMPACTS]


async def overflow(page: Page) -> tuple[int, int]:
    """The page's scroll width and the narrowest of the window's widths: wider means the page
    scrolls sideways.  (A phone's window zooms out to fit a page wider than the screen, so its
    inner width grows with the page; its layout viewport and the screen do not.)"""
    widths = await page.evaluate(
        """[document.documentElement.scrollWidth,
            Math.min(window.innerWidth, document.documentElement.clientWidth, screen.width)]"""
    )
    return int(widths[0]), int(widths[1])
