"""Near-copies: how alike two passing solutions of one task are, as MOSS and Dolos measure it.

Pure (no database, no Discord); ``bot.similarity.near_copies`` stores and compares what this
computes.  Rules:

- A solution is read as Python tokens (``tokenize``; a notebook as the source its code cells
  make, ``bot.intake.notebook``).  The normalized stream keeps keywords, builtins, operators,
  NEWLINE/INDENT/DEDENT (the shape of the code) and attribute names after a ``.`` (the API
  called: renaming variables cannot change ``torch.einsum``); every other name becomes ``V``,
  every literal (numbers, strings, f-strings) ``L``; comments, blank lines and layout go.
- The task's interface signatures, which every solution must contain, are left out: the
  ``def`` of an interface function up to the ``:`` closing its header.
- Fingerprints: each run of ``K`` consecutive normalized tokens hashed (blake2b, 8 bytes, as a
  non-negative 63-bit integer: stable across processes and fits a signed BIGINT), then
  winnowed (Schleimer, Wilkerson and Aiken 2003): in every window of ``W`` consecutive hashes
  the smallest is kept.  Any common run of ``W + K - 1`` tokens is found.  No k-gram or window
  spans two top-level statements (each function, import or assignment is hashed apart), and
  fingerprints are a set, so reordered functions match in full.
- Similarity: the Jaccard index of the two sets.  A solution under ``MIN_TOKENS`` normalized
  tokens has no fingerprints (one-line answers look alike), so it is never in a pair.
- ``THRESHOLD``: a pair at or above it is a near-copy.  ``K``, ``W`` and the threshold are
  measured on the graders' catalogue (``tests/progress/test_similarity_catalogue.py``;
  ``python -m bench.similarity --catalogue`` prints the figures per task).
"""

from __future__ import annotations

import builtins
import hashlib
import io
import keyword
import tokenize
from collections.abc import Collection, Iterable, Sequence

from bot.intake.notebook import NotebookError, notebook_to_source

K = 5  # tokens per hashed k-gram
W = 4  # hashes per winnowing window: a common run of W + K - 1 = 8 tokens is always found
MIN_TOKENS = 50
THRESHOLD = 0.85

NAME = "V"
LITERAL = "L"
_KEPT_NAMES = frozenset(keyword.kwlist) | frozenset(dir(builtins)) - {"_"}
_DROPPED = frozenset(
    {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.ENCODING,
        tokenize.ENDMARKER,
        tokenize.TYPE_COMMENT,
    }
)
_LITERALS = frozenset({tokenize.NUMBER, tokenize.STRING})
_FSTRING_START = getattr(tokenize, "FSTRING_START", None)
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)
_SYMBOLS = {tokenize.NEWLINE: ";", tokenize.INDENT: "{", tokenize.DEDENT: "}"}


def solution_source(content: bytes, file_kind: str) -> str | None:
    """The Python source of an upload as graded (a notebook's code cells), or None when it
    cannot be read as one."""
    try:
        text = content.decode("utf-8-sig")
        return notebook_to_source(text).source if file_kind == "ipynb" else text
    except (UnicodeDecodeError, NotebookError):
        return None


def normalize(source: str, interface: Collection[str] = ()) -> list[str]:
    """The normalized token stream of ``source`` (see the rules), without the signatures of the
    functions named in ``interface``; empty when it does not tokenize."""
    return [token for segment in segments(source, interface) for token in segment]


def segments(source: str, interface: Collection[str] = ()) -> list[list[str]]:
    """The normalized tokens of each top-level statement of ``source`` (a function, an import,
    an assignment) apart; empty when it does not tokenize."""
    try:
        return _segments(tokenize.generate_tokens(io.StringIO(source).readline), interface)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []


def _segments(tokens: Iterable[tokenize.TokenInfo], interface: Collection[str]) -> list[list[str]]:
    parts: list[list[str]] = []
    out: list[str] = []
    indent = 0  # INDENTs not yet closed
    line_start = True  # the next significant token starts a logical line
    previous = ""  # the last significant token's text
    skipping = False  # inside an interface signature
    depth = 0  # bracket depth, while skipping
    fstring = 0  # nesting of f-strings (Python 3.12 splits them into tokens)
    pending_def = False  # a ``def`` seen, its name not yet
    for token in tokens:
        kind, text = token.type, token.string
        if kind in _DROPPED:
            continue
        if kind == tokenize.INDENT:
            indent += 1
        elif kind == tokenize.DEDENT:
            indent -= 1
        elif line_start and indent == 0 and not skipping and not fstring:
            out = []
            parts.append(out)
        if kind not in (tokenize.INDENT, tokenize.DEDENT):
            line_start = kind == tokenize.NEWLINE
        if skipping:
            if text in "([{" and kind == tokenize.OP:
                depth += 1
            elif text in ")]}" and kind == tokenize.OP:
                depth -= 1
            elif text == ":" and depth == 0:
                skipping = False
            continue
        if _FSTRING_START is not None and kind == _FSTRING_START:
            if fstring == 0:
                out.append(LITERAL)
            fstring += 1
            continue
        if fstring:
            if kind == _FSTRING_END:
                fstring -= 1
            continue
        if pending_def:
            pending_def = False
            if kind == tokenize.NAME and text in interface:
                skipping, depth = True, 0
                continue
            out.append("def")
        if kind == tokenize.NAME:
            if text == "def":
                pending_def = True
                continue
            out.append(text if text in _KEPT_NAMES or previous == "." else NAME)
        elif kind in _LITERALS:
            out.append(LITERAL)
        else:
            out.append(_SYMBOLS.get(kind, text))
        previous = text
    return [part for part in parts if part]


def kgram_hashes(tokens: Sequence[str], k: int = K) -> list[int]:
    """Each run of ``k`` consecutive tokens hashed to a stable non-negative 63-bit integer (a
    run shorter than ``k``: one hash of it all)."""
    if 0 < len(tokens) < k:
        k = len(tokens)
    return [
        int.from_bytes(
            hashlib.blake2b("\x1f".join(tokens[i : i + k]).encode(), digest_size=8).digest()
        )
        >> 1
        for i in range(len(tokens) - k + 1)
    ]


def winnow(hashes: Sequence[int], w: int = W) -> set[int]:
    """The winnowed fingerprints: the minimum of every window of ``w`` hashes (a set, so which
    of equal minima is picked does not matter); all of them when there are fewer than ``w``."""
    if len(hashes) < w:
        return set(hashes)
    picked: set[int] = set()
    for start in range(len(hashes) - w + 1):
        picked.add(min(hashes[start : start + w]))
    return picked


def fingerprints(
    source: str, interface: Collection[str] = (), *, k: int = K, w: int = W
) -> frozenset[int]:
    """The fingerprints of a solution; empty under ``MIN_TOKENS`` normalized tokens."""
    parts = segments(source, interface)
    if sum(map(len, parts)) < MIN_TOKENS:
        return frozenset()
    found: set[int] = set()
    for part in parts:  # no k-gram or window spans two top-level statements
        found |= winnow(kgram_hashes(part, k), w)
    return frozenset(found)


def jaccard(a: Iterable[int], b: Iterable[int]) -> float:
    """|A ∩ B| / |A ∪ B|; 0 when both are empty."""
    first, second = set(a), set(b)
    union = len(first | second)
    return len(first & second) / union if union else 0.0


def similarity(
    first: str, second: str, interface: Collection[str] = (), *, k: int = K, w: int = W
) -> float | None:
    """How alike two solutions are, or None when either is under ``MIN_TOKENS``: such a pair is
    never flagged."""
    a = fingerprints(first, interface, k=k, w=w)
    b = fingerprints(second, interface, k=k, w=w)
    return jaccard(a, b) if a and b else None
