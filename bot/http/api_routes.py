"""``/api/v1``: submit from a terminal (``brrrbot submit``) with a personal token.

``POST /api/v1/submissions`` goes through the same ``bot.intake.accept.submit`` as ``/submit``
(same validation, limits, rate limits, queue, XP and ledger) with no interaction to reply to,
so the verdict reaches the member in Discord by DM (else in the channel), and the caller polls
``GET /api/v1/submissions/{id}``.

Every error is JSON ``{"error": {"code", "message"}}`` with its status, never a traceback.
The routes check only what HTTP itself needs (the token, the media type, the body's size and
shape); every rule of a submission is intake's, and its ``Refused`` is answered with the status
``REFUSAL_STATUS`` gives its kind and the API's words for it (``refusal_error``).
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
from bot.db.states import SubmissionStatus
from bot.http.openapi import document
from bot.intake import accept
from bot.intake.refusals import (
    CodeTooLarge,
    ControlBytes,
    EmptyFile,
    HourlyLimit,
    InFlight,
    NotABuildTask,
    NotANotebook,
    NotUtf8,
    NulByte,
    OnlyWhitespace,
    RateLimited,
    Refusal,
    Refused,
    TooLarge,
    UnknownGrader,
    UnknownTask,
    WrongFileKind,
)
from bot.intake.submission_input import UploadLimits, check_upload, format_size
from bot.presentation.refusal_words import refusal_words
from bot.rest_api import tokens
from bot.rest_api.status import NotFound, NotYours, submission_status
from bot.rest_api.tokens import Caller, TokenRefused
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


_UNPROCESSABLE = (422, "unprocessable")
#: the status and code of each refusal ``accept.submit`` may answer (a test holds it to every
#: kind there is, so a new one cannot reach a caller as a 500)
REFUSAL_STATUS: dict[type[Refusal], tuple[int, str]] = {
    WrongFileKind: (415, "unsupported_media_type"),
    TooLarge: (413, "too_large"),
    EmptyFile: _UNPROCESSABLE,
    OnlyWhitespace: _UNPROCESSABLE,
    NulByte: _UNPROCESSABLE,
    ControlBytes: _UNPROCESSABLE,
    NotUtf8: _UNPROCESSABLE,
    NotANotebook: _UNPROCESSABLE,
    CodeTooLarge: _UNPROCESSABLE,
    UnknownTask: _UNPROCESSABLE,
    NotABuildTask: _UNPROCESSABLE,
    UnknownGrader: _UNPROCESSABLE,
    InFlight: (429, "rate_limited"),
    HourlyLimit: (429, "rate_limited"),
}


def refusal_error(refusal: Refusal) -> ApiError:
    """How the API answers ``refusal``: its status, a ``Retry-After`` when it is for now, and
    the shared words (``refusal_words``) but for the four the API words more tersely."""
    status, code = REFUSAL_STATUS[type(refusal)]
    match refusal:
        case WrongFileKind(filename=name):
            message = f"`{name[:80]}` is not a .py or .ipynb file"
        case TooLarge(filename=name, limit=limit):  # refused while reading: its size is unknown
            message = f"`{name[:80]}` is over the limit of {format_size(limit)}"
        case UnknownTask(ref=ref):
            message = f"there is no task `{ref[:100]}` in this server's map"
        case NotABuildTask(ref=ref, kind=kind):
            message = f"`{ref}` is a {kind} task, not graded code"
        case _:
            message = refusal_words(refusal)
    headers = (
        {"Retry-After": str(refusal.retry_after_s)} if isinstance(refusal, RateLimited) else None
    )
    return ApiError(status, code, message, headers)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Under ``/api/``: every error as JSON, an unexpected exception as a logged 500."""
    if not request.path.startswith("/api/"):
        return await handler(request)
    try:
        return await handler(request)
    except Refused as refused:
        exc = refusal_error(refused.refusal)
        return error_response(exc.status, exc.code, str(exc), exc.headers)
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
    return web.json_response(document(UploadLimits.of(request.app[SERVICES].settings).largest))


@api.post(f"{PREFIX}/submissions")
async def post_submission(request: web.Request) -> web.Response:
    caller = await _caller(request)
    services = request.app[SERVICES]
    settings = services.settings
    limits = UploadLimits.of(settings)
    if request.content_type != "multipart/form-data":
        raise ApiError(
            415,
            "unsupported_media_type",
            "send multipart/form-data with the fields `task` and `file`",
        )
    # HTTP's own bound on the body, before a byte of it is read; the file's is intake's
    largest = limits.largest
    if request.content_length is not None and request.content_length > largest + FRAMING_BYTES:
        raise ApiError(
            413, "too_large", f"the request is over the largest upload ({format_size(largest)})"
        )
    task_ref, filename, data = await _read_form(request, limits)
    queued = await accept.submit(  # its Refused is answered by ``json_errors``
        services.sessions,
        guild_id=caller.guild_id,
        submitter=accept.Submitter(caller.user_id, caller.display_name),
        guild_map=await services.guild_map(caller.guild_id),
        task_ref=task_ref,
        filename=filename,
        data=data,
        limits=limits,
        hourly_limit=settings.submissions_per_hour,
        reply=None,  # no interaction: the verdict goes by DM, else to the channel
        now=clock.now,
    )
    log.info("submission %d queued for %s (API)", queued.submission_id, queued.task_ref)
    location = f"{PREFIX}/submissions/{queued.submission_id}"
    body = {
        "id": queued.submission_id,
        "task": queued.task_ref,
        "status": SubmissionStatus.QUEUED.value,
        "position": queued.position,
    }
    return web.json_response(body, status=202, headers={"Location": location})


async def _read_form(request: web.Request, limits: UploadLimits) -> tuple[str, str, bytes]:
    """The ``task`` and ``file`` fields, reading the file in chunks so that one intake refuses
    (its kind, or over its limit) is refused before it is all in memory; a body that is not
    well-formed is 422."""
    try:
        return await _parse_form(request, limits)
    except (ValueError, HttpProcessingError) as exc:
        _unprocessable(f"the multipart body cannot be read ({str(exc).strip()[:200]})")


async def _parse_form(request: web.Request, limits: UploadLimits) -> tuple[str, str, bytes]:
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
            upload = (filename, await _read_file(part, filename, limits))
        else:
            _unprocessable(f"unexpected field `{(part.name or '')[:40]}`: send `task` and `file`")
    if not task_ref:
        _unprocessable("the field `task` (QUEST/TASK) is missing")
    if upload is None:
        _unprocessable("the field `file` (a .py or .ipynb file) is missing")
    return task_ref, *upload


async def _read_file(part: BodyPartReader, filename: str, limits: UploadLimits) -> bytes:
    """The file's bytes, intake asked about its name first and its size as it grows."""
    check_upload(filename, 0, limits)
    data = bytearray()
    while chunk := await part.read_chunk(CHUNK):
        data += chunk
        check_upload(filename, len(data), limits)
    return bytes(data)


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
