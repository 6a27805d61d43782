"""The OpenAPI 3 description of ``kassign serve`` (served at ``GET /openapi.json``)."""

from __future__ import annotations

from typing import Any

from spark_runner.serve.request import (
    DEADLINE_MS_RANGE,
    DEFAULT_DEADLINE_MS,
    REQUEST_KEYS,
    TOLERANCE_RANGE,
    WEIGHT_SOURCES,
)

_ERROR = {"$ref": "#/components/schemas/Error"}


def _err(what: str) -> dict[str, Any]:
    return {"description": what, "content": {"application/json": {"schema": _ERROR}}}


def openapi_document(cfg: Any = None) -> dict[str, Any]:
    """The OpenAPI 3.1 document; ``cfg`` (a :class:`~spark_runner.serve.server.ServeConfig`) fills in the limits.

    Examples
    --------
    >>> doc = openapi_document()
    >>> doc["openapi"], sorted(doc["paths"])
    ('3.1.0', ['/healthz', '/metrics', '/openapi.json', '/v1/assign'])
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("kassign")
    except PackageNotFoundError:
        v = "0+unknown"
    max_body = getattr(cfg, "max_body", 64 << 20)
    read_timeout = getattr(cfg, "read_timeout", 10.0)
    lo, hi = DEADLINE_MS_RANGE
    request = {
        "type": "object",
        "additionalProperties": False,
        "required": ["instance"],
        "properties": {
            "instance": {"type": "object", "description": "A kassign/v1 instance, consumer or streams protocol, "
                                                          "exactly as `kassign assign` reads it (docs/format.md)."},
            "assignor": {"type": "string", "description": "A registered assignor (`kassign list`). Default: "
                                                          "`optimal`, `optimal-streams` for protocol streams."},
            "deadline_ms": {"type": "integer", "minimum": lo, "maximum": hi, "default": DEFAULT_DEADLINE_MS,
                            "description": "Milliseconds from the body's last byte to the answer."},
            "balance_tolerance": {"type": ["number", "null"], "minimum": TOLERANCE_RANGE[0],
                                  "maximum": TOLERANCE_RANGE[1], "default": None,
                                  "description": "`optimal` only: the fewest moves with max load <= (1 + EPS) x the "
                                                 "best; null: the strict optimum (the CLI's default)."},
            "fallback": {"type": "string", "description": "Kafka's assignor to compare with and fall back on. "
                                                          "Default: `uniform`, `high-availability` for streams."},
            "weights": {"type": "object", "additionalProperties": False,
                        "properties": {"source": {"type": "string", "enum": list(WEIGHT_SOURCES),
                                                  "default": "request"},
                                       "group": {"type": "string", "minLength": 1, "maxLength": 255,
                                                 "description": "source admin: the consumer group whose lag "
                                                                "weighs the partitions (default: the instance's "
                                                                "name)."}}},
        },
    }
    assert set(request["properties"]) == set(REQUEST_KEYS)  # type: ignore[call-overload]
    stats = {"type": "object", "required": ["status", "objective", "bound", "seconds"],
             "properties": {"status": {"type": "string", "enum": ["optimal", "feasible", "heuristic"]},
                            "objective": {"type": "array", "items": {"type": ["number", "null"]}},
                            "bound": {"type": "array", "items": {"type": ["number", "null"]}},
                            "seconds": {"type": "number", "minimum": 0}}}
    service = {"type": "object", "required": ["fallback", "reason", "deadline_ms", "elapsed_ms"],
               "properties": {"fallback": {"type": "boolean"}, "reason": {"type": ["string", "null"]},
                              "deadline_ms": {"type": "integer"}, "elapsed_ms": {"type": "integer", "minimum": 0},
                              "weights": {"type": "string", "enum": list(WEIGHT_SOURCES)}}}
    answer = {"type": "object", "required": ["format", "assignor", "assignment", "stats", "service"],
              "properties": {"format": {"const": "kassign/v1"}, "assignor": {"type": "string"},
                             "assignment": {"type": "object", "description": "Consumer: member -> topic -> "
                                            "[partition]; Streams: client -> {active, standby, warmup}."},
                             "probing_rebalance": {"type": "boolean"},
                             "stats": {"$ref": "#/components/schemas/Stats"},
                             "service": {"$ref": "#/components/schemas/Service"}}}
    error = {"type": "object", "required": ["error", "path"],
             "properties": {"error": {"type": "string"}, "path": {"type": "string", "description":
                                                                  "JSON path of the field ('' for the whole body)."},
                            "problems": {"type": "array", "items": {
                                "type": "object", "properties": {"path": {"type": "string"},
                                                                 "error": {"type": "string"}}}}}}
    return {
        "openapi": "3.1.0",
        "info": {"title": "kassign serve", "version": v,
                 "description": "Provably optimal Kafka assignments within a deadline, never worse than Kafka's "
                                "own assignor on max load, then moved cost. See docs/serve.md."},
        "paths": {
            "/v1/assign": {"post": {
                "operationId": "assign",
                "summary": "Assign one group's partitions or tasks.",
                "requestBody": {"required": True, "description": f"At most {max_body:,} bytes, sent within "
                                f"{read_timeout:g} seconds, with a Content-Length.",
                                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Request"}}}},
                "responses": {
                    "200": {"description": "What `kassign assign` writes, plus `service`.",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Answer"}}}},
                    "400": _err("Malformed JSON (where it breaks), or a body that ended early."),
                    "404": _err("No such path."),
                    "408": _err("The request did not arrive within the read timeout."),
                    "411": _err("No Content-Length."),
                    "413": _err("The body is over the limit."),
                    "422": _err("A field out of range, or an invalid instance (`kassign validate`'s messages, "
                                "paths under `instance.`)."),
                    "429": _err("The queue of requests waiting for a worker is full; retry after Retry-After."),
                    "500": _err("Neither the optimum nor Kafka's assignor gave an assignment."),
                    "503": _err("Too many connections or bodies held, or no answer within the deadline."),
                }}},
            "/healthz": {"get": {"operationId": "health", "summary": "Liveness.", "responses": {"200": {
                "description": "Up.", "content": {"application/json": {"schema": {
                    "type": "object", "properties": {"status": {"const": "ok"}}}}}}}}},
            "/metrics": {"get": {"operationId": "metrics", "summary": "Prometheus text exposition.",
                                 "responses": {"200": {"description": "kassign_requests_total, "
                                                       "kassign_request_seconds, kassign_fallbacks_total, "
                                                       "kassign_proven_total, kassign_inflight ...",
                                                       "content": {"text/plain": {"schema": {"type": "string"}}}}}}},
            "/openapi.json": {"get": {"operationId": "openapi", "summary": "This document.",
                                      "responses": {"200": {"description": "OpenAPI 3.1.",
                                                            "content": {"application/json": {
                                                                "schema": {"type": "object"}}}}}}},
        },
        "components": {"schemas": {"Request": request, "Answer": answer, "Stats": stats, "Service": service,
                                   "Error": error}},
    }
