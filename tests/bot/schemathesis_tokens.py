"""Schemathesis hooks (``SCHEMATHESIS_HOOKS``) for the API fuzzing in ``test_api``.

Every generated request carries an ``Authorization`` header drawn from many shapes, the live
token among them, so the fuzzing reaches authentication too: the attacker chooses the header.
Each call is recorded (the header's shape and the status) in ``BRRRBOT_FUZZ_RECORD``, one JSON
line per call, so the test can tell which shapes were sent and what they got.  Loaded from its
path by Schemathesis, it imports nothing of the project's.
"""

from __future__ import annotations

import json
import os
from typing import Any

import schemathesis
from hypothesis import strategies as st

TOKEN = os.environ["BRRRBOT_FUZZ_TOKEN"]
RECORD = os.environ["BRRRBOT_FUZZ_RECORD"]
BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"
URLSAFE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
#: printable ASCII: what an HTTP client sends in a header value as it is
PRINTABLE = st.characters(min_codepoint=0x20, max_codepoint=0x7E)
#: a long token still fits aiohttp's 8190-byte header line, so it reaches the API's own code
MAX_DIGITS = 6000

_, LIVE_SERVER, LIVE_SECRET = TOKEN.split("_", 2)

#: server parts of a snowflake's length or so, and of thousands of digits: around and past
#: Python's limit on the digits ``int`` parses (4300)
_servers = st.one_of(
    st.text(BASE36, max_size=20),
    st.builds(
        lambda head, repeat, digit: head + digit * repeat,
        st.text(BASE36, max_size=20),
        st.integers(4000, MAX_DIGITS),
        st.sampled_from(BASE36),
    ),
)
_secrets = st.one_of(st.just(LIVE_SECRET), st.text(URLSAFE, max_size=60), st.text(PRINTABLE))
_tokens = st.one_of(
    st.just(TOKEN),
    st.builds("brrr_{}_{}".format, _servers, _secrets),
    st.builds("brrr_{}_{}".format, st.just(LIVE_SERVER), _secrets),
    st.builds("brrr_{}_{}".format, _servers, st.just(LIVE_SECRET)),
    st.text(PRINTABLE, max_size=100),
)
AUTHORIZATIONS = st.one_of(
    _tokens.map("Bearer {}".format),
    st.builds("{} {}".format, st.sampled_from(["bearer", "BEARER", "Basic", "Token"]), _tokens),
    st.text(PRINTABLE, max_size=300),
)


@schemathesis.hook
def flatmap_headers(context: Any, headers: dict[str, Any] | None) -> st.SearchStrategy[Any]:
    base = dict(headers or {})
    base.pop("Authorization", None)
    # a client refuses to send a header value that starts with whitespace
    return AUTHORIZATIONS.map(lambda value: {**base, "Authorization": value.lstrip()})


@schemathesis.hook
def after_call(context: Any, case: Any, response: Any) -> None:
    header = (case.headers or {}).get("Authorization", "")
    _, _, token = header.partition(" ")
    server = token.split("_")[1] if token.count("_") >= 2 else ""
    shape = {
        "live": header == f"Bearer {TOKEN}",
        "header_chars": len(header),
        "server_digits": len(server) if not server.strip(BASE36) else 0,
        "status": response.status_code,
    }
    with open(RECORD, "a", encoding="utf-8") as record:
        record.write(json.dumps(shape) + "\n")
