"""A cache of optima and gaps for ``kassign score``, under the user's cache directory, and what ``score`` keeps in it
(:func:`cached_gaps`).

Solving the optimum of a large group takes seconds to minutes; scoring a second assignment of the
same group, or the same one again, should not.  Entries are JSON files named by a SHA-256 of what
they depend on: the instance's content (:func:`solver.io.instance_to_dict`, documentation keys left
out), the options that change the answer (time limit, seed), and for gaps the assignment's content.
kassign's version is part of the key, so an upgrade never reads an older answer.

Where: ``$KASSIGN_CACHE_DIR``, else ``$XDG_CACHE_HOME/kassign`` (an absolute path; a relative one is
ignored, as the XDG spec says), else ``~/.cache/kassign`` when the home directory exists (else no cache).
``kassign score --no-cache`` neither reads nor writes it; deleting the folder is always safe.

An entry carries the SHA-256 of its content: a file that was truncated, damaged, replaced by
something else (a directory, a FIFO, a link to ``/dev/zero``), or is larger than any entry kassign
writes is a miss (and is replaced by the next write), never an error or a wrong answer.  Entries are
read without following a symbolic link and without blocking, and decoded only when the memory guard
says they fit (else a miss).  The checksum only proves an entry intact, not true: ``kassign score``
re-checks what it reads against the instance (the cached optimum re-scored, the gaps recomputed from it)
and drops an entry that does not hold (:meth:`Cache.drop`).

Examples
--------
>>> import tempfile
>>> c = Cache(Path(tempfile.mkdtemp()))
>>> k = c.key("optimum", {"a": 1})
>>> c.get(k) is None
True
>>> c.put(k, {"status": "optimal"}); c.get(k)
{'status': 'optimal'}
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from solver.errors import InstanceError, Problem
from solver.io import read_document
from solver.model.schema import META_KEYS
from solver.result import Params
from spark_runner.assignors import get as get_assignor

if TYPE_CHECKING:
    from solver.model import Assignment, Instance
    from solver.streams.model import StreamsAssignment

    #: A consumer or a Streams assignment (``score`` takes either).
    AnyAssignment = Assignment | StreamsAssignment
    from solver.result import Result

#: Largest cache entry read: an optimum of a group at the input limit's size fits; anything larger is not ours.
MAX_ENTRY = 256 << 20
#: Bytes of memory per byte of an entry while it is decoded (JSON text to Python objects, measured about 10).
DECODE_FACTOR = 12
#: The envelope's marker (and version): entries of another layout are misses.
ENVELOPE = "kassign-cache/1"


def default_dir() -> Path | None:
    """``$KASSIGN_CACHE_DIR``, ``$XDG_CACHE_HOME/kassign`` or ``~/.cache/kassign`` (``None``: no home directory
    to put it in, and no variable saying where)."""
    if os.environ.get("KASSIGN_CACHE_DIR"):
        return Path(os.environ["KASSIGN_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME")
    if base and os.path.isabs(base):  # the XDG spec: a relative path is invalid and ignored
        return Path(base) / "kassign"
    try:
        home = Path.home()
    except (RuntimeError, KeyError, OSError):  # no HOME and no password entry
        return None
    if not home.is_absolute() or not home.is_dir():
        return None  # HOME=/nonexistent (a service account): no cache, never a home directory made up
    return home / ".cache" / "kassign"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _read_entry(path: Path) -> str | None:
    """The text of a regular file ``path`` of at most :data:`MAX_ENTRY` bytes, else ``None`` (a link, a FIFO,
    a device, a directory, a file too large or unreadable)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ENTRY:
            return None
        chunks = []
        total = 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > MAX_ENTRY:
                return None
            chunks.append(chunk)
        return b"".join(chunks).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kassign")
    except PackageNotFoundError:
        return "0+unknown"


def instance_key(instance: Instance) -> dict[str, Any]:
    """The instance's content as it enters a key: the document without its documentation keys."""
    from solver.io import instance_to_dict

    doc = instance_to_dict(instance)
    return {k: v for k, v in doc.items() if k not in META_KEYS and k != "name"}


class Cache:
    """JSON entries in one folder; a failure to read or write, or an entry that is not intact, is a miss, never an
    error.  ``folder`` ``None`` (and no default): every call is a miss and nothing is written."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder if folder is not None else default_dir()

    def key(self, kind: str, parts: Any) -> str:
        """``kind-<sha256 of the parts and kassign's version>``."""
        text = json.dumps({"kassign": _version(), "kind": kind, "parts": parts}, sort_keys=True, default=str)
        return f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:32]}"

    def path(self, key: str) -> Path | None:
        return None if self.folder is None else self.folder / f"{key}.json"

    def get(self, key: str) -> Any:
        """The document stored under ``key``, or ``None`` when there is none intact (a damaged entry is removed)."""
        from solver.errors import KassignError
        from solver.model.decode import DecodeError, decode_json
        from solver.resources import Need, check_fits

        path = self.path(key)
        text = _read_entry(path) if path is not None else None
        if text is None:
            return None
        try:
            # decoding JSON takes many times its bytes: an entry this process cannot hold is a miss, not exit 65
            check_fits(Need(DECODE_FACTOR * len(text), "a cache entry"), str(path))
            entry = decode_json(text)
            ok = (isinstance(entry, dict) and entry.get("format") == ENVELOPE and entry.get("key") == key
                  and isinstance(entry.get("doc"), str) and entry.get("sha256") == _digest(entry["doc"]))
            doc = decode_json(entry["doc"]) if ok else None
        except (DecodeError, ValueError, RecursionError, KassignError, MemoryError):
            ok, doc = False, None
        if not ok or doc is None:
            self.drop(key)
            return None
        return doc

    def drop(self, key: str) -> None:
        """Delete the entry under ``key`` (damaged, or not what it claims to be): the next put writes it again."""
        path = self.path(key)
        with contextlib.suppress(OSError):
            if path is not None and path.is_file() and not path.is_symlink():
                path.unlink()

    def put(self, key: str, doc: Any) -> None:
        """Store ``doc`` under ``key`` (atomically); a cache that cannot be written is silently skipped."""
        from solver.errors import KassignError
        from solver.io import dumps, write_atomic

        path = self.path(key)
        if path is None or self.folder is None:
            return
        text = dumps(doc)
        entry = {"format": ENVELOPE, "key": key, "sha256": _digest(text), "doc": text}
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileNotFoundError):
                st = os.lstat(path)
                if stat.S_ISDIR(st.st_mode):
                    return
                if not stat.S_ISREG(st.st_mode):
                    path.unlink()  # a link, FIFO or device in our place: replaced, never written through
            write_atomic(path, dumps(entry) + "\n")
        except (OSError, KassignError, UnicodeError):  # the writer's OutputError too
            pass  # a read-only or full cache folder only costs the next call a solve


# --------------------------------------------------------------------------- score's optimum and gaps


def _optimum_result(inst: Instance, path: Path) -> Any:
    """``--optimum FILE`` as a Result: its assignment (a valid one of ``inst``) and its checked ``stats``."""
    from spark_runner.cli.output import read_assignment, result_from_document

    doc = read_document(path)
    asg = read_assignment(path, inst, doc)
    from solver.api import score as score_fn

    s = score_fn(inst, asg)
    if s.get("outcome") != "valid":
        raise InstanceError(str(path), [Problem("assignment", f"--optimum is not a valid assignment of the "
                                                              f"instance ({s.get('outcome')})")])
    return result_from_document(inst, doc, asg, str(path), trusted=False)


def cached_gaps(inst: Instance, asg: AnyAssignment, metrics: dict[str, Any], params: Params, optimum: Path | None,
                cache: Cache | None) -> dict[str, Any]:
    """``score``'s gaps (:func:`_gap_columns`) and which are not proven, read from ``cache`` when the same
    instance, assignment and options were scored (``cache=None``: solve, neither read nor write); the optimum is
    ``optimum`` (a file of ``kassign assign --assignor optimal``), else the cached one, else solved."""
    from spark_runner.cli.output import result_document

    parts: dict[str, Any] = {"instance": instance_key(inst), "time_limit": params.time_limit, "seed": params.seed}
    opt = None
    if optimum is not None:
        opt = _optimum_result(inst, optimum)
        parts["optimum"] = result_document(inst, "optimum", opt)["assignment"]
        parts["optimum_status"] = opt.status.value  # reported as optimal_status: part of the answer
    mine = asg.to_lists() if hasattr(asg, "to_lists") else asg.to_json_dict()
    gkey = cache.key("gaps", {**parts, "assignment": mine}) if cache is not None else ""
    okey = cache.key("optimum", parts) if cache is not None else ""
    if opt is None and cache is not None and (doc := cache.get(okey)) is not None:
        opt = _optimum_from_doc(inst, doc)
        if opt is None:
            cache.drop(okey)  # intact but not an optimum of this instance: a miss
    if cache is not None and opt is not None and isinstance(hit := cache.get(gkey), dict):
        held = _gaps_hold(inst, asg, metrics, opt, hit)
        if held is not None:
            return {**held, "not_proven": _not_proven(opt, held)}
        cache.drop(gkey)
    if opt is None:
        opt = get_assignor("optimal-streams" if inst.protocol == "streams" else "optimal").run(inst, params)
        if cache is not None:
            cache.put(okey, result_document(inst, "optimal", opt))
    g = _gap_columns(inst, asg, metrics, opt, params.time_limit)
    if cache is not None:
        cache.put(gkey, g)
    return {**g, "not_proven": _not_proven(opt, g)}


def _not_proven(opt: Result, gaps: dict[str, Any]) -> list[str]:
    """The gaps of ``gaps`` that are not proven, as ``compare`` says them: those measured against a stage of the
    optimum that is not proven (:func:`spark_runner.comparison.stage_proven`), and ``excess_moves`` when only a
    lower estimate."""
    from spark_runner.comparison import STAGE_FIGURES, stage_proven

    flags = stage_proven(opt) or []
    keys = [k for st, ok in zip(opt.extra.get("stages") or [], flags, strict=False) if not ok
            for k in STAGE_FIGURES.get(st, ((), ()))[1] if gaps.get(k) is not None]
    if gaps.get("excess_moves") is not None and gaps.get("excess_moves_proven") is False:
        keys.append("excess_moves")
    return keys


def _optimum_from_doc(inst: Instance, doc: Any) -> Any:
    """The cached optimum ``doc`` of ``inst`` as a Result; ``None`` when it is not one (a miss).

    The checksum only says the entry is intact: the cached assignment is re-scored, must be valid, and the
    balance its ``objective`` states must be what the assignment has; the gaps are then measured from the
    assignment itself, so an edited ``objective`` can never make a gap.
    """
    import math

    from solver.api import score as score_fn
    from solver.errors import KassignError
    from spark_runner.cli.output import read_assignment, result_from_document

    try:
        asg = read_assignment(Path("the cache"), inst, doc)
        stated = result_from_document(inst, doc, asg, "the cache", trusted=True)
        opt = result_from_document(inst, doc, asg, "the cache", trusted=False)  # measured from the assignment
        s = score_fn(inst, asg)
    except KassignError:
        return None
    if s.get("outcome") != "valid":
        return None
    stages = list(stated.extra.get("stages", ()))
    if len(stated.bound) == len(stated.objective) == len(stages):
        proven = stated.status.value == "optimal"
        for b, v in zip(stated.bound, stated.objective, strict=True):
            tol = 1e-9 * max(1.0, abs(v))
            if b > v + tol or (proven and b < v - tol):
                return None  # a bound above the value it bounds (stages are minimised), or "optimal" unproven
    if inst.protocol != "streams":
        from solver.consumer.gaps import member_loads

        loads = member_loads(inst, asg)
        measured = {"max_load": float(loads.max(initial=0.0)), "sum_sq": float((loads**2).sum())}
        for name, value in measured.items():
            if name in stages and not math.isclose(float(stated.objective[stages.index(name)]), value,
                                                   rel_tol=1e-9, abs_tol=1e-9):
                return None  # the objective it states is not its assignment's
    return opt


def _gaps_hold(inst: Instance, asg: AnyAssignment, metrics: dict[str, Any], opt: Result,
               hit: dict[str, Any]) -> dict[str, Any] | None:
    """A cached gaps entry ``hit`` re-checked against the optimum ``opt``: every gap the optimum gives at once
    must be the same, the rest (the fewest moves, a solve) in range; ``None`` when it does not hold (a miss)."""
    import math

    if inst.protocol == "streams":
        fresh = _gap_columns(inst, asg, metrics, opt)  # every Streams gap is a difference of scores
        return fresh if hit == fresh else None
    from solver.gaps import balance_gaps, defined_gaps
    from solver.model import Assignment

    assert isinstance(asg, Assignment)  # a consumer instance is scored with a consumer assignment
    quick = defined_gaps(metrics, lambda: balance_gaps(inst, asg, opt, metrics))
    if set(hit) != {*quick, "optimal_status"} or hit["optimal_status"] != opt.status.value:
        return None
    for k in ("max_load_gap", "sum_sq_gap"):
        if hit[k] != quick[k]:
            return None
    moves, proven = hit.get("excess_moves"), hit.get("excess_moves_proven")
    if not isinstance(proven, bool) and proven is not None:
        return None
    if moves is not None:
        if isinstance(moves, bool) or not isinstance(moves, (int, float)) or not math.isfinite(moves):
            return None
        if not 0 <= moves <= float(metrics.get("moved_cost") or 0) + 1e-9 or metrics.get("outcome") != "valid":
            return None
    return {**hit, **{k: quick[k] for k in ("max_load_gap", "sum_sq_gap")}}


def _gap_columns(inst: Instance, asg: AnyAssignment, metrics: dict[str, Any], opt: Result,
                 time_limit: float | None = None) -> dict[str, Any]:
    """The gap metrics of ``asg`` against the optimum ``opt`` of ``inst``, with the optimum's status.

    Gaps are defined for a ``valid`` outcome only (:func:`solver.gaps.defined_gaps`).
    Consumer: ``max_load_gap``, ``sum_sq_gap``, ``excess_moves``, ``excess_moves_proven`` (``excess_moves``
    is also ``None`` when no valid assignment is as balanced as this one).
    Streams: ``active_balance_gap``, ``total_balance_gap``, ``restoration_gap`` against ``optimal-streams``.
    """
    from solver.gaps import gaps

    g = gaps(inst, asg, opt, scores=metrics, time_limit=time_limit or 10.0)
    g.pop("balance_optimal", None)  # a sweep's column; score says the gaps themselves
    return {**g, "optimal_status": opt.status.value}


__all__ = ["Cache", "cached_gaps", "default_dir", "instance_key"]
