"""One ``POST /v1/assign`` request: its envelope checked field by field, weights applied.

Everything here is pure (no sockets, no processes): the HTTP layer
(:mod:`spark_runner.serve.server`) turns a :class:`RequestError` into a 4xx
JSON answer ``{"error": ..., "path": ...}``.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from solver.errors import Problem

#: Milliseconds a request may ask for (``deadline_ms``): the default and the range.
DEFAULT_DEADLINE_MS = 5000
DEADLINE_MS_RANGE = (50, 600_000)
#: ``balance_tolerance`` range: the CLI's ``--balance-tolerance`` range (solver.options.BALANCE_TOLERANCE).
TOLERANCE_RANGE = (0.0, 1000.0)
#: The optimum of each protocol (the default ``assignor``) and Kafka's own assignor for it (the default fallback).
DEFAULT_ASSIGNOR = {"consumer": "optimal", "streams": "optimal-streams"}
DEFAULT_FALLBACK = {"consumer": "uniform", "streams": "high-availability"}
#: The keys of a request object.
REQUEST_KEYS = ("instance", "assignor", "deadline_ms", "balance_tolerance", "fallback", "weights")
WEIGHT_SOURCES = ("request", "file", "admin")


class RequestError(Exception):
    """A request the service refuses: the HTTP status, what is wrong and the JSON path of the field.

    Parameters
    ----------
    status
        The HTTP status (4xx, or 503 when the service cannot answer in time).
    error
        What is wrong, in words.
    path
        The JSON path of the field (``""`` for the whole body).
    problems
        Every problem found (an invalid instance has several); the first is ``error``/``path``.
    """

    def __init__(self, status: int, error: str, path: str = "", problems: list[Problem] | None = None) -> None:
        super().__init__(f"{path}: {error}" if path else error)
        self.status = status
        self.error = error
        self.path = path
        self.problems = problems or [Problem(path, error)]

    def body(self) -> dict[str, Any]:
        """The JSON answer: ``error`` and ``path``, and ``problems`` when there is more than one."""
        out: dict[str, Any] = {"error": self.error, "path": self.path}
        if len(self.problems) > 1:
            out["problems"] = [{"path": p.path, "error": p.message} for p in self.problems[:1000]]
            if len(self.problems) > 1000:
                out["more_problems"] = len(self.problems) - 1000
        return out


@dataclass(frozen=True)
class AssignRequest:
    """A checked request, ready for a worker.

    Attributes
    ----------
    instance
        The ``kassign/v1`` instance as decoded JSON (weights from the chosen source already applied).
    protocol
        ``consumer`` or ``streams`` (what the instance says).
    assignor, fallback
        Registered assignor names: the one asked for, and Kafka's own for the protocol.
    deadline_ms
        Milliseconds from the body's last byte to the answer.
    balance_tolerance
        ``None`` (strict optimum, the CLI's default) or ``EPS``.
    weights
        The weight source used (``request``, ``file`` or ``admin``).
    group
        ``admin``: the consumer group whose lag weighs the partitions (``weights.group``, else the
        instance's ``name``).
    """

    instance: dict[str, Any]
    protocol: str
    assignor: str
    fallback: str
    deadline_ms: int
    balance_tolerance: float | None
    weights: str
    group: str | None = None


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _registered(name: Any, path: str, protocol: str, *, heuristic: bool) -> str:
    """``name`` when it is a registered assignor of ``protocol`` (a heuristic when ``heuristic``), else a 422."""
    from solver.registry import UnknownAssignorError
    from spark_runner.assignors import get, load_all

    if not isinstance(name, str):
        raise RequestError(422, f"expected an assignor name (a string), got {_kind(name)}", path)
    try:
        spec = get(name)
    except UnknownAssignorError:
        known = sorted(s.name for s in load_all()
                       if s.protocol == protocol and (s.kind == "heuristic" or not heuristic))
        raise RequestError(422, f"unknown assignor {name[:100]!r}; the {protocol} protocol has: "
                                f"{', '.join(known)}", path) from None
    if spec.protocol != protocol:
        raise RequestError(422, f"assignor {name!r} is for the {spec.protocol} protocol, "
                                f"the instance uses {protocol!r}", path)
    if heuristic and spec.kind != "heuristic":
        raise RequestError(422, f"the fallback must be one of Kafka's assignors (a heuristic), not {name!r}", path)
    return name


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return f"the number {v!r}"
    if isinstance(v, str):
        return "a string"
    return "an array" if isinstance(v, list) else "an object"


def check_request(body: Any, weights_file: WeightsFile | None = None, admin: bool = False) -> AssignRequest:
    """Check a decoded request body field by field; the first wrong field raises.

    Parameters
    ----------
    body
        The decoded JSON body.
    weights_file
        The service's ``--weights-file`` (``None``: not configured).
    admin
        Whether the service reads lag from a cluster (``--bootstrap-server``).

    Raises
    ------
    RequestError
        422 naming the field (``deadline_ms``, ``assignor``...).  The instance
        itself is checked by the worker (:func:`spark_runner.serve.worker.solve`).

    Examples
    --------
    >>> r = check_request({"instance": {"format": "kassign/v1", "topics": {"T": 2}, "members": []}})
    >>> r.assignor, r.fallback, r.deadline_ms, r.balance_tolerance
    ('optimal', 'uniform', 5000, None)
    >>> try:
    ...     check_request({"instance": {}, "deadline_ms": 10})
    ... except RequestError as e:
    ...     print(e.status, e.path, "|", e.error)
    422 deadline_ms | expected an integer between 50 and 600,000 (milliseconds), got the number 10
    """
    if not isinstance(body, dict):
        raise RequestError(422, f"expected a JSON object with an instance, got {_kind(body)}", "")
    for key in body:
        if key not in REQUEST_KEYS:
            raise RequestError(422, f"unknown field; a request has: {', '.join(REQUEST_KEYS)}", str(key)[:200])
    if "instance" not in body:
        raise RequestError(422, "missing: the kassign/v1 instance to assign", "instance")
    instance = body["instance"]
    if not isinstance(instance, dict):
        raise RequestError(422, f"expected a kassign/v1 instance (a JSON object), got {_kind(instance)}", "instance")
    protocol = instance.get("protocol", "consumer")
    if protocol not in DEFAULT_ASSIGNOR:
        raise RequestError(422, f"expected 'consumer' or 'streams', got {_kind(protocol)}", "instance.protocol")
    deadline = body.get("deadline_ms", DEFAULT_DEADLINE_MS)
    lo, hi = DEADLINE_MS_RANGE
    if not (isinstance(deadline, int) and not isinstance(deadline, bool) and lo <= deadline <= hi):
        raise RequestError(422, f"expected an integer between {lo} and {hi:,} (milliseconds), got {_kind(deadline)}",
                           "deadline_ms")
    tol = body.get("balance_tolerance")
    if tol is not None and not (_is_number(tol) and TOLERANCE_RANGE[0] <= tol <= TOLERANCE_RANGE[1]):
        raise RequestError(422, f"expected null or a number between 0 and 1,000, got {_kind(tol)}",
                           "balance_tolerance")
    assignor = _registered(body.get("assignor", DEFAULT_ASSIGNOR[protocol]), "assignor", protocol, heuristic=False)
    if tol is not None and assignor != "optimal":
        raise RequestError(422, f"balance_tolerance applies to the consumer optimum ('optimal'), not {assignor!r}",
                           "balance_tolerance")
    fallback = _registered(body.get("fallback", DEFAULT_FALLBACK[protocol]), "fallback", protocol, heuristic=True)
    source, instance = _weights(body.get("weights"), instance, weights_file, admin)
    group = None
    if source == "admin":
        spec = body["weights"]
        group = spec.get("group", instance.get("name"))
        if not isinstance(group, str) or not 0 < len(group) <= 255:
            raise RequestError(422, "expected the consumer group id (1 to 255 characters); without it, the "
                                    "instance's name", "weights.group")
    return AssignRequest(instance, protocol, assignor, fallback, deadline,
                         None if tol is None else float(tol), source, group)


def _weights(spec: Any, instance: dict[str, Any], weights_file: WeightsFile | None,
             admin: bool) -> tuple[str, dict[str, Any]]:
    if spec is None:
        return "request", instance
    if not isinstance(spec, dict):
        raise RequestError(422, f"expected an object such as {{\"source\": \"file\"}}, got {_kind(spec)}", "weights")
    source = spec.get("source", "request")
    if source not in WEIGHT_SOURCES:
        raise RequestError(422, f"expected one of {', '.join(WEIGHT_SOURCES)}, got {_kind(source)}", "weights.source")
    for key in spec:
        if key not in ("source", "group") or (key == "group" and source != "admin"):
            raise RequestError(422, "unknown field; weights has: source, and group for source admin",
                               f"weights.{str(key)[:200]}")
    if source == "request":
        return source, instance
    if instance.get("protocol", "consumer") != "consumer":
        raise RequestError(422, f"weights from {'the Admin API' if source == 'admin' else 'a file'} weigh "
                                "topic-partitions of consumer groups; a Streams instance carries its tasks' "
                                "offsets itself", "weights.source")
    if source == "admin":
        if not admin:
            raise RequestError(422, "this service reads no cluster (start it with --bootstrap-server HOST:PORT)",
                               "weights.source")
        return source, instance  # the lag is looked up by the server, within the request's deadline
    if weights_file is None:
        raise RequestError(422, "this service has no weights file (start it with --weights-file FILE)",
                           "weights.source")
    return source, weights_file.apply(instance)


# --------------------------------------------------------------------------- the weights file


class WeightsFileError(ValueError):
    """A weights file that cannot be used: which file, where and what."""


@dataclass(frozen=True)
class Weights:
    """A weights file's content: per topic, per partition, a load; and its unit."""

    unit: str
    topics: Mapping[str, Mapping[int, float]]


def parse_weights(doc: Any, source: str) -> Weights:
    """Check a decoded weights file (see docs/serve.md) and return it.

    Examples
    --------
    >>> w = parse_weights({"format": "kassign-weights/v1", "unit": "records",
    ...                    "topics": {"T": [5, 1], "U": {"3": 2.5}}}, "w.json")
    >>> w.unit, dict(w.topics["T"]), dict(w.topics["U"])
    ('records', {0: 5.0, 1: 1.0}, {3: 2.5})
    """
    def bad(path: str, what: str) -> WeightsFileError:
        return WeightsFileError(f"{source}: {path}: {what}" if path else f"{source}: {what}")

    if not isinstance(doc, dict):
        raise bad("", "expected a JSON object with format, unit and topics")
    for key in doc:
        if key not in ("format", "unit", "topics"):
            raise bad(str(key), "unknown field; a weights file has: format, unit, topics")
    if doc.get("format") != "kassign-weights/v1":
        raise bad("format", "expected 'kassign-weights/v1'")
    unit = doc.get("unit")
    if not isinstance(unit, str) or not 0 < len(unit) <= 40:
        raise bad("unit", "expected what the weights measure (text up to 40 characters, e.g. 'records', 'bytes/s')")
    topics = doc.get("topics")
    if not isinstance(topics, dict):
        raise bad("topics", "expected an object: topic -> [weight, ...] or {\"partition\": weight}")
    out: dict[str, dict[int, float]] = {}
    for t, per in topics.items():
        items = list(enumerate(per)) if isinstance(per, list) else list(per.items()) if isinstance(per, dict) else None
        if items is None:
            raise bad(f"topics.{t}", "expected [weight, ...] or {\"partition\": weight}")
        got: dict[int, float] = {}
        for p, w in items:
            where = f"topics.{t}[{p}]" if isinstance(per, list) else f"topics.{t}.{p}"
            try:
                part = int(p)
            except ValueError:
                raise bad(where, "expected a partition number") from None
            if part < 0 or str(part) != str(p):
                raise bad(where, "expected a partition number (0, 1, ...)")
            if not (_is_number(w) and w >= 0):
                raise bad(where, f"expected a finite number >= 0, got {_kind(w)}")
            got[part] = float(w)
        out[str(t)] = got
    return Weights(unit, out)


class WeightsFile:
    """The service's ``--weights-file``: read at start, read again whenever it changes on disk.

    A change that does not parse keeps the last good content (and says why on stderr once).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._weights = self._read()  # a bad file at start: WeightsFileError (the command exits 65)

    def _read(self) -> Weights:
        from solver.io import read_document

        try:
            st = os.stat(self.path)
        except OSError as e:
            raise WeightsFileError(f"{self.path}: cannot read the weights file: {e.strerror}") from None
        try:
            doc = read_document(self.path)
        except Exception as e:  # InstanceError: malformed JSON/YAML, located
            raise WeightsFileError(str(e)) from None
        self._stamp = (st.st_mtime_ns, st.st_size)
        return parse_weights(doc, str(self.path))

    def current(self) -> Weights:
        """The newest good content of the file."""
        with self._lock:
            try:
                st = os.stat(self.path)
                stamp = (st.st_mtime_ns, st.st_size)
            except OSError:
                return self._weights
            if stamp != self._stamp:
                try:
                    self._weights = self._read()
                except WeightsFileError as e:
                    import sys

                    self._stamp = stamp
                    print(f"kassign serve: keeping the previous weights: {e}", file=sys.stderr, flush=True)
            return self._weights

    def apply(self, instance: dict[str, Any]) -> dict[str, Any]:
        """``instance`` with each topic's weights taken from the file (see :func:`apply_weights`)."""
        return apply_weights(instance, self.current())


def apply_weights(instance: dict[str, Any], weights: Weights) -> dict[str, Any]:
    """A copy of a consumer instance whose topics weigh what ``weights`` says.

    A topic is found in the file by its name, else by its ``id`` (Kafka's topic id:
    the broker-side KIP-848 plug-in names every topic by its id, so a file for
    such groups lists topics by id).
    A partition the file does not list weighs the mean of the listed weights of
    the instance's partitions (as the live assignor treats a partition no member
    reported: its load is unknown); when the file lists none of them the instance
    is returned unchanged.  ``units.weights`` becomes the file's unit.

    Examples
    --------
    >>> w = Weights("records", {"T": {0: 6.0, 1: 2.0}})
    >>> out = apply_weights({"format": "kassign/v1", "topics": {"T": 3, "U": 1}, "members": []}, w)
    >>> out["topics"]
    {'T': {'partitions': 3, 'weights': [6.0, 2.0, 4.0]}, 'U': {'partitions': 1, 'weights': [4.0]}}
    >>> out["units"]
    {'weights': 'records'}
    >>> by_id = {"format": "kassign/v1", "topics": {"x": {"partitions": 2, "id": "T"}}, "members": []}
    >>> apply_weights(by_id, w)["topics"]
    {'x': {'partitions': 2, 'id': 'T', 'weights': [6.0, 2.0]}}
    """
    topics = instance.get("topics")
    if not isinstance(topics, dict):
        return instance  # the worker names what is wrong with it
    counts: dict[str, int] = {}
    per_topic: dict[str, Mapping[int, float]] = {}
    for t, spec in topics.items():
        n = spec if isinstance(spec, int) else spec.get("partitions") if isinstance(spec, dict) else None
        if isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= 10**7:
            counts[t] = n
            # by name, else by the topic's id (the KIP-848 plug-in names topics by their ids)
            tid = spec.get("id") if isinstance(spec, dict) else None
            per_topic[t] = weights.topics.get(t) or (weights.topics.get(tid, {}) if isinstance(tid, str) else {})
    listed = [w for t, n in counts.items() for p, w in per_topic[t].items() if p < n]
    if not listed:
        return instance
    mean = math.fsum(listed) / len(listed)
    new_topics: dict[str, Any] = {}
    for t, spec in topics.items():
        if t not in counts:
            new_topics[t] = spec
            continue
        per = per_topic[t]
        entry = dict(spec) if isinstance(spec, dict) else {"partitions": spec}
        entry["weights"] = [per.get(p, mean) for p in range(counts[t])]
        new_topics[t] = entry
    units = dict(instance["units"]) if isinstance(instance.get("units"), dict) else {}
    units["weights"] = weights.unit
    return {**instance, "topics": new_topics, "units": units}
