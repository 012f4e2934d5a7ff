"""Per-route rate-limit buckets with Discord's ``X-RateLimit-*`` headers.

discord.py plans its requests from these headers; the fake sends them truthfully
and answers 429 when a bucket really runs dry. Windows use the real monotonic
clock: advancing the fake clock must not refill buckets. Some routes share one
bucket (adding and removing a member's role), with a policy of its own.
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

ROLE_WRITES = "member role writes"
#: per guild; small enough that a backfill meets the bucket, short enough to keep tests fast
#: (Discord's own is slower: a bench can set e.g. ``RateLimitPolicy(10, 10.0)``)
ROLE_WRITE_POLICY = RateLimitPolicy(limit=10, window=0.25)
MEMBER_ROLE = "/guilds/{guild_id}/members/{user_id}/roles/{role_id}"
#: routes Discord counts in one bucket, by the bucket's name
SHARED_BUCKETS = {f"PUT {MEMBER_ROLE}": ROLE_WRITES, f"DELETE {MEMBER_ROLE}": ROLE_WRITES}


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
    def __init__(self, policy: RateLimitPolicy, shared: dict[str, RateLimitPolicy]) -> None:
        self._policy = policy
        #: policies of the shared buckets, by name; tests may change them between requests
        self.shared = shared
        self._windows: dict[str, tuple[float, int]] = {}

    def hit(self, route_key: str, major: str) -> BucketState:
        """Counts one request against the bucket of ``route_key`` + its major parameters."""
        name = SHARED_BUCKETS.get(route_key, route_key)
        policy = self.shared.get(name, self._policy)
        bucket = hashlib.sha1(name.encode()).hexdigest()[:16]
        key = f"{bucket}:{major}"
        now = time.monotonic()
        started, used = self._windows.get(key, (now, 0))
        if now - started >= policy.window:
            started, used = now, 0
        used += 1
        self._windows[key] = (started, used)
        return BucketState(
            bucket=bucket,
            limit=policy.limit,
            remaining=policy.limit - used,
            reset_after=max(policy.window - (now - started), 0.001),
        )
