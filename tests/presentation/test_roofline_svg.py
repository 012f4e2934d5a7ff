"""The web pages' roofline: the same plot as the verdict's picture, as vector shapes."""

from __future__ import annotations

import math
import re

import pytest

from bot.presentation.roofline_charts import roofline_chart
from bot.presentation.roofline_image import roofline_layout, roofline_plot
from bot.presentation.roofline_svg import roofline_svg
from graders.bottleneck import RooflineFigures

FIGURES = (
    RooflineFigures(8_388_608, 10_485_760, 12.5, 5.0, 29.1, 97.4),  # memory side
    RooflineFigures(3 * 2**20, 2 * 512**3, 80.0, 90.0, 29.1, 97.4),  # compute side
    RooflineFigures(4096, 4096, 0.001, None, 29.1, None),  # no compute roof, no reference
    RooflineFigures(1, 10**15, 1e9, 5.0, 29.1, 97.4),  # off the scale: drawn at the edge
)


@pytest.mark.parametrize("figures", FIGURES)
def test_the_plot_is_the_pictures_plot(figures: RooflineFigures) -> None:
    chart = roofline_chart(figures, "softmax", "AMD EPYC 7B13")
    layout, plot = roofline_layout(chart), roofline_plot(chart)
    assert (plot.axes, plot.points, plot.slots) == (layout.axes, layout.points, layout.slots)
    assert (plot.peak_gbs, plot.peak_gflops) == (layout.peak_gbs, layout.peak_gflops)


def test_the_learner_sits_a_ratios_decades_above_the_reference() -> None:
    """Measured in the picture's own decade spacing, not through the code's axes."""
    figures = RooflineFigures(8_388_608, 10_485_760, 12.5, 5.0, 29.1, 97.4)
    svg = str(roofline_svg(figures, "softmax", "cpu"))
    ys = sorted(float(y) for y in re.findall(r'<line class="grid" x1="\d+" y1="([\d.]+)"', svg))
    learner = float(re.search(r'class="learner" cx="[\d.]+" cy="([\d.]+)"', svg)[1])  # type: ignore[index]
    square = re.search(
        r'class="reference" x="[\d.]+" y="([\d.]+)" width="[\d.]+" height="([\d.]+)"', svg
    )
    assert square is not None
    reference = float(square[1]) + float(square[2]) / 2
    assert (reference - learner) / (ys[1] - ys[0]) == pytest.approx(
        math.log10(12.5 / 5.0), abs=0.01
    )
    assert svg.count('class="roof"') == 2  # the slope and the ceiling
