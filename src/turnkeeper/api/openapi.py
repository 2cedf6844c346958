"""The OpenAPI document served at `/openapi.json`."""

from __future__ import annotations

from typing import Any

ERROR = {"$ref": "#/components/schemas/Error"}
BEARER: list[dict[str, list[str]]] = [{"bearer": []}]
QUESTION = {
    "type": "string",
    "description": "Some text that is not only whitespace, without NUL characters.",
    "pattern": "^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$",
}
AFTER = {"type": "integer", "minimum": 0, "maximum": 10**18 - 1}


def _answer(description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    if schema is None:
        return {"description": description}
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*codes: int) -> dict[str, Any]:
    return {str(c): _answer("error", ERROR) for c in codes}


def _id(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


DOCUMENT: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "turnkeeper", "version": "1"},
    "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        "schemas": {
            "Error": {
                "type": "object",
                "required": ["error"],
                "properties": {"error": {"type": "string"}},
            },
            "State": {
                "type": "object",
                "description": "The published state of a turn (ARCHITECTURE §5).",
                "required": ["turn_id", "conversation_id", "version", "status", "done"],
                "properties": {
                    "turn_id": {"type": "string"},
                    "conversation_id": {"type": "string"},
                    "version": {"type": "integer"},
                    "status": {"type": "string"},
                    "done": {"type": "boolean"},
                    "stopped": {"type": "boolean"},
                    "has_error": {"type": "boolean"},
                    "activity": {"type": ["string", "null"]},
                    "messages": {"type": "array", "items": {"type": "object"}},
                    "usage": {"type": "object"},
                },
            },
        },
    },
    "paths": {
        "/api/conversations": {
            "post": {
                "summary": "Start a conversation; keep its token.",
                "responses": {
                    "201": _answer(
                        "created",
                        {
                            "type": "object",
                            "properties": {
                                "conversation_id": {"type": "string"},
                                "token": {"type": "string"},
                            },
                        },
                    ),
                    **_errors(413),
                },
            }
        },
        "/api/conversations/{conversation_id}": {
            "get": {
                "summary": "The display transcript of every turn, oldest first.",
                "security": BEARER,
                "parameters": [_id("conversation_id")],
                "responses": {"200": _answer("transcript", {"type": "object"}), **_errors(404)},
            }
        },
        "/api/conversations/{conversation_id}/turns": {
            "post": {
                "summary": "Queue a turn.",
                "security": BEARER,
                "parameters": [_id("conversation_id")],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["text"],
                                "properties": {"text": QUESTION},
                            }
                        }
                    },
                },
                "responses": {
                    "202": _answer(
                        "queued", {"type": "object", "properties": {"turn_id": {"type": "string"}}}
                    ),
                    **_errors(400, 404, 409, 413, 415, 503),
                },
            }
        },
        "/api/turns/{turn_id}": {
            "get": {
                "summary": "The published state; 204 while its version is not above `after`.",
                "security": BEARER,
                "parameters": [
                    _id("turn_id"),
                    {"name": "after", "in": "query", "schema": AFTER},
                ],
                "responses": {
                    "200": _answer("state", {"$ref": "#/components/schemas/State"}),
                    "204": _answer("nothing newer"),
                    **_errors(400, 404),
                },
            }
        },
        "/api/turns/{turn_id}/cancel": {
            "post": {
                "summary": "Stop the turn before its next model call.",
                "security": BEARER,
                "parameters": [_id("turn_id")],
                "responses": {"202": _answer("cancel requested"), **_errors(404)},
            }
        },
    },
}
