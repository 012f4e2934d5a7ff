"""Signed, expiring attachment URLs on the fake's own host.

Discord's attachment URLs carry ``ex`` (expiry, hex seconds), ``is`` (issued)
and ``hm`` (signature) and stop working after a while; a bot must download
at once. The expiry reads the fake clock, so a test can age a URL instantly.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import quote

from fakediscord.fake_time import FakeClock

ROOT = "/cdn"
PATH = ROOT + "/attachments"


class Cdn:
    def __init__(self, clock: FakeClock, ttl: float) -> None:
        self._clock = clock
        self._ttl = ttl
        self._key = secrets.token_bytes(16)
        self.origin = ""

    def url_for(self, channel_id: int, attachment_id: int, filename: str) -> str:
        path = f"{PATH}/{channel_id}/{attachment_id}/{quote(filename)}"
        issued = int(self._clock.now())
        expires = int(issued + self._ttl)
        query = f"ex={expires:x}&is={issued:x}"
        return f"{self.origin}{path}?{query}&hm={self._sign(path, query)}"

    def valid(self, path: str, expires: str, issued: str, signature: str) -> bool:
        """True while the URL is unaltered and unexpired."""
        query = f"ex={expires}&is={issued}"
        if not hmac.compare_digest(self._sign(path, query), signature):
            return False
        try:
            return self._clock.now() < int(expires, 16)
        except ValueError:
            return False

    def _sign(self, path: str, query: str) -> str:
        return hmac.new(self._key, f"{path}?{query}".encode(), hashlib.sha256).hexdigest()
