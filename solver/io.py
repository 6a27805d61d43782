"""Reading and writing ``kassign/v1`` instances and assignments of either protocol (JSON, YAML, JSON lines).

Consumer-protocol documents are parsed here; ``protocol: streams`` documents are
handed to :mod:`solver.streams.format`.  The file layer (syntax, JSON lines,
atomic writes) is :mod:`solver.model.files`, re-exported here.

Every error names the file, the line for JSON lines, and the JSON path of the
problem; all problems of a document are collected before raising
:class:`~solver.errors.InstanceError`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from solver.errors import InstanceError, MissingFileError, Problem, json_path
from solver.model import FORMAT, Assignment, Instance, Member, OwnedMap, Topic, frozen_array
from solver.model.decode import DecodeError, decode_json
from solver.model.files import (
    check_decode,
    dumps,
    is_batch,
    iter_lines,
    json_safe,
    read_document,
    write_atomic,
    write_files,
)
from solver.model.schema import (
    MAX_TOTAL,
    AssignmentSpec,
    ConsumerInstanceSpec,
    meta_of,
    pydantic_problems,
)

# --------------------------------------------------------------------------- reading raw data




@dataclass(frozen=True)
class Record:
    """One instance read from a file, with where it came from.

    Attributes
    ----------
    source
        ``file`` or ``file:line N``.
    line
        1-based line number for JSON lines, ``0`` for single documents.
    id
        The record's ``id`` (or the instance's ``name``), may be empty.
    instance
        The parsed instance.
    raw
        The whole record as read (``expected``, ``tags``... for fixtures).
    """

    source: str
    line: int
    id: str
    instance: Instance
    raw: Mapping[str, Any]


#: The largest Java ``long``: the largest integer weight kept exact (:func:`exact_lags`).
INT64_MAX = 2**63 - 1


def _unwrap(data: Any) -> tuple[Any, tuple[str, ...]]:
    """Records carry the instance under ``instance``; returns (instance data, path prefix)."""
    if isinstance(data, dict) and "instance" in data and "format" not in data:
        return data["instance"], ("instance",)
    return data, ()


def _record_version(inst: Instance, data: Any, prefix: tuple[str, ...], where: str) -> Instance:
    """A record's top-level ``kafka_version`` (Kafka's fixtures carry it beside ``instance``) applies to its
    instance, unless the instance names its own."""
    if not prefix or not isinstance(data, dict) or "kafka_version" not in data or inst.kafka_version is not None:
        return inst
    from dataclasses import replace

    from solver.model.schema import check_kafka_version

    value = data["kafka_version"]
    try:
        if not isinstance(value, str):
            raise ValueError(f"expected a string like '4.3.1', got {value!r}")
        check_kafka_version(value)
    except ValueError as e:
        raise InstanceError(where, [Problem("kafka_version", str(e))]) from None
    return replace(inst, kafka_version=value)


def iter_records(path: str | Path, *, stop_on_error: bool = False) -> Iterator[Record | InstanceError]:
    """Yield every record of a file: one for a JSON/YAML file, one per line for JSON lines.

    Invalid records are yielded as :class:`InstanceError` (not raised) so that
    a caller can report every bad line; with ``stop_on_error`` the first is
    raised instead.
    """
    source = str(path)
    if not is_batch(path):
        try:
            data = read_document(path)
            inst_data, prefix = _unwrap(data)
            inst = _record_version(parse_instance(inst_data, source, prefix), data, prefix, source)
            rid = str(data.get("id", "")) if isinstance(data, dict) and prefix else ""
            yield Record(source, 0, rid or inst.name, inst, data if isinstance(data, dict) else {})
        except InstanceError as e:
            if stop_on_error:
                raise
            yield e
        return
    lineno = 0
    try:
        for lineno, text in enumerate(iter_lines(path), start=1):
            if not text.strip():
                continue
            where = f"{source}:line {lineno}"
            try:
                check_decode(len(text), where)
                try:
                    # without the line break: a truncated line ends at its last column, not "line 2, column 1"
                    data = decode_json(text.rstrip("\r").lstrip("\ufeff") if lineno == 1 else text.rstrip("\r"))
                except DecodeError as de:
                    syntax = de.error
                    if syntax is None:  # duplicate keys, too deep, too long a number: located by decode_json
                        raise InstanceError(where, de.problems) from None
                    raise InstanceError(
                        where, [Problem("", f"malformed JSON at column {syntax.colno}: {syntax.msg}")]
                    ) from None
                inst_data, prefix = _unwrap(data)
                inst = _record_version(parse_instance(inst_data, where, prefix), data, prefix, where)
                rid = str(data.get("id", "")) if prefix else ""
                yield Record(where, lineno, rid or inst.name, inst, data)
            except InstanceError as e:
                if stop_on_error:
                    raise
                yield e
    except InstanceError as e:  # the file itself: missing, unreadable, not text, broken gzip, over the cap
        if stop_on_error or e.source != source:
            raise
        if lineno and not isinstance(e, MissingFileError):
            e = InstanceError(source, [Problem(f"after line {lineno}" if not p.path else p.path, p.message)
                                       for p in e.problems])
        yield e


def read_instance(path: str | Path) -> Instance:
    """Read exactly one instance from a JSON or YAML file.

    Raises
    ------
    InstanceError
        With every problem found, each naming its JSON path.
    """
    if is_batch(path):
        raise InstanceError(str(path), [Problem("", "expected one instance (.json/.yaml), got a JSON lines file")])
    rec = next(iter_records(path, stop_on_error=True))
    assert isinstance(rec, Record)
    return rec.instance


def merge_errors(source: str, errors: list[InstanceError]) -> InstanceError:
    """Fold the errors of several records (``file:line N``) into one error for ``source``."""
    problems: list[Problem] = []
    for e in errors:
        where = e.source[len(source) + 1:] if e.source.startswith(source + ":") else ""
        for p in e.problems:
            path = f"{where}: {p.path}" if where and p.path else (where or p.path)
            problems.append(Problem(path, p.message))
    return InstanceError(source, problems)


def read_instances(path: str | Path) -> list[Record]:
    """Read every record of a file; raise one error listing every bad record."""
    records: list[Record] = []
    errors: list[InstanceError] = []
    for rec in iter_records(path):
        if isinstance(rec, InstanceError):
            errors.append(rec)
        else:
            records.append(rec)
    if errors:
        raise merge_errors(str(path), errors)
    return records


# --------------------------------------------------------------------------- instance parsing


def parse_instance(data: Any, source: str = "<input>", prefix: tuple[str | int, ...] = ()) -> Instance:
    """Validate a decoded document and build an :class:`Instance`.

    Parameters
    ----------
    data
        The decoded JSON/YAML value.
    source
        File name used in error messages.
    prefix
        JSON path of the instance inside the document (``("instance",)`` for records).

    Raises
    ------
    InstanceError
        With every problem found.
    """
    if not isinstance(data, dict):
        raise InstanceError(source, [Problem(json_path(prefix), "expected a JSON object (an instance)")])
    protocol = data.get("protocol", "consumer")
    if protocol == "streams":
        from solver.streams import format as streams_format  # the Streams protocol has its own package

        return streams_format.parse_streams_instance(data, source, prefix)
    structural: list[Problem] = []
    spec: ConsumerInstanceSpec | None = None
    try:
        spec = ConsumerInstanceSpec.model_validate(data)
    except ValidationError as e:
        structural = pydantic_problems(e, prefix)
    # Cross-field checks run on the raw data too, so one run reports every problem.
    semantic = [Problem(json_path(prefix + loc), msg) for loc, msg in consumer_problems(data)]
    seen = {p.path for p in structural}
    problems = structural + [p for p in semantic if p.path not in seen]
    if problems or spec is None:
        raise InstanceError(source, problems)
    return _build_consumer(spec, data.get("topics"))


def _n_partitions(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, dict):
        n = value.get("partitions")
        if isinstance(n, int) and not isinstance(n, bool):
            return n
    return None


def consumer_problems(data: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    """Cross-field problems of a consumer document, checked defensively on raw data.

    Returns ``(location, message)`` pairs: unknown topics in subscriptions,
    ``owned`` and ``copartition``; partitions out of range or listed twice;
    duplicate member ids; per-partition lists of the wrong length.
    """
    out: list[tuple[tuple[str | int, ...], str]] = []
    raw_topics = data.get("topics")
    topics: dict[str, int | None] = {}
    if isinstance(raw_topics, dict):
        for name, t in raw_topics.items():
            n = _n_partitions(t)
            topics[name] = n
            if name == "":
                out.append((("topics",), "empty topic name"))
            if isinstance(t, dict) and n is not None:
                for key in ("weights", "move_costs", "racks"):
                    values = t.get(key)
                    if isinstance(values, list) and len(values) != n:
                        out.append((("topics", name, key), f"has {len(values)} entries, topic has {n} partitions"))
    out.extend(_total_problems(raw_topics))
    members = data.get("members")
    seen: dict[str, int] = {}
    for i, m in enumerate(members if isinstance(members, list) else []):
        if not isinstance(m, dict):
            continue
        mid = m.get("id")
        if isinstance(mid, str):
            if mid in seen:
                out.append((("members", i, "id"), f"duplicate member id {mid!r} (also members[{seen[mid]}])"))
            else:
                seen[mid] = i
        subs = m.get("topics")
        listed: set[str] = set()
        for j, t in enumerate(subs if isinstance(subs, list) else []):
            if not isinstance(t, str):
                continue
            if t not in topics:
                out.append((("members", i, "topics", j), f"topic {t!r} not in topics"))
            if t in listed:
                out.append((("members", i, "topics", j), f"topic {t!r} listed twice"))
            listed.add(t)
        owned = m.get("owned")
        for t, parts in (owned.items() if isinstance(owned, dict) else ()):
            if t not in topics:
                out.append((("members", i, "owned", t), "topic not in topics"))
                continue
            n = topics[t]
            if n is None or not isinstance(parts, list):
                continue
            try:
                lo, hi = (min(parts), max(parts)) if parts else (0, 0)
                fast = isinstance(lo, int) and isinstance(hi, int) and lo >= 0 and hi < n
            except TypeError:  # a non-number among the partitions: pydantic reports it
                fast = False
            if fast and (len(parts) < 2 or len(set(parts)) == len(parts)):
                continue  # the common case: all in range, no repeats
            ints = [(k, p) for k, p in enumerate(parts) if isinstance(p, int) and not isinstance(p, bool)]
            oor = [(k, p) for k, p in ints if p < 0 or p >= n]
            for k, p in oor[:5]:
                out.append((("members", i, "owned", t, k), f"partition {p} out of range ({t} has {n} partitions)"))
            if len(oor) > 5:
                out.append((("members", i, "owned", t), f"{len(oor) - 5} more partitions out of range"))
            values = [p for _, p in ints if 0 <= p < n]  # the others are reported above
            if len(set(values)) != len(values):
                arr = np.sort(np.asarray(values, dtype=np.int64))
                dup = int(arr[1:][arr[1:] == arr[:-1]][0])
                out.append((("members", i, "owned", t), f"partition {dup} listed twice"))
    groups = data.get("copartition")
    in_group: dict[str, int] = {}
    for g, group in enumerate(groups if isinstance(groups, list) else []):
        if not isinstance(group, list):
            continue
        if len({t for t in group if isinstance(t, str)}) < 2:
            out.append((("copartition", g), "a co-partition group needs at least two distinct topics"))
        listed_at: dict[str, int] = {}
        for j, t in enumerate(group):
            if not isinstance(t, str):
                continue
            if t in listed_at:
                out.append((("copartition", g, j), f"topic {t!r} listed twice (also copartition[{g}][{listed_at[t]}])"))
                continue
            listed_at[t] = j
            if t not in topics:
                out.append((("copartition", g, j), f"topic {t!r} not in topics"))
            elif t in in_group and in_group[t] != g:
                out.append((("copartition", g, j), f"topic {t!r} already in copartition[{in_group[t]}]"))
            in_group.setdefault(t, g)
    return out


def _total_problems(raw_topics: Any) -> list[tuple[tuple[str | int, ...], str]]:
    """Weights and move costs whose sum over the document exceeds :data:`~solver.schema.MAX_TOTAL`.

    Each value may be finite and still overflow a sum (``1e308`` twice); loads
    are also squared and divided by capacities, so the sum is bounded well below
    the float range.
    """
    out: list[tuple[tuple[str | int, ...], str]] = []
    if not isinstance(raw_topics, dict):
        return out
    for key in ("weights", "move_costs"):
        total = 0.0
        for name, t in raw_topics.items():
            values = t.get(key) if isinstance(t, dict) else None
            if not isinstance(values, list):
                continue
            try:
                total += math.fsum(values)
            except TypeError:  # a non-number: the schema reports it
                continue
            except OverflowError:  # finite values whose sum is not
                total = math.inf
            except ValueError:  # inf - inf: the schema reports the non-finite values
                continue
            if not total <= MAX_TOTAL:  # also nan from inf - inf
                out.append((("topics", name, key), f"the {key} of the document sum to more than {MAX_TOTAL:g} "
                                                   f"(the limit, so that loads and their squares stay exact "
                                                   f"enough and finite)"))
                break
    return out


def exact_lags(values: Any) -> np.ndarray | None:
    """``values`` as exact ``int64`` integers when every one is an integer of the document (a JSON number
    without a fraction or exponent, which the decoder gives as ``int``) within ``0..2^63-1`` -- a Java ``long``
    lag -- else ``None`` (the weights are then compared as the real numbers they are).

    >>> exact_lags([2**53, 2**53 + 1]).tolist(), exact_lags([1, 2.0]), exact_lags([2**63])
    ([9007199254740992, 9007199254740993], None, None)
    """
    if not isinstance(values, list) or not all(type(v) is int and 0 <= v <= INT64_MAX for v in values):
        return None
    return frozen_array(values, np.int64)


def _build_consumer(spec: ConsumerInstanceSpec, raw_topics: Any = None) -> Instance:
    """Build the immutable instance from a document that passed every check (``raw_topics``: the document's
    ``topics``, where integer weights are still exact)."""
    topics: dict[str, Topic] = {}
    for name, t in spec.topics.items():
        weights = frozen_array(t.weights, np.float64) if t.weights is not None else None
        costs = frozen_array(t.move_costs, np.float64) if t.move_costs is not None else None
        racks = tuple(tuple(r) for r in t.racks) if t.racks is not None else None
        raw = raw_topics.get(name) if isinstance(raw_topics, dict) else None
        lags = exact_lags(raw.get("weights")) if isinstance(raw, dict) and t.weights is not None else None
        topics[name] = Topic(name, t.partitions, t.id, weights, costs, racks, lags)
    members = []
    for m in spec.members:
        members.append(
            Member(m.id, tuple(m.topics), OwnedMap.from_lists(m.owned), m.generation, m.instance_id, m.rack,
                   m.capacity)
        )
    meta = meta_of(spec)
    groups = tuple(tuple(g) for g in spec.copartition)
    return Instance(spec.name, "consumer", topics, tuple(members), groups, None, meta, spec.kafka_version)


# --------------------------------------------------------------------------- writing


def _clean_float(x: float) -> float | int:
    return int(x) if float(x).is_integer() and abs(x) < 2**53 else float(x)


def instance_to_dict(inst: Instance) -> dict[str, Any]:
    """Serialise an instance to ``kassign/v1`` (shorthand topics where possible)."""
    if inst.protocol == "streams":
        from solver.streams import format as streams_format

        return streams_format.streams_instance_to_dict(inst)
    topics: dict[str, Any] = {}
    for name, t in inst.topics.items():
        if t.id is None and t.weights is None and t.move_costs is None and t.racks is None:
            topics[name] = t.partitions
            continue
        obj: dict[str, Any] = {"partitions": t.partitions}
        if t.id is not None:
            obj["id"] = t.id
        if t.lags is not None:  # integers as written (2^53 + 1 is not a float)
            obj["weights"] = t.lags.tolist()
        elif t.weights is not None:
            obj["weights"] = [_clean_float(x) for x in t.weights.tolist()]
        if t.move_costs is not None:
            obj["move_costs"] = [_clean_float(x) for x in t.move_costs.tolist()]
        if t.racks is not None:
            obj["racks"] = [list(r) for r in t.racks]
        topics[name] = obj
    members = []
    for m in inst.members:
        obj = {"id": m.id, "topics": list(m.topics)}
        if m.owned:
            owned = m.owned
            # listed order kept: the KIP-848 assignors read it (docs/format.md)
            obj["owned"] = {t: (owned.listed(t) if isinstance(owned, OwnedMap) else a).tolist()
                            for t, a in owned.items()}
        if m.generation != -1:
            obj["generation"] = m.generation
        if m.instance_id is not None:
            obj["instance_id"] = m.instance_id
        if m.rack is not None:
            obj["rack"] = m.rack
        if m.capacity != 1.0:
            obj["capacity"] = _clean_float(m.capacity)
        members.append(obj)
    out: dict[str, Any] = {"format": FORMAT, "name": inst.name, "protocol": "consumer",
                           "topics": topics, "members": members}
    if inst.copartition:
        out["copartition"] = [list(g) for g in inst.copartition]
    if inst.kafka_version is not None:
        out["kafka_version"] = inst.kafka_version
    out.update(inst.meta)
    return out


def assignment_document(
    inst: Instance, assignor: str, assignment: Assignment, stats: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The output document: canonical sorted assignment, every member present."""
    doc: dict[str, Any] = {"format": FORMAT, "assignor": assignor,
                           "assignment": assignment.canonical(inst.member_ids)}
    if stats is not None:
        doc["stats"] = json_safe(dict(stats))
    return doc


def read_assignment(path: str | Path) -> Assignment:
    """Read an assignment document (``{"assignment": {...}}``) or a bare mapping."""
    return parse_assignment(read_document(path), str(path))


def parse_assignment(data: Any, source: str = "<input>") -> Assignment:
    """Validate a decoded assignment document (``{"assignment": {...}}``) or a bare mapping."""
    if isinstance(data, dict) and "assignment" not in data:
        data = {"assignment": data}
    try:
        spec = AssignmentSpec.model_validate(data)
    except ValidationError as e:
        raise InstanceError(source, pydantic_problems(e)) from None
    return Assignment.from_lists(spec.assignment)


__all__ = [  # the document layer is re-exported: callers read and write through this one module
    "Record", "assignment_document", "consumer_problems", "dumps", "instance_to_dict", "is_batch",
    "iter_records", "json_safe", "merge_errors", "parse_assignment", "parse_instance", "read_assignment",
    "read_document", "read_instance", "read_instances", "write_atomic", "write_files",
]
