"""The roofline picture: where a speed result sits under its host's two roofs.

Log-log axes, arithmetic intensity (FLOP per byte) across and achieved GFLOP/s up.  The
bandwidth roof is the slope ``GFLOP/s = intensity * GB/s``, the compute roof the flat ceiling at
the peak GFLOP/s; they meet at the ridge point (``peak_gflops / peak_gbs`` FLOP/byte).  Each
point (the learner's, the reference's) is a marker of its own colour *and* shape with its label.

Pure and Discord-free: Pillow only (matplotlib's import alone costs more than the budget of 50 ms
and 20 MB a drawing may add to the bot), deterministic, and it never raises on odd numbers: a
point or roof that is not a positive finite number is left out, and a point off the scale is
drawn at its edge, each with a note on the picture.  ``roofline_layout`` (the ranges, the cleaned
numbers, the notes and where each label goes) is separate from the pixels so that a page drawn
another way (an SVG) can reuse it.  Drawing is CPU-bound: a cog calls ``roofline_png`` through
``asyncio.to_thread``.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator
from dataclasses import dataclass

from PIL import Image, ImageDraw

from bot.presentation.fonts import drawable, fit, font
from bot.presentation.images import ACCENT, BACKGROUND, MUTED, TEXT

Rgb = tuple[int, int, int]
Box = tuple[int, int, int, int]  # left, top, right, bottom, in pixels

SIZE = (800, 500)  # 16:10; Discord shows it about 400 px wide, so 20 px text reads as 10 px
PLOT_BOX: Box = (124, 92, 770, 420)
TITLE_SIZE = 26
TEXT_SIZE = 20  # every other text: ticks, axis names, labels, notes
TITLE_CHARS = 120
LABEL_CHARS = 40
LABEL_WIDTH = 220  # pixels, at TEXT_SIZE

#: the numbers a point may have (a CPU core's 1e-3 FLOP/byte and GFLOP/s up to a large GEMM on
#: an accelerator's low-precision peak, with room); outside them it is drawn at the edge, with a
#: note.  With a decade of margin the axes never span more than 11 decades across, 13 up.
INTENSITY_LIMITS = (1e-4, 1e5)  # FLOP/byte
GFLOPS_LIMITS = (1e-4, 1e7)  # GFLOP/s
#: the roofs that are drawn; outside these they are left out, with a note
PEAK_GBS_LIMITS = (1e-3, 1e6)  # GB/s
PEAK_GFLOPS_LIMITS = GFLOPS_LIMITS

# Okabe-Ito, which colour-blind readers tell apart; the markers also differ by shape
ROOF: Rgb = (86, 180, 233)  # sky blue
POINT_COLOURS: tuple[Rgb, ...] = (
    (230, 159, 0),  # orange
    (0, 158, 115),  # bluish green
    (213, 94, 0),  # vermillion
    (240, 228, 66),  # yellow
    (204, 121, 167),  # reddish purple
)
MARKERS = ("circle", "square", "triangle", "diamond", "triangle-down")
GRID: Rgb = (44, 46, 51)

_MARKER_RADIUS = 13  # a ring's; the filled marker is smaller
_DOT_RADIUS = 9
_ROOF_WIDTH = 4
_RING = 4  # the width of a ring marker
_PAD = 3  # around a label's text, cleared to the background


@dataclass(frozen=True)
class PlotPoint:
    label: str  # drawn next to the point (through fonts.drawable, capped)
    intensity: float  # arithmetic intensity, FLOP per byte (> 0)
    gflops: float  # achieved GFLOP/s (> 0)


@dataclass(frozen=True)
class RooflineChart:
    peak_gbs: float  # the bandwidth roof, GB/s (1e9 bytes/s): the slope y = intensity * peak_gbs
    peak_gflops: float | None  # the compute ceiling, GFLOP/s; None: no compute roof known
    # usually two: the learner's first (drawn filled), then the reference's (drawn as a ring);
    # at most len(MARKERS) are drawn, the rest named in a note
    points: tuple[PlotPoint, ...]
    title: str  # e.g. "fused-gelu on AMD EPYC 7B13"


@dataclass(frozen=True)
class Axes:
    """Where the chart is drawn: data ranges (log10 decades) and the plot area in pixels."""

    intensity_range: tuple[float, float]  # x: min, max FLOP/byte (powers of ten)
    gflops_range: tuple[float, float]  # y: min, max GFLOP/s (powers of ten)
    box: Box  # plot area in pixels: left, top, right, bottom

    def x(self, intensity: float) -> float:
        """The pixel x of an intensity (> 0), on a log scale: ``box`` left at the range's min."""
        low, high = self.intensity_range
        left, _, right, _ = self.box
        share = (math.log10(intensity) - math.log10(low)) / (math.log10(high) - math.log10(low))
        return left + (right - left) * share

    def y(self, gflops: float) -> float:
        """The pixel y of a GFLOP/s value (> 0), on a log scale: up is more."""
        low, high = self.gflops_range
        _, top, _, bottom = self.box
        share = (math.log10(gflops) - math.log10(low)) / (math.log10(high) - math.log10(low))
        return bottom - (bottom - top) * share

    def intensity_decades(self) -> range:
        """The exponents of the decades on the x axis, min to max."""
        return _decades(self.intensity_range)

    def gflops_decades(self) -> range:
        """The exponents of the decades on the y axis, min to max."""
        return _decades(self.gflops_range)


@dataclass(frozen=True)
class RooflineLayout:
    """What the picture shows once odd inputs are cleaned, and where its parts go."""

    axes: Axes
    title: str  # drawable, capped (not yet fitted to a width)
    peak_gbs: float | None  # None: no bandwidth roof drawn
    peak_gflops: float | None  # None: no compute roof drawn
    points: tuple[PlotPoint, ...]  # drawable labels; numbers positive, within the limits
    # each point's place in the chart's points: its marker, MARKERS[slot] in POINT_COLOURS[slot]
    # (a point left out keeps its marker from the others)
    slots: tuple[int, ...]
    label_boxes: tuple[Box, ...]  # one per point: where its label is drawn
    notes: tuple[str, ...]  # what was left out or moved, and why

    @property
    def ridge(self) -> float | None:
        """The ridge point's intensity (FLOP/byte), where the two roofs meet."""
        if self.peak_gbs is None or self.peak_gflops is None:
            return None
        return self.peak_gflops / self.peak_gbs


def _decades(span: tuple[float, float]) -> range:
    return range(round(math.log10(span[0])), round(math.log10(span[1])) + 1)


def _positive(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


def _within(value: float, limits: tuple[float, float]) -> float:
    return min(max(value, limits[0]), limits[1])


def number(value: float) -> str:
    """A roof's number to three significant figures: ``17.2``, ``150``, ``4,800``, ``0.0123``."""
    if value >= 1000:
        digits = math.floor(math.log10(value)) - 2
        return f"{round(value, -digits):,.0f}"
    return f"{float(f'{value:.3g}'):g}"


def tick(exponent: int) -> str:
    """A decade's tick label: ``0.001``, ``1``, ``100``, ``1k``, ``10M``."""
    if exponent < 0:
        return f"{10.0**exponent:.{-exponent}f}"
    for size, suffix in ((9, "G"), (6, "M"), (3, "k")):
        if exponent >= size:
            return f"{10 ** (exponent - size)}{suffix}"
    return str(10**exponent)


def _clean(
    chart: RooflineChart,
) -> tuple[float | None, float | None, tuple[PlotPoint, ...], tuple[int, ...], tuple[str, ...]]:
    """The roofs that can be drawn, the points that can (clamped to the limits) with their
    places in ``chart.points`` (which choose their markers), and notes that say what was left
    out or moved."""
    notes = []
    peak_gbs = _peak(chart.peak_gbs, PEAK_GBS_LIMITS, "bandwidth", notes)
    peak_gflops = _peak(chart.peak_gflops, PEAK_GFLOPS_LIMITS, "compute", notes)
    if chart.peak_gflops is None:
        only = ": the bandwidth roof only" if peak_gbs is not None else ""
        notes.append(f"no compute roof known{only}")
    points: list[PlotPoint] = []
    slots: list[int] = []
    left_out: list[str] = []
    moved: list[str] = []
    for slot, point in enumerate(chart.points[: len(MARKERS)]):
        label = drawable(point.label if isinstance(point.label, str) else "")[:LABEL_CHARS] or "?"
        if not (_positive(point.intensity) and _positive(point.gflops)):
            left_out.append(label)
            continue
        intensity = _within(point.intensity, INTENSITY_LIMITS)
        gflops = _within(point.gflops, GFLOPS_LIMITS)
        if (intensity, gflops) != (point.intensity, point.gflops):
            moved.append(label)
        points.append(PlotPoint(label, intensity, gflops))
        slots.append(slot)
    if left_out:
        notes.append(f"not drawn, not positive numbers: {_listed(left_out)}")
    if moved:
        notes.append(f"off the scale, drawn at its edge: {_listed(moved)}")
    if len(chart.points) > len(MARKERS):
        notes.append(f"{len(chart.points) - len(MARKERS)} more points not drawn")
    return peak_gbs, peak_gflops, tuple(points), tuple(slots), tuple(notes)


def _peak(
    value: float | None, limits: tuple[float, float], name: str, notes: list[str]
) -> float | None:
    """``value`` when its roof can be drawn; else None, with a note unless it was None."""
    if _positive(value) and limits[0] <= value <= limits[1]:  # type: ignore[operator]
        return value
    if value is None:
        return None
    if _positive(value):
        notes.append(f"the {name} roof is off the scale: not drawn")
    else:
        notes.append(f"no {name} roof: not a positive number")
    return None


def _listed(labels: list[str]) -> str:
    return ", ".join(f"“{fit(label, TEXT_SIZE, 140)}”" for label in labels)


def _span(values: list[float]) -> tuple[float, float]:
    """Whole decades around ``values`` with at least one decade to spare on each side."""
    low = math.floor(math.log10(min(values)) + 1e-9) - 1
    high = math.ceil(math.log10(max(values)) - 1e-9) + 1
    return 10.0**low, 10.0**high


def _axes(peak_gbs: float | None, peak_gflops: float | None, points: tuple[PlotPoint, ...]) -> Axes:
    intensities = [point.intensity for point in points]
    gflops = [point.gflops for point in points]
    if peak_gbs is not None and peak_gflops is not None:
        intensities.append(_within(peak_gflops / peak_gbs, INTENSITY_LIMITS))
    if not intensities:
        intensities = [0.1, 10.0]
    if peak_gflops is not None:
        gflops.append(peak_gflops)
    if peak_gbs is not None:  # the roof above each point, or across the chart
        for intensity in intensities:
            gflops.append(_within(_roof(intensity, peak_gbs, peak_gflops), GFLOPS_LIMITS))
    if not gflops:
        gflops = [1.0, 100.0]
    return Axes(_span(intensities), _span(gflops), PLOT_BOX)


def _roof(intensity: float, peak_gbs: float, peak_gflops: float | None) -> float:
    slope = intensity * peak_gbs
    return slope if peak_gflops is None else min(slope, peak_gflops)


def roofline_axes(chart: RooflineChart) -> Axes:
    """The axes that show every point, the ridge point and a decade of margin beyond them,
    in whole decades (points off the scale counted at its edge, odd numbers left out)."""
    peak_gbs, peak_gflops, points, _, _ = _clean(chart)
    return _axes(peak_gbs, peak_gflops, points)


# -- geometry in pixels ------------------------------------------------------------------------


def _clip(
    axes: Axes, start: tuple[float, float], end: tuple[float, float]
) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """The part of the segment (in pixels) inside the plot box (Liang-Barsky), or None."""
    left, top, right, bottom = axes.box
    (x0, y0), (x1, y1) = start, end
    dx, dy = x1 - x0, y1 - y0
    enter, leave = 0.0, 1.0
    for p, q in ((-dx, x0 - left), (dx, right - x0), (-dy, y0 - top), (dy, bottom - y0)):
        if p == 0:
            if q < 0:
                return None
            continue
        t = q / p
        if p < 0:
            enter = max(enter, t)
        else:
            leave = min(leave, t)
    if enter > leave:
        return None
    return (x0 + enter * dx, y0 + enter * dy), (x0 + leave * dx, y0 + leave * dy)


def _roof_segments(
    axes: Axes, peak_gbs: float | None, peak_gflops: float | None
) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """The roofs as pixel segments inside the box: the slope up to the ridge, then the
    ceiling (computed in log space, where both are straight)."""
    low, high = axes.intensity_range
    segments = []
    if peak_gbs is not None:
        # a point of the slope far left and one at the ridge (or far right): clipped below
        far_left = low / 1e3
        stop = high * 1e3 if peak_gflops is None else max(peak_gflops / peak_gbs, far_left)
        ends = ((far_left, far_left * peak_gbs), (stop, stop * peak_gbs))
        segments.append(ends)
    if peak_gflops is not None:
        start = low / 1e3 if peak_gbs is None else min(peak_gflops / peak_gbs, high * 1e3)
        segments.append(((start, peak_gflops), (high * 1e3, peak_gflops)))
    clipped = []
    for (i0, g0), (i1, g1) in segments:
        if i1 <= i0:
            continue
        piece = _clip(axes, (axes.x(i0), axes.y(g0)), (axes.x(i1), axes.y(g1)))
        if piece is not None and piece[0] != piece[1]:
            clipped.append(piece)
    return clipped


def _crosses_roof(
    segments: list[tuple[tuple[float, float], tuple[float, float]]], box: Box
) -> bool:
    """Whether the roof passes through ``box`` (with a line's width to spare); the roof is
    never lower to the right, so its extremes over the box's columns are at the box's sides."""
    left, top, right, bottom = box
    for (x0, y0), (x1, y1) in segments:
        a, b = max(left, x0), min(right, x1)
        if a > b:
            continue
        ya, yb = (y0 + (y1 - y0) * (x - x0) / (x1 - x0) for x in (a, b))
        if min(ya, yb) <= bottom + _ROOF_WIDTH and max(ya, yb) >= top - _ROOF_WIDTH:
            return True
    return False


def _overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _inside(inner: Box, outer: Box) -> bool:
    return (
        inner[0] >= outer[0]
        and inner[1] >= outer[1]
        and inner[2] <= outer[2]
        and inner[3] <= outer[3]
    )


def _text_size(text: str) -> tuple[int, int]:
    ascent, descent = font(TEXT_SIZE).getmetrics()
    return math.ceil(font(TEXT_SIZE).getlength(text)) + 2 * _PAD, ascent + descent + 2 * _PAD


def _candidates(centre: tuple[float, float], size: tuple[int, int]) -> Iterator[Box]:
    """Label boxes around a marker: beside it, above, below, then diagonally, nearest first."""
    x, y = centre
    width, height = size
    reach = _MARKER_RADIUS + 2
    for gap in (4, 26, 52, 84):
        near = reach + gap
        for left, top in (
            (x + near, y - height / 2),
            (x - near - width, y - height / 2),
            (x - width / 2, y - near - height),
            (x - width / 2, y + near),
            (x + near * 0.7, y - near * 0.7 - height),
            (x + near * 0.7, y + near * 0.7),
            (x - near * 0.7 - width, y - near * 0.7 - height),
            (x - near * 0.7 - width, y + near * 0.7),
        ):
            yield round(left), round(top), round(left) + width, round(top) + height


def _place_labels(
    axes: Axes,
    points: tuple[PlotPoint, ...],
    texts: list[str],
    taken: list[Box],
    segments: list[tuple[tuple[float, float], tuple[float, float]]],
    soft: list[Box],
) -> tuple[Box, ...]:
    """Greedy, in the points' order: the nearest box inside the plot and clear of every marker
    and every label already placed; one that crosses a roof only when no other is clear, one
    nearer another point than its own only when it is far nearer, and one over a ``soft`` box
    (the ridge's guide line) only when it is much nearer."""
    markers = [_marker_box(axes, point) for point in points]
    area = axes.box
    placed: list[Box] = []
    for point, text in zip(points, texts, strict=True):
        centre = (axes.x(point.intensity), axes.y(point.gflops))
        others = [
            (axes.x(other.intensity), axes.y(other.gflops)) for other in points if other != point
        ]
        options = list(_candidates(centre, _text_size(text)))
        hard = markers + taken + placed
        costs = {
            index: index
            + 1000 * _crosses_roof(segments, box)
            + 12 * any(_overlaps(box, other) for other in soft)
            + 40 * any(_reach(box, other) < 0.85 * _reach(box, centre) for other in others)
            for index, box in enumerate(options)
            if _inside(box, area) and not any(_overlaps(box, other) for other in hard)
        }
        best = options[min(costs, key=costs.__getitem__)] if costs else None
        if best is None:  # nowhere clear: beside the marker, pushed inside the plot
            left, top, right, bottom = options[0]
            shift_x = max(area[0] - left, 0) + min(area[2] - right, 0)
            shift_y = max(area[1] - top, 0) + min(area[3] - bottom, 0)
            best = (left + shift_x, top + shift_y, right + shift_x, bottom + shift_y)
        placed.append(best)
    return tuple(placed)


def _reach(box: Box, centre: tuple[float, float]) -> float:
    """How far ``box`` is from ``centre``: a label clearly nearer another point's marker than
    its own would seem to name that one."""
    x, y = centre
    return math.hypot(min(max(x, box[0]), box[2]) - x, min(max(y, box[1]), box[3]) - y)


def _marker_box(axes: Axes, point: PlotPoint) -> Box:
    x, y = axes.x(point.intensity), axes.y(point.gflops)
    reach = _MARKER_RADIUS + 3
    return round(x - reach), round(y - reach), round(x + reach), round(y + reach)


@dataclass(frozen=True)
class _Decorations:
    """Where the roofs' labels and the ridge's go (obstacles for the points' labels)."""

    ceiling: tuple[Box, str] | None
    slope: tuple[Box, tuple[float, float], float, str] | None  # box, centre, angle, text
    ridge: tuple[Box, str] | None


def _decorations(
    axes: Axes,
    peak_gbs: float | None,
    peak_gflops: float | None,
    points: tuple[PlotPoint, ...],
    segments: list[tuple[tuple[float, float], tuple[float, float]]],
) -> _Decorations:
    _, _, right, bottom = axes.box
    markers = [_marker_box(axes, point) for point in points]
    ceiling = slope = ridge = None
    ridge_x = None
    if peak_gflops is not None and peak_gbs is not None:
        ridge_intensity = peak_gflops / peak_gbs
        if axes.intensity_range[0] < ridge_intensity < axes.intensity_range[1]:
            ridge_x = axes.x(ridge_intensity)
    if peak_gflops is not None and axes.gflops_range[0] <= peak_gflops <= axes.gflops_range[1]:
        text = f"{number(peak_gflops)} GFLOP/s"
        width, height = _text_size(text)
        y = round(axes.y(peak_gflops))
        start = right - width if ridge_x is None else round(ridge_x) + 10
        options = [  # above the ceiling at its right end, or at its left; else below
            (x, y + dy) for dy in (-4 - height, 4) for x in (right - 6 - width, start)
        ]
        boxes = [(x, y0, x + width, y0 + height) for x, y0 in options]
        clear = [box for box in boxes if _inside(box, axes.box)]
        clear = [box for box in clear if not any(_overlaps(box, m) for m in markers)] or clear
        ceiling = ((clear or boxes)[0], text)
    if ridge_x is not None and peak_gbs is not None and peak_gflops is not None:
        # at the foot of the guide: on its right (where compute-bound points are, fewer than
        # memory-bound ones) in full or short, else on its left
        x = round(ridge_x)
        full = f"ridge {number(peak_gflops / peak_gbs)} FLOP/byte"
        short = f"ridge {number(peak_gflops / peak_gbs)}"
        options = []
        for text, side in ((full, 1), (short, 1), (full, -1), (short, -1)):
            width, height = _text_size(text)
            left = x + 6 if side > 0 else x - 6 - width
            options.append(((left, bottom - 4 - height, left + width, bottom - 4), text))
        clear = [option for option in options if _inside(option[0], axes.box)]
        clear = [o for o in clear if not any(_overlaps(o[0], m) for m in markers)] or clear
        ridge = (clear or options)[0]
    if peak_gbs is not None and segments:
        (x0, y0), (x1, y1) = segments[0]
        if math.isclose(y0, y1):  # no slope in view: only the ceiling is
            return _Decorations(ceiling, None, ridge)
        text = f"{number(peak_gbs)} GB/s"
        width, height = _text_size(text)
        angle = math.atan2(y0 - y1, x1 - x0)
        turned_w = width * math.cos(angle) + height * math.sin(angle)
        turned_h = width * math.sin(angle) + height * math.cos(angle)
        lift = height / 2 + 2
        taken = [part[0] for part in (ceiling, ridge) if part is not None] + markers
        options = []
        for share in (0.4, 0.6, 0.25, 0.75, 0.1, 0.9):
            cx = x0 + (x1 - x0) * share - lift * math.sin(angle)
            cy = y0 + (y1 - y0) * share - lift * math.cos(angle)
            box = (
                round(cx - turned_w / 2),
                round(cy - turned_h / 2),
                round(cx + turned_w / 2),
                round(cy + turned_h / 2),
            )
            options.append((box, (cx, cy)))
        inside = [option for option in options if _inside(option[0], axes.box)]
        clear = [o for o in inside if not any(_overlaps(o[0], other) for other in taken)]
        box, centre = (clear or inside or options)[0]
        slope = (box, centre, math.degrees(angle), text)
    return _Decorations(ceiling, slope, ridge)


def _build(
    chart: RooflineChart,
) -> tuple[RooflineLayout, list[tuple[tuple[float, float], tuple[float, float]]], _Decorations]:
    peak_gbs, peak_gflops, points, slots, notes = _clean(chart)
    axes = _axes(peak_gbs, peak_gflops, points)
    title = drawable(chart.title if isinstance(chart.title, str) else "")[:TITLE_CHARS]
    segments = _roof_segments(axes, peak_gbs, peak_gflops)
    decorations = _decorations(axes, peak_gbs, peak_gflops, points, segments)
    taken = [
        part[0]
        for part in (decorations.ceiling, decorations.slope, decorations.ridge)
        if part is not None
    ]
    soft = []  # the ridge's guide line: better not under a label
    if decorations.ridge is not None and peak_gbs is not None and peak_gflops is not None:
        ridge_x = round(axes.x(peak_gflops / peak_gbs))
        soft.append((ridge_x - 3, round(axes.y(peak_gflops)), ridge_x + 3, axes.box[3]))
    texts = [fit(point.label, TEXT_SIZE, LABEL_WIDTH) for point in points]
    boxes = _place_labels(axes, points, texts, taken, segments, soft)
    layout = RooflineLayout(axes, title, peak_gbs, peak_gflops, points, slots, boxes, notes)
    return layout, segments, decorations


def roofline_layout(chart: RooflineChart) -> RooflineLayout:
    """Clean ``chart``'s numbers, choose the axes and place every point's label."""
    return _build(chart)[0]


@dataclass(frozen=True)
class RooflinePlot:
    """What a picture without words needs of ``roofline_layout``: the same cleaned numbers and
    axes, none of the text (placing labels measures fonts: most of a layout's cost)."""

    axes: Axes
    peak_gbs: float | None
    peak_gflops: float | None
    points: tuple[PlotPoint, ...]
    slots: tuple[int, ...]

    def roofs(self) -> list[tuple[tuple[float, float], tuple[float, float]]]:
        """The roofs as pixel segments inside the plot box (the slope, then the ceiling)."""
        return _roof_segments(self.axes, self.peak_gbs, self.peak_gflops)


def roofline_plot(chart: RooflineChart) -> RooflinePlot:
    """``chart``'s numbers cleaned and its axes chosen, as ``roofline_layout`` does."""
    peak_gbs, peak_gflops, points, slots, _ = _clean(chart)
    return RooflinePlot(_axes(peak_gbs, peak_gflops, points), peak_gbs, peak_gflops, points, slots)


# -- drawing -----------------------------------------------------------------------------------


def _marker(
    draw: ImageDraw.ImageDraw,
    shape: str,
    centre: tuple[float, float],
    radius: float,
    colour: Rgb,
    width: int | None = None,
) -> None:
    """A marker about ``centre``: filled, or a ring ``width`` wide.  Its shapes are symmetric
    about the centre (regular polygons about it), so the centre is their centroid."""
    x, y = centre
    fill, outline = (colour, None) if width is None else (None, colour)
    line = width or 1
    if shape == "circle":
        box = (x - radius, y - radius, x + radius, y + radius)
        draw.ellipse(box, fill=fill, outline=outline, width=line)
    elif shape == "square":
        side = radius * 0.85
        box = (x - side, y - side, x + side, y + side)
        draw.rectangle(box, fill=fill, outline=outline, width=line)
    else:
        sides, rotation = {"triangle": (3, 0), "diamond": (4, 45), "triangle-down": (3, 180)}[shape]
        circle = (x, y, radius * (1.25 if sides == 3 else 1.15))
        draw.regular_polygon(circle, sides, rotation, fill=fill, outline=outline, width=line)


def _draw_markers(
    draw: ImageDraw.ImageDraw, markers: list[tuple[int, tuple[float, float]]]
) -> None:
    """Each (slot, centre): the first point's marker filled, the others as larger rings drawn
    over it, so that a reference right on the learner's point frames it instead of hiding it.
    A rim of the background around each sets it apart from the roof; the rims go first, so
    that no rim cuts into another marker."""
    for slot, centre in markers:
        if slot == 0:
            _marker(draw, MARKERS[0], centre, _DOT_RADIUS + 2.5, BACKGROUND)
        else:
            _marker(draw, MARKERS[slot], centre, _MARKER_RADIUS + 2, BACKGROUND, width=3)
    for slot, centre in markers:
        if slot == 0:
            _marker(draw, MARKERS[0], centre, _DOT_RADIUS, POINT_COLOURS[0])
        else:
            _marker(draw, MARKERS[slot], centre, _MARKER_RADIUS, POINT_COLOURS[slot], _RING)


def _turned_text(
    image: Image.Image, centre: tuple[float, float], text: str, angle: float, fill: Rgb
) -> None:
    """``text`` at TEXT_SIZE, turned ``angle`` degrees anticlockwise about ``centre``."""
    face = font(TEXT_SIZE)
    ascent, descent = face.getmetrics()
    mask = Image.new("L", (math.ceil(face.getlength(text)) + 4, ascent + descent + 4))
    ImageDraw.Draw(mask).text((2, 2), text, font=face, fill=255)
    mask = mask.rotate(angle, resample=Image.Resampling.BICUBIC, expand=True)
    left, top = round(centre[0] - mask.width / 2), round(centre[1] - mask.height / 2)
    image.paste(fill, (left, top, left + mask.width, top + mask.height), mask)


def _label(draw: ImageDraw.ImageDraw, box: Box, text: str, fill: Rgb) -> None:
    draw.rectangle(box, fill=BACKGROUND)
    draw.text((box[0] + _PAD, box[1] + _PAD), text, font=font(TEXT_SIZE), fill=fill, anchor="la")


def _grid_and_ticks(image: Image.Image, draw: ImageDraw.ImageDraw, axes: Axes) -> None:
    left, top, right, bottom = axes.box
    face = font(TEXT_SIZE)
    x_decades, y_decades = axes.intensity_decades(), axes.gflops_decades()
    x_step = (right - left) / (len(x_decades) - 1)
    y_step = (bottom - top) / (len(y_decades) - 1)
    widest = max(face.getlength(tick(exponent)) for exponent in x_decades)
    x_every = math.ceil((widest + 14) / x_step)
    y_every = math.ceil((TEXT_SIZE + 8) / y_step)
    for decade in x_decades[:-1] if x_step >= 40 else ():  # minor ticks, 2..9 in a decade
        for factor in range(2, 10):
            x = axes.x(factor * 10.0**decade)
            draw.line((x, bottom - 5, x, bottom), fill=MUTED)
    for decade in y_decades[:-1] if y_step >= 40 else ():
        for factor in range(2, 10):
            y = axes.y(factor * 10.0**decade)
            draw.line((left, y, left + 5, y), fill=MUTED)
    for index, exponent in enumerate(x_decades):
        x = axes.x(10.0**exponent)
        draw.line((x, top, x, bottom), fill=GRID)
        draw.line((x, bottom, x, bottom + 6), fill=MUTED)
        if index % x_every == 0:
            draw.text((x, bottom + 9), tick(exponent), font=face, fill=MUTED, anchor="ma")
    for index, exponent in enumerate(y_decades):
        y = axes.y(10.0**exponent)
        draw.line((left, y, right, y), fill=GRID)
        draw.line((left - 6, y, left, y), fill=MUTED)
        if index % y_every == 0:
            draw.text((left - 10, y), tick(exponent), font=face, fill=MUTED, anchor="rm")
    draw.line((left, top, left, bottom), fill=MUTED)
    draw.line((left, bottom, right, bottom), fill=MUTED)
    draw.text(
        ((left + right) / 2, SIZE[1] - 14),
        "arithmetic intensity, FLOP/byte",
        font=face,
        fill=MUTED,
        anchor="ms",
    )
    _turned_text(image, (26, (top + bottom) / 2), "GFLOP/s", 90, MUTED)


def roofline_png(chart: RooflineChart) -> bytes:
    """The roofline picture of ``chart`` as an 800x500 PNG; never raises on odd numbers."""
    layout, segments, decorations = _build(chart)
    axes = layout.axes
    left, _, right, bottom = axes.box
    image = Image.new("RGB", SIZE, BACKGROUND)
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, 7, SIZE[1]), fill=ACCENT)
    draw.text(
        (40, 38),
        fit(layout.title, TITLE_SIZE, SIZE[0] - 80),
        font=font(TITLE_SIZE),
        fill=TEXT,
        anchor="ls",
    )
    if layout.notes:
        notes = "; ".join(layout.notes)
        draw.text(
            (40, 68),
            fit(notes, TEXT_SIZE, SIZE[0] - 80),
            font=font(TEXT_SIZE),
            fill=MUTED,
            anchor="ls",
        )
    _grid_and_ticks(image, draw, axes)

    ridge = layout.ridge
    if ridge is not None and layout.peak_gflops is not None:
        x, y = axes.x(ridge), axes.y(layout.peak_gflops)
        if left < x < right:
            dash = y + 8
            while dash < bottom:
                draw.line((x, dash, x, min(dash + 6, bottom)), fill=MUTED, width=2)
                dash += 12
    for (x0, y0), (x1, y1) in segments:
        draw.line((x0, y0, x1, y1), fill=ROOF, width=_ROOF_WIDTH)
    if len(segments) == 2:  # round the joint at the ridge
        (x, y) = segments[1][0]
        half = _ROOF_WIDTH / 2 - 0.5
        draw.ellipse((x - half, y - half, x + half, y + half), fill=ROOF)
    if decorations.ceiling is not None:
        _label(draw, *decorations.ceiling, TEXT)
    if decorations.ridge is not None:
        _label(draw, *decorations.ridge, MUTED)
    if decorations.slope is not None:
        _, centre, angle, text = decorations.slope
        _turned_text(image, centre, text, angle, TEXT)

    for point, box in zip(layout.points, layout.label_boxes, strict=True):
        x, y = axes.x(point.intensity), axes.y(point.gflops)
        nearest_x = min(max(x, box[0]), box[2])
        nearest_y = min(max(y, box[1]), box[3])
        far = math.hypot(nearest_x - x, nearest_y - y)
        if far > _MARKER_RADIUS + 24:  # a leader line, from the marker's edge
            edge = (_MARKER_RADIUS + 3) / far
            start = (x + (nearest_x - x) * edge, y + (nearest_y - y) * edge)
            draw.line((*start, nearest_x, nearest_y), fill=MUTED, width=1)
        _label(draw, box, fit(point.label, TEXT_SIZE, LABEL_WIDTH), TEXT)
    # the markers last, on top of everything
    centres = [(axes.x(p.intensity), axes.y(p.gflops)) for p in layout.points]
    _draw_markers(draw, list(zip(layout.slots, centres, strict=True)))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
