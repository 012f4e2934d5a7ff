"""The API's OpenAPI 3.1 document, written as data: the contract ``brrrbot submit`` and the
property-based tests read, kept beside the routes it describes (``bot.http.api_routes``)."""

from __future__ import annotations

from typing import Any

from bot.db.states import SubmissionStatus

_ERROR_REF = {"$ref": "#/components/schemas/Error"}


def _error(description: str, **headers: dict[str, Any]) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": description,
        "content": {"application/json": {"schema": _ERROR_REF}},
    }
    if headers:
        response["headers"] = headers
    return response


_RETRY_AFTER = {"description": "seconds to wait", "schema": {"type": "integer", "minimum": 1}}
_WWW_AUTHENTICATE = {"description": "Bearer challenge", "schema": {"type": "string"}}
_UNAUTHORIZED = _error(
    "missing, unknown or revoked token", **{"WWW-Authenticate": _WWW_AUTHENTICATE}
)


def document(max_upload_bytes: int) -> dict[str, Any]:
    """The document for a server whose largest accepted upload is ``max_upload_bytes``."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "brrrbot",
            "version": "1",
            "description": "Submit solutions to build tasks from a terminal. Authenticate with "
            "the personal token from `/token new` in your server (`Authorization: Bearer ...`); "
            "the verdict also reaches you in Discord.",
        },
        "components": {
            "securitySchemes": {"token": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {
                        "error": {
                            "type": "object",
                            "required": ["code", "message"],
                            "properties": {
                                "code": {"type": "string"},
                                "message": {"type": "string"},
                            },
                        }
                    },
                },
                "Queued": {
                    "type": "object",
                    "required": ["id", "task", "status", "position"],
                    "properties": {
                        "id": {"type": "integer"},
                        "task": {"type": "string"},
                        "status": {"const": SubmissionStatus.QUEUED.value},
                        "position": {"type": "integer", "minimum": 1},
                    },
                },
                "Submission": {
                    "type": "object",
                    "required": [
                        "id",
                        "task",
                        "status",
                        "created_at",
                        "finished_at",
                        "verdict",
                        "award",
                    ],
                    "properties": {
                        "id": {"type": "integer"},
                        "task": {"type": "string"},
                        "status": {"enum": [status.value for status in SubmissionStatus]},
                        "created_at": {"type": "string", "format": "date-time"},
                        "finished_at": {"type": ["string", "null"], "format": "date-time"},
                        "verdict": {
                            "description": "the verdict, as `brrrbot grade --json` prints it",
                            "type": ["object", "null"],
                        },
                        "award": {
                            "description": "the XP it earned, once paid",
                            "type": ["object", "null"],
                        },
                    },
                },
            },
        },
        "security": [{"token": []}],
        "paths": {
            "/api/v1/submissions": {
                "post": {
                    "operationId": "submit",
                    "summary": "Queue a .py or .ipynb file for grading as a build task",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "multipart/form-data": {
                                "schema": {
                                    "type": "object",
                                    "required": ["task", "file"],
                                    "additionalProperties": False,
                                    "properties": {
                                        "task": {
                                            "type": "string",
                                            "description": "QUEST/TASK, e.g. "
                                            "go-brrrr/matmul-three-ways",
                                        },
                                        "file": {
                                            "type": "string",
                                            "format": "binary",
                                            "maxLength": max_upload_bytes,
                                        },
                                    },
                                }
                            }
                        },
                    },
                    "responses": {
                        "202": {
                            "description": "queued; poll its Location",
                            "headers": {"Location": {"schema": {"type": "string"}}},
                            "content": {
                                "application/json": {
                                    "schema": {"$ref": "#/components/schemas/Queued"}
                                }
                            },
                        },
                        "401": _UNAUTHORIZED,
                        "413": _error("the file is over the limit for its kind"),
                        "415": _error("not multipart/form-data, or not a .py/.ipynb file"),
                        "422": _error("a missing or bad field, an unknown or ungraded task"),
                        "429": _error(
                            "one submission in flight, or the hourly limit reached",
                            **{"Retry-After": _RETRY_AFTER},
                        ),
                    },
                }
            },
            "/api/v1/submissions/{id}": {
                "get": {
                    "operationId": "submission",
                    "summary": "A submission's status, verdict and XP",
                    "parameters": [
                        {
                            "name": "id",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "integer", "minimum": 1},
                        }
                    ],
                    "responses": {
                        "200": {
                            "description": "the submission",
                            "content": {
                                "application/json": {
                                    "schema": {"$ref": "#/components/schemas/Submission"}
                                }
                            },
                        },
                        "401": _UNAUTHORIZED,
                        "403": _error("another member's or another server's submission"),
                        "404": _error("no submission has this id"),
                    },
                }
            },
            "/api/v1/openapi.json": {
                "get": {
                    "operationId": "openapi",
                    "summary": "This document",
                    "security": [],
                    "responses": {"200": {"description": "the OpenAPI document"}},
                }
            },
        },
    }
