"""The REST API and ``brrrbot submit`` through the real bot, the fake Discord and real HTTP.

Tokens come from the fake's ``/token new``; a submission over the API gets the same verdict,
XP and single ledger row as ``/submit``, and its verdict also reaches the member by DM.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import socket
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest
import pytest_asyncio

from fakediscord import Channel, Guild, User
from tests.bot.conftest import CORRECT, World, start_world
from tests.support import BUILD_TASK, run_cli

pytestmark = pytest.mark.asyncio(loop_scope="module")

SUBMISSIONS = "/api/v1/submissions"
TOKEN = re.compile(r"brrr_[0-9a-z]+_[A-Za-z0-9_-]{43}")
MAX_PY_BYTES = 4096
FUZZ_HOOKS = Path(__file__).with_name("schemathesis_tokens.py")
BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


@dataclass
class Api:
    world: World
    url: str
    http: aiohttp.ClientSession
    other: Guild  # a second server the bot is in
    other_channel: Channel

    async def token(self, user: User, guild: Guild | None = None) -> str:
        """``user`` runs ``/token new`` (in ``guild``) and reads the token off the reply."""
        guild = guild or self.world.guild
        channel = self.world.quests if guild is self.world.guild else self.other_channel
        handle = await self.world.fake.invoke_slash(guild, channel, user, "token new")
        reply = await handle.original(timeout=15)
        assert reply.ephemeral and "BRRRBOT_TOKEN" in reply.content
        return TOKEN.findall(reply.content)[0]

    async def post(
        self,
        token: str | None,
        data: bytes = CORRECT,
        *,
        filename: str = "solution.py",
        task: str | None = BUILD_TASK,
    ) -> tuple[int, dict[str, object], aiohttp.typedefs.LooseHeaders]:
        form = aiohttp.FormData()
        if task is not None:
            form.add_field("task", task)
        form.add_field("file", data, filename=filename)
        return await self.call("POST", SUBMISSIONS, token, data=form)

    async def call(
        self, method: str, path: str, token: str | None, **kwargs: object
    ) -> tuple[int, dict[str, object], aiohttp.typedefs.LooseHeaders]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with self.http.request(method, self.url + path, headers=headers, **kwargs) as r:
            assert r.content_type == "application/json", await r.text()
            return r.status, await r.json(), r.headers

    async def verdict(self, token: str, submission_id: int) -> dict[str, object]:
        """Poll until the submission has its verdict and XP (a generous deadline)."""
        async with asyncio.timeout(90):
            while True:
                status, body, _ = await self.call("GET", f"{SUBMISSIONS}/{submission_id}", token)
                assert status == 200, body
                if body["award"] is not None:
                    return body
                await asyncio.sleep(0.2)


def _free_port() -> int:
    with closing(socket.socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Api]:
    port = _free_port()
    env = {"HTTP_PORT": str(port), "MAX_PY_BYTES": str(MAX_PY_BYTES)}
    async for world in start_world(tmp_path_factory.mktemp("api"), workers=1, extra_env=env):
        other = world.fake.add_guild("another study group")
        channel = world.fake.add_channel(other, "general")
        async with aiohttp.ClientSession() as http:
            yield Api(world, f"http://127.0.0.1:{port}", http, other, channel)


def _ledger(world: World, user: User) -> list[tuple[str, int]]:
    with closing(sqlite3.connect(world.database)) as db:
        return db.execute(
            "SELECT source, amount FROM xp_ledger JOIN members ON members.id = member_id"
            " WHERE members.user_id = ?",
            (user.id,),
        ).fetchall()


async def test_submit_over_http_is_graded_paid_once_and_told_in_discord(api: Api) -> None:
    learner = api.world.learner()
    token = await api.token(learner)
    status, body, headers = await api.post(token)
    assert status == 202, body
    assert headers["Location"] == f"{SUBMISSIONS}/{body['id']}"
    assert (body["task"], body["status"]) == (BUILD_TASK, "queued")
    # one in flight, as for /submit: 429 with when to try again
    status, refused, headers = await api.post(token)
    assert status == 429 and "still being graded" in refused["error"]["message"]
    assert int(headers["Retry-After"]) > 0
    done = await api.verdict(token, body["id"])
    assert done["status"] == "passed" and done["verdict"]["status"] == "passed"
    assert done["award"]["xp_added"] == 60
    dm = await api.world.fake.wait_for_dm(learner, lambda m: m.content.startswith("Passed"), 60)
    assert "+60 XP" in dm.content
    assert _ledger(api.world, learner) == [("task", 60)]


async def test_brrrbot_submit_prints_the_verdict_as_grade_does(api: Api) -> None:
    learner = api.world.learner()
    token = await api.token(learner)
    workdir = api.world.workdir / "learner"
    workdir.mkdir()
    (workdir / "solution.py").write_bytes(CORRECT)
    env = {"BRRRBOT_URL": api.url, "BRRRBOT_TOKEN": token}
    args = ("submit", "solution.py", "--task", BUILD_TASK, "--json", "--timeout", "90")
    result = await asyncio.to_thread(run_cli, *args, cwd=workdir, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    verdict = json.loads(result.stdout)
    assert (verdict["task"], verdict["status"]) == (BUILD_TASK, "passed")
    # a refused token: one line, exit 2
    env["BRRRBOT_TOKEN"] = token[:-1] + ("x" if token[-1] != "x" else "y")  # same shape
    refused = await asyncio.to_thread(run_cli, *args[:4], cwd=workdir, env=env)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        "brrrbot: error: the server refused BRRRBOT_TOKEN: unknown token; get a new one with "
        "/token new"
    ]
    # nothing listening: one line, exit 2
    env["BRRRBOT_URL"] = f"http://127.0.0.1:{_free_port()}"
    down = await asyncio.to_thread(run_cli, *args[:4], cwd=workdir, env=env)
    assert down.returncode == 2 and "cannot reach http://127.0.0.1:" in down.stderr
    assert "Traceback" not in down.stderr + refused.stderr


@pytest.mark.parametrize(
    ("header", "why"),
    [
        (None, "Authorization: Bearer"),
        ("Basic dXNlcjpwYXNz", "Authorization: Bearer"),
        ("Bearer nonsense", "not a brrrbot API token"),
        ("Bearer brrr_1_" + "a" * 43, "unknown token"),
    ],
)
async def test_no_usable_token_is_401_with_a_challenge(
    api: Api, header: str | None, why: str
) -> None:
    headers = {"Authorization": header} if header else {}
    for method, path in [("POST", SUBMISSIONS), ("GET", f"{SUBMISSIONS}/1")]:
        async with api.http.request(method, api.url + path, headers=headers) as response:
            assert response.status == 401
            assert response.headers["WWW-Authenticate"].startswith("Bearer")
            assert why in (await response.json())["error"]["message"]


async def test_a_server_part_of_thousands_of_digits_is_401_json_without_a_traceback(
    api: Api,
) -> None:
    """Python's ``int`` refuses a string of more than 4300 digits: such a token once answered
    500 and logged a traceback on every request."""
    server = "".join(random.choices(BASE36, k=5000))
    with pytest.raises(ValueError, match="digits"):
        int(server, 36)  # the parse the token must not reach
    attack = f"brrr_{server}_x"
    learner = api.world.learner()
    token = await api.token(learner)
    logged = len(api.world.bot.lines)
    print("ATTACK: a bearer token with a 5000-digit base-36 server part")
    for method, path in [("POST", SUBMISSIONS), ("GET", f"{SUBMISSIONS}/1")]:
        status, body, headers = await api.call(method, path, attack)
        print(f"{method} {path}: {status} {body}")
        assert status == 401 and body["error"]["code"] == "invalid_token", body
        assert headers["WWW-Authenticate"].startswith("Bearer")
    # a request that logs, after the attack's: its line read means theirs were read too
    status, queued, _ = await api.post(token, b"def matmul(:\n")
    assert status == 202, queued
    await api.world.bot.wait_for_output(f"submission {queued['id']} queued")
    since = "\n".join(api.world.bot.lines[logged:])
    assert "Traceback" not in since and "API request" not in since, since


async def test_revoked_tokens_are_401_by_the_member_or_a_moderator(api: Api) -> None:
    learner = api.world.learner()
    token = await api.token(learner)
    revoke = await api.world.slash(learner, "token revoke")
    assert "revoked" in (await revoke.original(timeout=15)).content
    status, body, _ = await api.call("GET", f"{SUBMISSIONS}/1", token)
    assert status == 401 and "revoked" in body["error"]["message"]
    token = await api.token(learner)  # a new one works again, until a moderator revokes it
    assert (await api.call("GET", f"{SUBMISSIONS}/999999", token))[0] == 404
    by_mod = await api.world.slash(api.world.owner, "admin token-revoke", member=learner)
    assert "revoked" in (await by_mod.original(timeout=15)).content
    assert (await api.call("GET", f"{SUBMISSIONS}/999999", token))[0] == 401


async def test_another_members_or_another_servers_submission_is_403(api: Api) -> None:
    owner, other = api.world.learner(), api.world.learner()
    api.world.fake.add_member(api.other, other)
    status, body, _ = await api.post(await api.token(owner), b"def matmul(:\n")
    assert status == 202, body  # graded (and failed) later; here only its id matters
    path = f"{SUBMISSIONS}/{body['id']}"
    same_server = await api.token(other)
    other_server = await api.token(other, api.other)
    assert other_server.split("_")[1] != same_server.split("_")[1]
    for token in (same_server, other_server):
        status, refused, _ = await api.call("GET", path, token)
        assert status == 403 and "not yours" in refused["error"]["message"]
    # the other server's map has the task too, but the submission lands in that server
    status, there, _ = await api.post(other_server)
    assert status == 202
    assert (await api.call("GET", f"{SUBMISSIONS}/{there['id']}", same_server))[0] == 403


async def test_every_bad_request_gets_its_status_and_a_json_error(api: Api) -> None:
    token = await api.token(api.world.learner())
    cases = [
        (await api.post(token, b"x = 1\n" * 1000), 413, "over the limit of 4 KiB"),
        (await api.post(token, filename="notes.txt"), 415, "not a .py or .ipynb file"),
        (
            await api.call("POST", SUBMISSIONS, token, json={"task": BUILD_TASK}),
            415,
            "multipart/form-data",
        ),
        (await api.post(token, task=None), 422, "`task`"),
        (await api.post(token, task="go-brrrr/no-such-task"), 422, "no task"),
        (await api.post(token, task="go-brrrr/shape-predictions"), 422, "quiz task"),
        (await api.post(token, b"   \n"), 422, "only whitespace"),
        (await api.call("GET", f"{SUBMISSIONS}/999999", token), 404, "no submission"),
        (await api.call("GET", f"{SUBMISSIONS}/99999999999999999999", token), 404, "no sub"),
        (await api.call("GET", "/api/v1/nothing-here", token), 404, "Not Found"),
        (await api.call("DELETE", f"{SUBMISSIONS}/1", token), 405, "Method Not Allowed"),
    ]
    for (status, body, _), expected, words in cases:
        assert status == expected, body
        assert words in body["error"]["message"], body
        assert body["error"]["code"]


async def test_the_api_describes_itself(api: Api) -> None:
    status, document, _ = await api.call("GET", "/api/v1/openapi.json", None)
    assert status == 200 and document["openapi"].startswith("3.1")
    assert set(document["paths"]) == {SUBMISSIONS, f"{SUBMISSIONS}/{{id}}", "/api/v1/openapi.json"}
    post = document["paths"][SUBMISSIONS]["post"]
    assert set(post["responses"]) == {"202", "401", "413", "415", "422", "429"}


def _schemathesis(
    url: str, token: str, cwd: Path, record: Path
) -> subprocess.CompletedProcess[str]:
    """Schemathesis's CLI (it keeps its example database in ``cwd``), with the hooks that draw
    each request's ``Authorization`` header, the live token among its shapes."""
    checks = "not_a_server_error,status_code_conformance,response_schema_conformance"
    command = [
        *(sys.executable, "-c", "from schemathesis.cli import schemathesis; schemathesis()"),
        *("run", f"{url}/api/v1/openapi.json", "--checks", checks),
        *("--max-examples", "60", "--seed", "15", "--request-timeout", "30"),
    ]
    env = {
        **os.environ,
        "SCHEMATHESIS_HOOKS": str(FUZZ_HOOKS),
        "BRRRBOT_FUZZ_TOKEN": token,
        "BRRRBOT_FUZZ_RECORD": str(record),
    }
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


async def test_requests_generated_from_the_document_never_get_a_server_error(api: Api) -> None:
    token = await api.token(api.world.learner())
    record = api.world.workdir / "fuzzed-calls.jsonl"
    print("ATTACK: schemathesis with generated Authorization headers, huge server parts among them")
    result = await asyncio.to_thread(_schemathesis, api.url, token, api.world.workdir, record)
    assert result.returncode == 0, result.stdout[-12000:] + result.stderr[-2000:]
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    statuses = Counter(call["status"] for call in calls)
    print(f"{len(calls)} calls by status: {dict(sorted(statuses.items()))}")
    assert not [status for status in statuses if status >= 500]
    # the shapes that matter were sent: the live token, and server parts past Python's limit
    # on the digits ``int`` parses (4300), each refused as a token
    assert any(call["live"] and call["status"] != 401 for call in calls)
    huge = [call for call in calls if call["server_digits"] > sys.get_int_max_str_digits()]
    assert huge and {call["status"] for call in huge} == {401}
