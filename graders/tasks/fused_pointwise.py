"""Grader for roofline/fused-gelu: bias add plus tanh GELU as one pointwise chain.

This grader judges correctness, on small cases, on any host.  After a pass the worker times
the learner's function against the eager chain (its declared ``speed``,
``bot.worker.speed_trial``) and hands the trial back to this grader, whose lesson is
bandwidth: ``roofline_reading`` sets the achieved bandwidth against the host's peak
(``graders.roofline``), measured at start on a CPU host, the datasheet's on a GPU, looked up
by the name the trusted process reads from the driver.  No timing taken inside the sandbox
decides anything.

Every case carries what the common slips (the erf GELU, the bias after the activation, a
wrong constant, a float32 result for a bfloat16 input...) would return on it, so a wrong
answer is named.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import MappingProxyType

import torch

from graders.base import HostPeak, TrialOutcome
from graders.cases import CaseGrader
from graders.comparison import Case, Mistake
from graders.declaration import Declaration, Speed
from graders.draws import draw_normal
from graders.roofline import Reading, bandwidth_lesson
from graders.tensors import dtype_name
from sandbox.api import GiB, Limits, MiB

DECLARATION = Declaration(
    functions=("fused_gelu_bias(x, bias) -> Tensor",),
    #: room for torch.compile's first compiles on a GPU
    limits=Limits(wall_s=60.0, cpu_s=60.0, memory_bytes=2 * GiB, output_bytes=160 * MiB),
    prefers_cuda=True,  # where the speed trial reads HBM bandwidth
    speed=Speed("fused_gelu_bias", "gelu_bias_eager"),
)

(FUNCTION,) = DECLARATION.interface
#: sqrt(2 / pi) and the cubic coefficient of the tanh approximation of GELU
GELU_SCALE = math.sqrt(2.0 / math.pi)
GELU_CUBIC = 0.044715

#: the built-in GELU would skip the point of the task: writing (and fusing) the chain
FORBIDDEN = MappingProxyType({FUNCTION: frozenset({"gelu", "GELU", "gelu_"})})
HINTS = MappingProxyType(
    {
        FUNCTION: (
            "Compute h = x + bias (bias broadcast over the last dimension), then "
            "0.5 * h * (1 + tanh(sqrt(2 / pi) * (h + 0.044715 * h**3))), in x's dtype and shape."
        )
    }
)
SMALL_SHAPES: tuple[tuple[int, ...], ...] = ((33,), (4, 7), (16, 64), (3, 5, 24), (2, 1, 9))
#: dtype -> (rtol, atol) against the float64 reference rounded to that dtype, as the
#: prompt states.  float32: about 800 ulps, ample for any accurate formulation (correct
#: ones stay under 0.01 of it), while the erf GELU, 5e-4 away, fails 40-fold.  bfloat16:
#: about four roundings, since a chain computed in bfloat16 rounds at every op and
#: 0.5 h + 0.5 h tanh(...) cancels near h = -3; such correct chains reach 0.3 of it
#: (bench/grader_margins.py), and every slip listed below fails its float32 cases anyway.
TOLERANCE = {torch.float32: (1e-4, 1e-5), torch.bfloat16: (3e-2, 2e-2)}
FIXED_SEED = 20260412  # the fixed cases' values: the same in every plan


def gelu_bias_reference(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """The tanh GELU of ``x + bias``, computed in float64 and rounded to ``x``'s dtype."""
    return tanh_gelu(x.double() + bias.double()).to(x.dtype)


def tanh_gelu(
    h: torch.Tensor, scale: float = GELU_SCALE, cubic: float = GELU_CUBIC
) -> torch.Tensor:
    """0.5 h (1 + tanh(scale (h + cubic h^3))): the task's formula, constants replaceable."""
    return 0.5 * h * (1.0 + torch.tanh(scale * (h + cubic * h.pow(3))))


def erf_gelu(h: torch.Tensor) -> torch.Tensor:
    """The exact GELU, h * Phi(h): what the task's tanh formula approximates."""
    return 0.5 * h * (1.0 + torch.erf(h / math.sqrt(2.0)))


#: explanation -> what the slip computes from float64 ``x`` and ``bias``
MISTAKES: MappingProxyType[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = (
    MappingProxyType(
        {
            "this is the exact (erf) GELU, 0.5 * h * (1 + erf(h / sqrt(2))); the task asks for "
            "the tanh approximation, which differs from it by up to 5e-4 (visible in "
            "float32).": lambda x, b: erf_gelu(x + b),
            "you added the bias after the activation; add it first: GELU(x + bias).": (
                lambda x, b: tanh_gelu(x) + b
            ),
            "every value is twice the right one: the leading 0.5 in "
            "0.5 * h * (1 + tanh(...)) is missing.": lambda x, b: 2.0 * tanh_gelu(x + b),
            "the factor inside tanh is sqrt(2 * pi); it is sqrt(2 / pi), about 0.798.": (
                lambda x, b: tanh_gelu(x + b, scale=math.sqrt(2.0 * math.pi))
            ),
            "the cubic coefficient is 0.44715 here; it is 0.044715 (h + 0.044715 * h**3).": (
                lambda x, b: tanh_gelu(x + b, cubic=0.44715)
            ),
            "that is the sigmoid approximation h * sigmoid(1.702 * h), not the tanh formula "
            "the task asks for.": lambda x, b: (x + b) * torch.sigmoid(1.702 * (x + b)),
            "this is ReLU (0 for every negative h); GELU lets small negative values through, "
            "e.g. GELU(-1) is about -0.159.": lambda x, b: (x + b).clamp(min=0.0),
            "the bias was added along the wrong dimension: bias[:, None] gives one value per "
            "row, but bias has one value per column (the last dimension), which plain "
            "x + bias broadcasts.": lambda x, b: tanh_gelu(x + b[:, None]),
        }
    )
)
DTYPE_MISTAKE = (
    "the values are right but the dtype is float32: cast the result back to x's dtype "
    "(.to(x.dtype)) after computing in float32."
)


def known_mistakes(x: torch.Tensor, bias: torch.Tensor) -> tuple[Mistake, ...]:
    """What each listed slip returns for these inputs, rounded as the expectation is; a
    slip that raises on these shapes is left out (its error message speaks for itself)."""
    x64, bias64 = x.double(), bias.double()
    found = []
    for why, wrong in MISTAKES.items():
        try:
            output = wrong(x64, bias64)
        except RuntimeError:
            continue
        found.append(Mistake(output.to(x.dtype), why))
    if x.dtype != torch.float32:
        found.append(Mistake(tanh_gelu(x64 + bias64).float(), DTYPE_MISTAKE))
    return tuple(found)


def small_case(x: torch.Tensor, bias: torch.Tensor, label: str, drawn: bool = True) -> Case:
    """A correctness case at its dtype's tolerance, with the slips' outputs."""
    rtol, atol = TOLERANCE[x.dtype]
    expected = gelu_bias_reference(x, bias)
    mistakes = known_mistakes(x, bias)
    return Case(FUNCTION, (x, bias), expected, label, rtol, atol, mistakes=mistakes, drawn=drawn)


class FusedPointwise(CaseGrader):
    declaration = DECLARATION
    forbidden = FORBIDDEN
    forbidden_what = "a built-in GELU; write the tanh formula as a chain of pointwise ops"
    hints = HINTS
    passed_feedback = (
        "All checks passed. Count the HBM traffic: one read of x, one write of the result; "
        "everything in between can stay in registers when the chain is one kernel. Run eagerly, "
        "each op is its own kernel and sends an intermediate through HBM and back."
    )

    def roofline_reading(self, trial: TrialOutcome, peak: HostPeak) -> Reading:
        """Bandwidth is this task's lesson: a check on a GPU, a note on a CPU host."""
        return bandwidth_lesson(FUNCTION, trial, peak)

    def fixed_cases(self, device: str) -> list[Case]:
        """Cases every plan has, each slip failing at least one whatever the seed: a grid
        of h from -6 to 6 in float32 (where erf and tanh GELU part by 5e-4), a square x
        (where a bias broadcast along the wrong dimension still runs) and a bfloat16 x."""
        gen = torch.Generator().manual_seed(FIXED_SEED)
        grid = torch.linspace(-6.0, 6.0, 60).reshape(5, 12)
        return [
            small_case(grid, torch.linspace(-0.55, 0.55, 12), "x 5x12 float32 grid", False),
            small_case(
                draw_normal(gen, 8, 8, dtype=torch.float32) * 3,
                draw_normal(gen, 8, dtype=torch.float32),
                "x 8x8 float32",
                False,
            ),
            small_case(
                (draw_normal(gen, 4, 16) * 3).to(torch.bfloat16),
                draw_normal(gen, 16, dtype=torch.bfloat16),
                "x 4x16 bfloat16",
                False,
            ),
        ]

    def make_cases(self, gen: torch.Generator, device: str) -> list[Case]:
        """Small cases in two dtypes, drawn."""
        cases = []
        for dtype in TOLERANCE:
            for shape in SMALL_SHAPES:
                x = (draw_normal(gen, *shape) * 3).to(dtype)
                bias = draw_normal(gen, shape[-1], dtype=dtype)
                cases.append(
                    small_case(x, bias, f"x {'x'.join(map(str, shape))} {dtype_name(x.dtype)}")
                )
        return cases
