"""Per-route rate-limit buckets with Discord's ``X-RateLimit-*`` headers.

discord.py plans its requests from these headers; the fake sends them truthfully
and answers 429 when a bucket really runs dry. Windows use the real monotonic
clock: advancing the fake clock must not refill buckets.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class RateLimitPolicy:
    limit: int = 50
    window: float = 1.0


DEFAULT_POLICY = RateLimitPolicy()


@dataclass(frozen=True)
class BucketState:
    bucket: str
    limit: int
    remaining: int
    reset_after: float

    @property
    def exhausted(self) -> bool:
        return self.remaining < 0

    def headers(self) -> dict[str, str]:
        return {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(max(self.remaining, 0)),
            "X-RateLimit-Reset": f"{time.time() + self.reset_after:.3f}",
            "X-RateLimit-Reset-After": f"{self.reset_after:.3f}",
            "X-RateLimit-Bucket": self.bucket,
        }


class RateLimits:
    def __init__(self, policy: RateLimitPolicy) -> None:
        self._policy = policy
        self._windows: dict[str, tuple[float, int]] = {}

    def hit(self, route_key: str, major: str) -> BucketState:
        """Counts one request against the bucket of ``route_key`` + its major parameters."""
        bucket = hashlib.sha1(route_key.encode()).hexdigest()[:16]
        key = f"{bucket}:{major}"
        now = time.monotonic()
        started, used = self._windows.get(key, (now, 0))
        if now - started >= self._policy.window:
            started, used = now, 0
        used += 1
        self._windows[key] = (started, used)
        return BucketState(
            bucket=bucket,
            limit=self._policy.limit,
            remaining=self._policy.limit - used,
            reset_after=max(self._policy.window - (now - started), 0.001),
        )
