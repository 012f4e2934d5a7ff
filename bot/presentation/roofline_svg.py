"""A roofline as inline SVG, for the web pages: the same plot as the verdict's picture
(``roofline_image.roofline_plot``: the axes, roofs and cleaned points ``roofline_layout`` has,
from the same stored figures), drawn as vector shapes a page's stylesheet colours, light or dark.

No text is drawn inside it (a thumbnail's labels would be unreadable); the picture in words is
its accessible name and its ``<title>``, and the page's table beside it holds the numbers.
Every number is written by this module and every word is escaped, so the markup it returns is
safe to place in a page as is.
"""

from __future__ import annotations

import functools

from markupsafe import Markup, escape

from bot.presentation.roofline_charts import roofline_chart, roofline_summary
from bot.presentation.roofline_image import MARKERS, roofline_plot
from graders.bottleneck import RooflineFigures

#: the marker radius in the picture's own units (the PNG's pixels)
RADIUS = 26


@functools.lru_cache(maxsize=2048)
def roofline_svg(figures: RooflineFigures, title: str, device: str) -> Markup:
    """The result's point (and the reference's) under its worker's roofs (kept: a stored
    result's figures never change, and a board draws up to a hundred of them)."""
    plot = roofline_plot(roofline_chart(figures, title, device))
    axes = plot.axes
    left, top, right, bottom = axes.box
    margin = 2 * RADIUS  # a marker at the plot's edge stays whole
    view = f"{left - margin} {top - margin} {right - left + 2 * margin} {bottom - top + 2 * margin}"
    words = escape(roofline_summary(figures))
    parts = [
        f'<svg class="roofline" viewBox="{view}" role="img" '
        f'aria-label="{words}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{words}</title>",
        f'<rect class="plot" x="{left}" y="{top}" width="{right - left}" height="{bottom - top}"/>',
    ]
    for exponent in axes.intensity_decades():
        x = axes.x(10.0**exponent)
        parts.append(f'<line class="grid" x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}"/>')
    for exponent in axes.gflops_decades():
        y = axes.y(10.0**exponent)
        parts.append(f'<line class="grid" x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}"/>')
    for (x0, y0), (x1, y1) in plot.roofs():
        parts.append(
            f'<line class="roof" x1="{x0:.1f}" y1="{y0:.1f}" x2="{x1:.1f}" y2="{y1:.1f}"/>'
        )
    for point, slot in zip(plot.points, plot.slots, strict=True):
        x, y = axes.x(point.intensity), axes.y(point.gflops)
        kind = "learner" if slot == 0 else "reference"
        if MARKERS[slot] == "circle":
            parts.append(f'<circle class="{kind}" cx="{x:.1f}" cy="{y:.1f}" r="{RADIUS}"/>')
        else:
            side = RADIUS * 1.7
            parts.append(
                f'<rect class="{kind}" x="{x - side / 2:.1f}" y="{y - side / 2:.1f}" '
                f'width="{side:.1f}" height="{side:.1f}"/>'
            )
    parts.append("</svg>")
    return Markup("".join(parts))  # every word above is escaped
