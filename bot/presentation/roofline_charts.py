"""Which roofline picture a result gets: the chart a verdict, the weekly post's fastest of
the week and the terminal draw, from the figures the result carries (``RooflineFigures``,
stored with it), so each shows the same picture of the same run.  Drawing is
``bot.presentation.roofline_image``'s."""

from __future__ import annotations

from bot.presentation.roofline_image import PlotPoint, RooflineChart
from bot.progress.speed_results import FastestOfWeek
from graders.base import Verdict
from graders.bottleneck import RooflineFigures

#: the picture's file name where it is attached to a message
ROOFLINE_FILENAME = "roofline.png"
LEARNER, REFERENCE = "your code", "reference"


def roofline_chart(
    figures: RooflineFigures, title: str, device: str, *, learner: str = LEARNER
) -> RooflineChart:
    """The learner's point and (when measured) the reference's under the worker's roofs."""
    points = [PlotPoint(learner, figures.intensity, figures.achieved_gflops)]
    if figures.reference_gflops is not None:
        points.append(PlotPoint(REFERENCE, figures.intensity, figures.reference_gflops))
    return RooflineChart(
        figures.peak_gbs, figures.peak_gflops, tuple(points), f"{title} on {device}"
    )


def verdict_chart(verdict: Verdict, title: str) -> RooflineChart | None:
    """A verdict's picture; None when its trial placed nothing on a roofline."""
    speed = verdict.speed
    figures = RooflineFigures.of(speed) if speed is not None else None
    if speed is None or figures is None:
        return None
    return roofline_chart(figures, title, speed.device)


def fastest_chart(fastest: FastestOfWeek, title: str | None) -> RooflineChart | None:
    """The week's fastest result's picture, drawn again from its stored figures."""
    if fastest.figures is None:
        return None
    return roofline_chart(
        fastest.figures, title or fastest.task_ref, fastest.device, learner="fastest"
    )


def roofline_summary(figures: RooflineFigures) -> str:
    """The picture in words, for a terminal."""
    ceiling = (
        f"{figures.peak_gflops:.3g} GFLOP/s" if figures.peak_gflops else "no known compute roof"
    )
    reference = (
        f", the reference's {figures.reference_gflops:.3g}"
        if figures.reference_gflops is not None
        else ""
    )
    return (
        f"your code {figures.achieved_gflops:.3g} GFLOP/s at {figures.intensity:.3g} FLOP/byte"
        f"{reference}; roofs {figures.peak_gbs:.3g} GB/s and {ceiling}"
    )
