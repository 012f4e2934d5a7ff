"""Reading request bodies the two ways discord.py sends them: JSON, or multipart with files.

Multipart carries the JSON in a ``payload_json`` part and each upload in a
``files[n]`` part; ``n`` is what the payload's ``attachments[].id`` refers to.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from aiohttp import BodyPartReader, web

from fakediscord import errors

FILE_PART = re.compile(r"^files\[(\d+)\]$")
#: the parsed JSON of a request, kept for the journal
PAYLOAD = web.RequestKey[Any]("payload")


@dataclass(frozen=True)
class Upload:
    index: int
    filename: str
    data: bytes


@dataclass
class Body:
    payload: dict[str, Any] = field(default_factory=dict)
    uploads: list[Upload] = field(default_factory=list)


async def read_body(request: web.Request) -> Body:
    """A message-like body: a JSON object, maybe with files."""
    if request.content_type.startswith("multipart/"):
        body = await _read_multipart(request)
        request[PAYLOAD] = body.payload
        return body
    payload = await read_json(request)
    if payload is None:
        return Body()
    if not isinstance(payload, dict):
        raise errors.invalid_json()
    return Body(payload=payload)


async def read_json(request: web.Request) -> Any:
    """Any JSON body (None when empty), kept on the request for the journal."""
    raw = await request.read()
    payload = _parse_json(raw) if raw else None
    request[PAYLOAD] = payload
    return payload


async def _read_multipart(request: web.Request) -> Body:
    body = Body()
    reader = await request.multipart()
    while (part := await reader.next()) is not None:
        if not isinstance(part, BodyPartReader):
            continue
        data = await part.read()
        match = FILE_PART.match(part.name or "")
        if part.name == "payload_json":
            payload = _parse_json(data)
            if not isinstance(payload, dict):
                raise errors.invalid_json()
            body.payload = payload
        elif match:
            body.uploads.append(
                Upload(
                    index=int(match.group(1)),
                    filename=part.filename or "file",
                    data=bytes(data),
                )
            )
    return body


def _parse_json(raw: bytes | bytearray) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        raise errors.invalid_json() from None
