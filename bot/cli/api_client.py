"""``brrrbot submit``: upload a file to the bot's API, wait for the verdict, print it.

Plain ``urllib``, so the command needs nothing the bot does not already install.  The output
and exit codes are ``brrrbot grade``'s (``bot.worker.local``); anything that keeps the
verdict from coming (no server, a refused token, a limit) is one line and exit 2.  Nothing
is checked here first: the server's intake decides every rule (the file's kind and size, the
task, the pace), and its refusal comes back as one line, so a rule lives in one place and a
client of another version cannot disagree with it.
"""

from __future__ import annotations

import json
import secrets
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bot.errors import UserError
from bot.worker.local import EXIT_CODES, read_file, render
from graders.base import Verdict

POLL_S = 1.0
REQUEST_TIMEOUT_S = 30.0


class Client:
    """The two calls ``brrrbot submit`` makes, with the API's errors as ``UserError``."""

    def __init__(self, url: str, token: str) -> None:
        self.base = url.rstrip("/")
        self.token = token

    def submit(self, filename: str, data: bytes, task_ref: str) -> dict[str, Any]:
        boundary = secrets.token_hex(16)
        body = _multipart(boundary, task_ref, filename, data)
        return self._call(
            "POST",
            "/api/v1/submissions",
            body,
            {"Content-Type": f"multipart/form-data; boundary={boundary}"},
        )

    def status(self, submission_id: int) -> dict[str, Any]:
        return self._call("GET", f"/api/v1/submissions/{submission_id}")

    def _call(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        request = urllib.request.Request(
            self.base + path,
            data=body,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", **(headers or {})},
        )
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
                return json.loads(response.read())  # type: ignore[no-any-return]
        except urllib.error.HTTPError as exc:
            raise UserError(_describe(exc)) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise UserError(
                f"cannot reach {self.base} ({reason}); check BRRRBOT_URL and that the bot runs"
            ) from None


def _describe(exc: urllib.error.HTTPError) -> str:
    """One line for an error answer: the API's own message, and what to do."""
    try:
        message = json.loads(exc.read())["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = exc.reason
    if exc.code == 401:
        return f"the server refused BRRRBOT_TOKEN: {message}"
    if exc.code == 429:
        wait = exc.headers.get("Retry-After")
        return f"{message}" + (f" (retry after {wait} s)" if wait else "")
    return f"{message} (HTTP {exc.code})"


def _multipart(boundary: str, task_ref: str, filename: str, data: bytes) -> bytes:
    quoted = filename.replace("\\", "\\\\").replace('"', '\\"')
    return b"".join(
        [
            f'--{boundary}\r\nContent-Disposition: form-data; name="task"\r\n\r\n'.encode(),
            task_ref.encode(),
            f"\r\n--{boundary}\r\n".encode(),
            f'Content-Disposition: form-data; name="file"; filename="{quoted}"\r\n'.encode(),
            b"Content-Type: application/octet-stream\r\n\r\n",
            data,
            f"\r\n--{boundary}--\r\n".encode(),
        ]
    )


def submit_command(
    client: Client,
    path: Path,
    task_ref: str,
    *,
    as_json: bool,
    timeout_s: float,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Upload, poll until the verdict and its XP are in (or ``timeout_s``), print like
    ``brrrbot grade``; the exit code is the verdict's."""
    queued = client.submit(path.name, read_file(path), task_ref)
    deadline = clock() + timeout_s
    while True:
        status = client.status(queued["id"])
        if status["verdict"] is not None and status["award"] is not None:
            break
        if clock() >= deadline:
            raise UserError(
                f"no verdict for submission #{queued['id']} within {timeout_s:g} s; it is still "
                f"{status['status']}, and its verdict will reach you in Discord"
            )
        time.sleep(POLL_S)
    verdict = Verdict.from_json(status["verdict"])
    print(render(verdict, as_json=as_json))
    xp = status["award"].get("xp_added", 0) + status["award"].get("streak_bonus", 0)
    if not as_json and xp:
        print(f"+{xp} XP (submission #{queued['id']})")
    return EXIT_CODES[verdict.status]
