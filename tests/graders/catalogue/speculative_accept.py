"""inference-engine/speculative-accept: acceptance, residual, stopping, bonus and inverse-CDF
slips."""

from tests.graders.catalogue import SOLUTIONS, Catalogue, CommonMistake, CorrectStyle


def _loop(
    *,
    accept: str = "u_accept[:, i] * q[rows, i, x] < p[rows, i, x]",
    residual: str = "(p[:, i] - q[:, i]).clamp(min=0)",
    emit: str = "torch.where(running, torch.where(accept, x, resampled), -1)",
    bonus: str = "torch.where(running, sample(p[:, k], u_sample), -1)",
) -> str:
    """The reference's loop over the draft positions with one of its lines changed."""
    return f"""
import torch

def speculative_accept(draft, q, p, u_accept, u_sample):
    batch, k = draft.shape
    rows = torch.arange(batch)
    out = torch.full((batch, k + 1), -1, dtype=torch.int64)
    running = torch.ones(batch, dtype=torch.bool)
    for i in range(k):
        x = draft[:, i]
        accept = {accept}
        resampled = sample({residual}, u_sample)
        out[:, i] = {emit}
        running &= accept
    out[:, k] = {bonus}
    return out
"""


def _sample(body: str) -> str:
    """A ``sample(weights, u)`` that turns ``c`` (the cumulative sums) and ``v`` (u times
    the total) into tokens by ``body``."""
    return f"""
def sample(weights, u):
    c = weights.cumsum(dim=-1)
    v = (u * c[:, -1]).unsqueeze(-1)
    return {body}
"""


_AT_ONCE = """
import torch

def speculative_accept(draft, q, p, u_accept, u_sample):
    batch, k = draft.shape
    px = p[:, :k].gather(2, draft.unsqueeze(2)).squeeze(2)
    qx = q.gather(2, draft.unsqueeze(2)).squeeze(2)
    accepted = u_accept < torch.minimum(torch.ones_like(px), px / qx)
    n = {kept}
    weights = torch.cat([(p[:, :k] - q).clamp(min=0), p[:, k:]], dim=1)[torch.arange(batch), n]
    c = weights.cumsum(dim=1)
    token = (c > (u_sample * c[:, -1]).unsqueeze(1)).int().argmax(dim=1)
    pos = torch.arange(k + 1).expand(batch, k + 1)
    out = torch.where(pos < n.unsqueeze(1), torch.cat([draft, draft[:, :1]], dim=1), -1)
    return torch.where(pos == n.unsqueeze(1), token.unsqueeze(1), out)
"""

CATALOGUE = Catalogue(
    grader="speculative_accept",
    task="inference-engine/speculative-accept",
    reference=SOLUTIONS / "inference-engine" / "speculative_correct.py",
    styles=(
        CorrectStyle(
            "min(1, p / q) with <=, residual normalised first, searchsorted",
            """
import torch

def speculative_accept(draft, q, p, u_accept, u_sample):
    batch, k = draft.shape
    out = torch.full((batch, k + 1), -1, dtype=torch.long)
    alive = torch.ones(batch, dtype=torch.bool)
    u = u_sample.unsqueeze(-1).contiguous()
    for i in range(k):
        x = draft[:, i : i + 1]
        ratio = torch.clamp(p[:, i].gather(1, x) / q[:, i].gather(1, x), max=1.0).squeeze(1)
        ok = u_accept[:, i] <= ratio
        residual = torch.relu(p[:, i] - q[:, i])
        dist = residual / residual.sum(dim=1, keepdim=True)
        token = torch.searchsorted(dist.cumsum(dim=1), u, right=True).squeeze(1)
        out[:, i] = torch.where(alive, torch.where(ok, draft[:, i], token), out[:, i])
        alive = alive & ok
    bonus = torch.searchsorted(p[:, k].cumsum(dim=1).contiguous(), u, right=True).squeeze(1)
    out[:, k] = torch.where(alive, bonus, out[:, k])
    return out
""",
        ),
        CorrectStyle(
            "all positions at once: the run of acceptances by cumprod",
            _AT_ONCE.format(kept="accepted.long().cumprod(dim=1).sum(dim=1)"),
        ),
        CorrectStyle(
            "log-space test, the first rejection by argmax, an exclusive cumsum",
            """
import torch

def speculative_accept(draft, q, p, u_accept, u_sample):
    batch, k = draft.shape
    at = draft.unsqueeze(-1)
    log_ratio = (p[:, :k].gather(-1, at).log() - q.gather(-1, at).log()).squeeze(-1)
    rejected = u_accept.log() >= log_ratio
    first = torch.where(
        rejected.any(dim=1), rejected.long().argmax(dim=1), torch.full((batch,), k)
    )
    at_first = (torch.arange(batch), first.clamp(max=k - 1))
    residual = (p[at_first] - q[at_first]).clamp(min=0)
    weights = torch.where((first < k)[:, None], residual, p[:, k])
    weights = weights / weights.sum(dim=1, keepdim=True)
    before = weights.cumsum(dim=1) - weights
    u = u_sample[:, None]
    token = ((before <= u) & (u < before + weights)).long().argmax(dim=1)
    out = torch.full((batch, k + 1), -1, dtype=torch.int64)
    for j in range(k + 1):
        if j < k:
            out[:, j] = torch.where(j < first, draft[:, j], out[:, j])
        out[:, j] = torch.where(j == first, token, out[:, j])
    return out
""",
        ),
        CorrectStyle(
            "float comparisons in float64 by hand, a mask of the emitted places",
            """
import torch

def speculative_accept(draft, q, p, u_accept, u_sample):
    B, k = draft.shape
    V = p.shape[-1]
    b = torch.arange(B)
    emitted = torch.zeros(B, k + 1, dtype=torch.bool)
    tokens = torch.zeros(B, k + 1, dtype=torch.int64)
    done = torch.zeros(B, dtype=torch.bool)
    for i in range(k + 1):
        if i < k:
            x = draft[:, i]
            keep = u_accept[:, i] < p[b, i, x] / q[b, i, x]
            w = torch.maximum(p[:, i] - q[:, i], torch.zeros(V, dtype=p.dtype))
        else:
            keep = torch.zeros(B, dtype=torch.bool)
            w = p[:, k]
        cdf = torch.cumsum(w, dim=1) / w.sum(dim=1, keepdim=True)
        drawn = (cdf <= u_sample[:, None]).sum(dim=1).clamp(max=V - 1)
        tokens[:, i] = torch.where(keep, draft[:, min(i, k - 1)], drawn)
        emitted[:, i] = ~done
        done = done | ~keep
    return torch.where(emitted, tokens, torch.full_like(tokens, -1))
""",
        ),
    ),
    mistakes=(
        CommonMistake(
            "resamples from p, not the residual",
            "speculative_accept",
            "you sampled from the target p itself",
            _loop(residual="p[:, i]"),
        ),
        CommonMistake(
            "the residual max(0, q - p)",
            "speculative_accept",
            "the wrong way round: it is max(0, p - q)",
            _loop(residual="(q[:, i] - p[:, i]).clamp(min=0)"),
        ),
        CommonMistake(
            "the residual not normalised",
            "speculative_accept",
            "the residual was not normalised",
            _sample("(c <= u.unsqueeze(-1)).sum(dim=-1)"),
        ),
        CommonMistake(
            "keeps every accepted draft (accepted.sum)",
            "speculative_accept",
            "you counted every accepted draft",
            _AT_ONCE.format(kept="accepted.long().sum(dim=1)"),
        ),
        CommonMistake(
            "goes on after the first rejection",
            "speculative_accept",
            "you went on after the first rejection",
            _loop(emit="torch.where(accept, x, resampled)"),
        ),
        CommonMistake(
            "no bonus token",
            "speculative_accept",
            "emit one more token: the bonus",
            _loop(bonus="-1"),
        ),
        CommonMistake(
            "the bonus from p[:, k - 1]",
            "speculative_accept",
            "you sampled it from p[:, k - 1]",
            _loop(bonus="torch.where(running, sample(p[:, k - 1], u_sample), -1)"),
        ),
        CommonMistake(
            "the ratio upside down",
            "speculative_accept",
            "the acceptance ratio is upside down",
            _loop(accept="u_accept[:, i] < q[rows, i, x] / p[rows, i, x]"),
        ),
        CommonMistake(
            "rejects below the ratio",
            "speculative_accept",
            "the acceptance test is the wrong way round",
            _loop(accept="u_accept[:, i] >= p[rows, i, x] / q[rows, i, x]"),
        ),
        CommonMistake(
            "the inverse CDF one too high (exclusive cumsum)",
            "speculative_accept",
            "one token too high",
            _sample("(c - weights <= v).sum(dim=-1)"),
        ),
        CommonMistake(
            "the inverse CDF one too low",
            "speculative_accept",
            "one token too low",
            _sample("(c <= v).sum(dim=-1) - 1"),
        ),
    ),
)
