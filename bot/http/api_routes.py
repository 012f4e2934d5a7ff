"""``/api/v1``: submit from a terminal (``brrrbot submit``) with a personal token.

``POST /api/v1/submissions`` goes through the same ``bot.intake.accept.submit`` as ``/submit``
(same validation, limits, rate limits, queue, XP and ledger) with no interaction to reply to,
so the verdict reaches the member in Discord by DM (else in the channel), and the caller polls
``GET /api/v1/submissions/{id}``.

Every error is JSON ``{"error": {"code", "message"}}`` with its status, never a traceback.
Another member's (or another server's) submission is 403, not 404: ids are sequential, so
hiding that one exists protects nothing, and 403 tells the caller their token is the problem.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import NoReturn

from aiohttp import BodyPartReader, web
from aiohttp.http_exceptions import HttpProcessingError

from bot import clock
from bot.api import tokens
from bot.api.status import NotFound, NotYours, submission_status
from bot.api.tokens import Caller, TokenRefused
from bot.content import BuildTask
from bot.db.states import SubmissionStatus
from bot.http.openapi import document
from bot.intake import accept
from bot.intake.submission_input import ACCEPTED, format_size
from bot.services import Services

log = logging.getLogger(__name__)

PREFIX = "/api/v1"
SERVICES = web.AppKey("api-services", Services)
#: room for the multipart framing and the task field around the file
FRAMING_BYTES = 64 * 1024
MAX_TASK_CHARS = 200
#: submission ids are 32-bit; a larger one cannot exist (and must not reach the database)
MAX_ID = 2**31 - 1
CHUNK = 64 * 1024
#: "Bearer " and a token (62 characters), with room for stray whitespace; longer is not ours
MAX_AUTHORIZATION_CHARS = 256

api = web.RouteTableDef()


class ApiError(Exception):
    """Answered as ``{"error": {"code", "message"}}`` with ``status``."""

    def __init__(
        self, status: int, code: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.headers = headers or {}


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> web.Response:
    body = {"error": {"code": code, "message": message}}
    return web.json_response(body, status=status, headers=headers)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Under ``/api/``: every error as JSON, an unexpected exception as a logged 500."""
    if not request.path.startswith("/api/"):
        return await handler(request)
    try:
        return await handler(request)
    except ApiError as exc:
        return error_response(exc.status, exc.code, str(exc), exc.headers)
    except web.HTTPException as exc:  # the router's 404 and 405, aiohttp's 413
        if exc.status < 400:
            raise
        code = exc.reason.lower().replace(" ", "_")
        kept = {name: exc.headers[name] for name in ("Allow",) if name in exc.headers}
        return error_response(exc.status, code, exc.reason, kept)
    except Exception:
        log.exception("API request %s %s failed", request.method, request.path)
        return error_response(500, "internal_error", "something went wrong on our side")


def setup(services: Services) -> Callable[[web.Application], None]:
    """The ``bot.http.server`` setup that adds the API's routes and state."""

    def add(app: web.Application) -> None:
        app[SERVICES] = services
        app.middlewares.append(json_errors)
        app.add_routes(api)

    return add


async def _caller(request: web.Request) -> Caller:
    header = request.headers.get("Authorization", "")
    challenge = 'Bearer realm="brrrbot"'
    if len(header) > MAX_AUTHORIZATION_CHARS:
        _refuse_token(challenge, tokens.NOT_OURS)
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(
            401,
            "unauthorized",
            "send your token as `Authorization: Bearer <token>`; get one with /token new",
            {"WWW-Authenticate": challenge},
        )
    services = request.app[SERVICES]
    try:
        async with services.sessions() as session, session.begin():
            return await tokens.authenticate(session, token.strip(), clock.now())
    except TokenRefused as exc:
        _refuse_token(challenge, str(exc))


def _refuse_token(challenge: str, message: str) -> NoReturn:
    raise ApiError(
        401, "invalid_token", message, {"WWW-Authenticate": f'{challenge}, error="invalid_token"'}
    )


def _unprocessable(message: str) -> NoReturn:
    raise ApiError(422, "unprocessable", message)


@api.get(f"{PREFIX}/openapi.json")
async def openapi(request: web.Request) -> web.Response:
    limits = accept.UploadLimits.of(request.app[SERVICES].settings)
    return web.json_response(document(max(limits.max_py_bytes, limits.max_ipynb_bytes)))


@api.post(f"{PREFIX}/submissions")
async def post_submission(request: web.Request) -> web.Response:
    caller = await _caller(request)
    services = request.app[SERVICES]
    settings = services.settings
    limits = accept.UploadLimits.of(settings)
    if request.content_type != "multipart/form-data":
        raise ApiError(
            415,
            "unsupported_media_type",
            "send multipart/form-data with the fields `task` and `file`",
        )
    largest = max(limits.max_py_bytes, limits.max_ipynb_bytes)
    if request.content_length is not None and request.content_length > largest + FRAMING_BYTES:
        raise ApiError(
            413, "too_large", f"the request is over the largest upload ({format_size(largest)})"
        )
    task_ref, filename, data = await _read_form(request, limits)
    guild_map = await services.guild_map(caller.guild_id)
    try:
        quest, task = guild_map.find_task(task_ref)
    except KeyError:
        _unprocessable(f"there is no task `{task_ref[:100]}` in this server's map")
    if not isinstance(task, BuildTask):
        _unprocessable(f"`{task_ref}` is a {task.kind} task, not graded code")
    try:
        queued = await accept.submit(
            services.sessions,
            guild_id=caller.guild_id,
            submitter=accept.Submitter(caller.user_id, caller.display_name),
            quest=quest,
            task=task,
            filename=filename,
            data=data,
            limits=limits,
            hourly_limit=settings.submissions_per_hour,
            reply=None,  # no interaction: the verdict goes by DM, else to the channel
            now=clock.now,
        )
    except accept.RateLimited as exc:
        raise ApiError(
            429, "rate_limited", str(exc), {"Retry-After": str(exc.retry_after_s)}
        ) from None
    except accept.IntakeRefused as exc:
        _unprocessable(str(exc))
    log.info("submission %d queued for %s (API)", queued.submission_id, queued.task_ref)
    location = f"{PREFIX}/submissions/{queued.submission_id}"
    body = {
        "id": queued.submission_id,
        "task": queued.task_ref,
        "status": SubmissionStatus.QUEUED.value,
        "position": queued.position,
    }
    return web.json_response(body, status=202, headers={"Location": location})


async def _read_form(request: web.Request, limits: accept.UploadLimits) -> tuple[str, str, bytes]:
    """The ``task`` and ``file`` fields, reading the file in chunks so that one over its limit
    is refused (413) before it is all in memory; a body that is not well-formed is 422."""
    try:
        return await _parse_form(request, limits)
    except (ValueError, HttpProcessingError) as exc:
        _unprocessable(f"the multipart body cannot be read ({str(exc).strip()[:200]})")


async def _parse_form(request: web.Request, limits: accept.UploadLimits) -> tuple[str, str, bytes]:
    try:
        reader = await request.multipart()
    except (ValueError, AssertionError):  # a multipart type without a usable boundary
        raise ApiError(
            415, "unsupported_media_type", "the multipart body has no boundary"
        ) from None
    task_ref: str | None = None
    upload: tuple[str, bytes] | None = None
    while True:
        part = await reader.next()
        if part is None:
            break
        if not isinstance(part, BodyPartReader):
            _unprocessable("nested multipart bodies are not accepted")
        if part.name == "task" and task_ref is None:
            raw = await _read_part(part, MAX_TASK_CHARS * 4, "`task`")
            try:
                task_ref = raw.decode().strip()
            except UnicodeDecodeError:
                _unprocessable("`task` is not UTF-8 text")
        elif part.name == "file" and upload is None:
            filename = part.filename or ""
            if not filename:
                _unprocessable("`file` has no filename; send it as a file, e.g. solution.py")
            if not filename.lower().endswith(ACCEPTED):
                raise ApiError(
                    415,
                    "unsupported_media_type",
                    f"`{filename[:80]}` is not a .py or .ipynb file",
                )
            upload = (filename, await _read_part(part, limits.cap(filename), f"`{filename[:80]}`"))
        else:
            _unprocessable(f"unexpected field `{(part.name or '')[:40]}`: send `task` and `file`")
    if not task_ref:
        _unprocessable("the field `task` (QUEST/TASK) is missing")
    if upload is None:
        _unprocessable("the field `file` (a .py or .ipynb file) is missing")
    return task_ref, *upload


async def _read_part(part: BodyPartReader, cap: int, what: str) -> bytes:
    data = bytearray()
    while chunk := await part.read_chunk(CHUNK):
        data += chunk
        if len(data) > cap:
            raise ApiError(413, "too_large", f"{what} is over the limit of {format_size(cap)}")
    return bytes(data)


@api.get(PREFIX + "/submissions/{id}")
async def get_submission(request: web.Request) -> web.Response:
    caller = await _caller(request)
    raw = request.match_info["id"]
    if not raw.isascii() or not raw.isdigit() or not 0 < int(raw) <= MAX_ID:
        raise ApiError(404, "not_found", f"there is no submission {raw[:20]!r}")
    services = request.app[SERVICES]
    try:
        async with services.reads() as session:
            status = await submission_status(session, caller, int(raw))
    except NotFound:
        raise ApiError(404, "not_found", f"there is no submission #{raw}") from None
    except NotYours:
        raise ApiError(
            403, "forbidden", f"submission #{raw} is not yours (or not in this token's server)"
        ) from None
    return web.json_response(status.to_json())
