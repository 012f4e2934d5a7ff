"""The API's Authorization header is capped at 256 characters before anything parses it
(docs/operators/api.md): a longer one is refused as not a token without reaching the token
store, a header of exactly 256 characters is looked up."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bot.http.api_routes import SERVICES, ApiError, _caller

#: "the header is capped at 256 characters", as the page says it
CAP = 256


class Reached(Exception):
    """The header got past the cap: the token store was asked."""


class TokenStore:
    def sessions(self) -> object:
        raise Reached


def _request(header: str) -> SimpleNamespace:
    return SimpleNamespace(headers={"Authorization": header}, app={SERVICES: TokenStore()})


async def test_a_header_over_256_characters_is_refused_before_it_is_parsed() -> None:
    header = "Bearer brrr_1_" + "a" * 43
    padded = header + " " * (CAP + 1 - len(header))  # whitespace a lookup would strip
    assert len(padded) == CAP + 1
    print(f"ATTACK: an Authorization header of {len(padded)} characters")
    with pytest.raises(ApiError) as refused:
        await _caller(_request(padded))  # type: ignore[arg-type]
    assert (refused.value.status, refused.value.code) == (401, "invalid_token")
    assert refused.value.headers["WWW-Authenticate"].startswith("Bearer")


async def test_a_header_of_256_characters_is_looked_up() -> None:
    header = "Bearer brrr_1_" + "a" * 43
    with pytest.raises(Reached):
        await _caller(_request(header + " " * (CAP - len(header))))  # type: ignore[arg-type]
