"""Refuse work the machine cannot hold before building anything per partition or per task.

An instance file states sizes (``"partitions": 100000000``, a Streams source
topic with two billion partitions, 20,000 clients) far beyond what its bytes
cost to read.  Every command that builds per-partition or per-task data first
asks :func:`check_fits` with an estimate of the bytes it needs (measured
per-partition and per-pair costs of each kind of engine, see
``docs/format.md``, section *Limits*) and compares it with the memory this
process can still get: the smallest of the machine's available memory, the
cgroup's remaining limit and the process's address-space limit, or
``KASSIGN_MEMORY_LIMIT`` (``512M``, ``4G``...) when set.  An instance that does
not fit fails with a one-line message saying how much it needs and how much
there is (exit 65), instead of a ``MemoryError`` minutes later.

Work that grows faster than memory (Kafka's high-availability task assignor
is quadratic in the number of clients) has a documented work limit too.
"""

from __future__ import annotations

import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from solver.errors import InstanceError, OptionError, Problem

#: Environment variable capping the memory kassign assumes it may use (bytes, or with K/M/G/T suffix).
MEMORY_ENV = "KASSIGN_MEMORY_LIMIT"
#: Bounds of ``KASSIGN_MEMORY_LIMIT``: at least 64 MiB (the interpreter alone needs about 50), at most 2^60.
MEMORY_LIMIT_RANGE = (64 << 20, 1 << 60)
#: Bytes per partition and per (partition, subscriber) pair, by kind of engine (measured, with margin).
#: ``solver``: the exact engine's CP-SAT / MIP models over class counts (about 5.5 KB per item class and
#: 50 bytes per class-member pair at the peak, measured on 1,000-100,000 weighted partitions x 20-200
#: members); equal items go to the min-cost flow (:data:`FLOW_COSTS`).
CONSUMER_COSTS = {"heuristic": (120, 8), "solver": (6000, 48), "score": (100, 0)}
#: Bytes per partition of the min-cost flow path (equal items and capacities; arcs follow item classes).
FLOW_COSTS = (300, 0)
#: Working memory of any CP-SAT / MIP solve besides its model: search state, presolve copies, buffers.
SOLVER_BASE = 16 << 20
#: Per solver thread: its stack and its share of the allocator's arenas (limited under an address-space cap).
SOLVER_PER_WORKER = 8 << 20
#: Bytes per task, per client and per (task, client, replica) triple for the Streams engines.
STREAMS_COSTS = {"heuristic": (1000, 1000, 64), "solver": (1000, 1000, 400), "score": (500, 500, 0)}
#: Bytes of one derived Streams task while an instance is read (task object, id string, sort key).
BYTES_PER_PARSED_TASK = 400
#: Work limit of Kafka's high-availability assignor: clients^2 x tasks x replicas (about a minute here).
HA_WORK_LIMIT = 4 * 10**9
#: Assignors whose work limit is :data:`HA_WORK_LIMIT` (their balancing loops scan every client per move).
QUADRATIC_IN_CLIENTS = ("high-availability",)
#: Assignors that run one group member per stream thread (KIP-1071: a client without ``members`` is a process of
#: ``capacity`` members), the most members they take (about 250 microseconds each: 25 s), and bytes per member.
#: A group that lists members is held to the same limit by every command (the optimum shares each process's
#: tasks among its members, the scorer checks each member).
PER_MEMBER = ("streams-server-sticky",)
MEMBER_LIMIT = 100_000
BYTES_PER_MEMBER = 1000
#: Assignors that keep every pair of tasks sharing a client (Kafka's ``TaskPairs``: quadratic in the tasks per
#: client), the most pairs they take (5,000,000: about 10 s and 500 MB; 10,000 tasks on 3 clients were 17
#: million, a minute and 1.6 GB; 100,000 took 6 GB), and bytes per pair.
TASK_PAIRS = ("sticky-task", "kip924-sticky")
PAIR_LIMIT = 5_000_000
BYTES_PER_PAIR = 120
#: Streams heuristics that scan every client for every task replica they place, and the most
#: clients x tasks x replicas each takes (about 12 s; 20,000 clients x 2,000 tasks x 2 replicas ran for minutes).
PER_CLIENT_WORK_LIMIT = {"sticky-task": 10**7, "state-store-weighted": 10**7, "kip924-sticky": 3 * 10**6}

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}


class TooLargeError(InstanceError):
    """The instance is valid but needs more memory (or work) than this command may use; exit 65."""


def parse_size(text: str, name: str = MEMORY_ENV) -> int:
    """Bytes in ``text``: a number with an optional ``K``/``M``/``G``/``T``/``P`` suffix (powers of 1024).

    Examples
    --------
    >>> parse_size("512M"), parse_size("2g"), parse_size("1000")
    (536870912, 2147483648, 1000)
    """
    # ASCII digits only: int() and float() read other scripts' digits ("５１２M"), a size must not
    hit = re.fullmatch(r"\s*(\d{1,30}(?:\.\d{1,30})?)\s*([KMGTP]?)(?:i?B)?\s*", text, re.I | re.ASCII)
    if not hit:
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise ValueError(f"{name}={shown!r}: expected bytes such as 512M or 4G")
    return int(float(hit.group(1)) * _UNITS[hit.group(2).upper()])


def parse_size_env(name: str, default: int, bounds: tuple[int, int]) -> int:
    """The size in environment variable ``name`` (``default`` when unset or empty), within ``bounds``.

    Raises
    ------
    OptionError
        Not a size, or out of bounds (exit 2, a usage error: the environment is part of the command line).
    """
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = parse_size(text, name)
    except ValueError as e:
        raise OptionError(str(e)) from None
    lo, hi = bounds
    if not lo <= value <= hi:
        raise OptionError(f"{name}={text}: must be between {human(lo)} and {human(hi)}")
    return value


def human(n: float) -> str:
    """``1.5 GB``-style rendering of a byte count (powers of 1024).

    Examples
    --------
    >>> human(3 * 2**30), human(1536)
    ('3.0 GB', '1.5 KB')
    """
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1024 or unit == "PB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} PB"  # pragma: no cover


def _read_int(path: str) -> int | None:
    try:
        text = Path(path).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _meminfo(key: str) -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _status_bytes(key: str) -> int:
    """A size from ``/proc/self/status`` (``VmSize``, ``VmRSS``) in bytes; 0 where there is none."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _vm_size() -> int:
    return _status_bytes("VmSize")


def _rlimits() -> list[int]:
    """What the address-space and data ``rlimit`` s leave this process (they count reserved address space)."""
    out: list[int] = []
    try:
        import resource

        for which in (resource.RLIMIT_AS, getattr(resource, "RLIMIT_DATA", resource.RLIMIT_AS)):
            soft = resource.getrlimit(which)[0]
            if soft != resource.RLIM_INFINITY and soft > 0:
                out.append(max(0, soft - _vm_size()))
    except (ImportError, ValueError, OSError):
        pass
    return out


def memory_limited() -> bool:
    """Whether an address-space or data ``rlimit`` bounds this process (then a C extension that fails without an
    exception most likely ran out of it)."""
    return bool(_rlimits())


def available_memory() -> int:
    """Bytes this process can still allocate: the smallest of the known limits.

    The minimum of the machine's available memory (``MemAvailable``; physical
    memory plus swap), the cgroup's limit minus its usage (v2 and v1), the
    address-space and data ``rlimit`` minus the process's current size, and
    ``KASSIGN_MEMORY_LIMIT`` when set: the variable lowers what kassign
    assumes, never raises it, so a huge value cannot switch the guard off.

    Raises
    ------
    OptionError
        ``KASSIGN_MEMORY_LIMIT`` is not a size between 64M and 2^60 bytes (exit 2).
    """
    env = parse_size_env(MEMORY_ENV, 0, MEMORY_LIMIT_RANGE)
    hard: list[int] = []
    total = _meminfo("MemTotal")
    if total is None:
        try:
            total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            total = None
    if total is not None:
        hard.append(total + (_meminfo("SwapTotal") or 0))
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        limit = _read_int(limit_file)
        if limit is not None and limit < 1 << 60:
            hard.append(max(0, limit - (_read_int(usage_file) or 0)))
    hard.extend(_rlimits())
    avail = _meminfo("MemAvailable")
    found = hard + ([avail] if avail is not None else []) + ([env] if env else [])
    return min(found) if found else 4 << 30


def solver_memory_mb() -> int:
    """The memory limit, in MB, of a CP-SAT / SCIP solve: this process's size now plus what it can still get.

    Both solvers compare the limit with the whole process's memory and end their search when it is
    crossed, instead of failing to allocate; the larger of the resident and the virtual size is counted,
    so the bound is never below what the process already uses.
    """
    return max(64, (max(_status_bytes("VmRSS"), _vm_size()) + available_memory()) >> 20)


_arenas_limited = False


def limit_arenas() -> None:
    """Under an address-space ``rlimit`` (``ulimit -v``), share the C allocator's arenas between threads.

    glibc reserves 64 MiB of address space per thread arena; a solver with a few worker threads would
    spend a 512 MiB ``ulimit -v`` on reservations alone and die in ``std::bad_alloc``.  Without such a
    limit nothing changes (arenas are what make threads fast).
    """
    global _arenas_limited
    if _arenas_limited or not sys.platform.startswith("linux") or not _rlimits():
        return
    _arenas_limited = True
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(-8, 2)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass


def solver_base(workers: int = 1) -> int:
    """Bytes a CP-SAT / MIP solve needs besides its model: :data:`SOLVER_BASE` + per worker thread.

    The libraries themselves are not counted: under an address-space limit the CLI loads them before
    anything else (``spark_runner/cli/entry.py``), so what they map is part of what is used already.
    """
    return SOLVER_BASE + SOLVER_PER_WORKER * max(1, workers)


#: Bytes one more CP-SAT worker needs per model variable or constraint (measured: a second worker on a
#: 60,000-variable model adds about 19 MB).
BYTES_PER_WORKER_ITEM = 512
#: Under an address-space limit (``ulimit -v``), per CP-SAT worker besides its thread stack: the worker's copy of
#: the model and its search state, per model variable or constraint (measured: four workers on a Streams plan's
#: 10,935-item packing model took 65 MB of address space, 16 MB each, 8 MiB of it the stack), and what the solve
#: keeps free for the rest of the process (presolve copies grow the peak past the estimate).
AS_BYTES_PER_WORKER_ITEM = 1500
AS_RESERVE_SHARE = 0.25


def _thread_stack() -> int:
    """Address space glibc reserves for a new thread's stack (the ``RLIMIT_STACK`` soft limit, 8 MiB at most)."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_STACK)[0]
    except (ImportError, ValueError, OSError):
        return 8 << 20
    return 8 << 20 if soft == resource.RLIM_INFINITY or soft <= 0 else min(int(soft), 8 << 20)


def cpsat_workers(items: int, wanted: int, source: str = "instance") -> int:
    """How many CP-SAT workers (at most ``wanted``) fit in the memory left, for a model of ``items`` variables and
    constraints; raises :class:`TooLargeError` when not even one does.

    Under an address-space limit every thread reserves its stack and copies the model, and a C++ allocation
    that fails ends the process (``std::bad_alloc``): the workers are counted at what they reserve, and a
    quarter of what is left stays free for the rest of the process.
    """
    avail = available_memory()
    if _rlimits():
        per_worker = _thread_stack() + (1 << 20) + AS_BYTES_PER_WORKER_ITEM * items
        usable = int(avail * (1 - AS_RESERVE_SHARE)) - SOLVER_BASE
    else:
        per_worker = SOLVER_PER_WORKER + BYTES_PER_WORKER_ITEM * items
        usable = avail - SOLVER_BASE
    if usable < per_worker:
        need = SOLVER_BASE + per_worker
        if _rlimits():  # with the quarter kept free
            need = int(need / (1 - AS_RESERVE_SHARE))
        raise TooLargeError(source, [Problem("", (
            f"a CP-SAT solve of {items:,} variables and constraints needs about {human(need)} of memory; "
            f"{human(max(0, avail))} is available (set {MEMORY_ENV} to change what kassign assumes, see "
            f"docs/format.md#limits)"))])
    return int(max(1, min(wanted, usable // per_worker)))


@dataclass(frozen=True)
class Need:
    """An estimate: bytes needed, what for, and the JSON path of the largest contributor."""

    bytes: int
    what: str
    path: str = ""
    work: int = 0
    work_limit: int = 0
    work_what: str = ""



#: A need this small is checked against what was available less than a second ago, when that was at least four
#: times as much (a batch of thousands of small instances read /proc five times each: half its time).
SMALL_NEED = 16 << 20
_last_seen: tuple[float, int] | None = None


def check_fits(need: Need, source: str) -> None:
    """Raise :class:`TooLargeError` when ``need`` exceeds the memory available or its work limit.

    Parameters
    ----------
    need
        The estimate (:func:`consumer_need`, :func:`streams_need` ...).
    source
        The file (or instance name) for the message.
    """
    if need.work_limit and need.work > need.work_limit:
        raise TooLargeError(source, [Problem(need.path, need.work_what)])
    limit_arenas()
    global _last_seen
    now = time.monotonic()
    if (need.bytes <= SMALL_NEED and _last_seen is not None and now - _last_seen[0] < 1.0
            and _last_seen[1] >= 4 * SMALL_NEED):
        return  # a small need, and plenty was there a moment ago: not worth reading /proc again (batches)
    avail = available_memory()
    _last_seen = (now, avail)
    if need.bytes > avail:
        raise TooLargeError(source, [Problem(
            need.path, f"{need.what} needs about {human(need.bytes)} of memory; {human(avail)} is available "
                       f"(set {MEMORY_ENV} to change what kassign assumes, see docs/format.md#limits)")])


def consumer_need(instance: Any, kind: str, what: str, workers: int = 1) -> Need:
    """Estimate for a consumer-protocol instance: partitions and (partition, subscriber) pairs.

    Parameters
    ----------
    instance
        A consumer :class:`~solver.model.Instance`.
    kind
        ``"heuristic"``, ``"solver"`` or ``"score"`` (:data:`CONSUMER_COSTS`).
    what
        Who needs it (``"assignor 'range'"``), for the message.
    workers
        Solver threads (``kind="solver"``): each costs :data:`SOLVER_PER_WORKER`.
    """
    per_part, per_pair = CONSUMER_COSTS[kind]
    flow = not instance.has_weights and len({m.capacity for m in instance.members}) <= 1
    base = solver_base(workers) if kind == "solver" else 0
    if kind == "solver" and flow:
        # equal items go to the min-cost flow, whose arcs follow item classes, not partition-member pairs
        # (1,000,000 partitions x 2,000 members: about 300 MB peak, docs/benchmarks.md)
        per_part, per_pair = FLOW_COSTS
    subscribers: dict[str, int] = {}
    for m in instance.members:
        for t in m.topics:
            subscribers[t] = subscribers.get(t, 0) + 1
    parts = pairs = 0
    biggest, name = -1, ""
    for t in instance.topics.values():
        parts += t.partitions
        pairs += t.partitions * subscribers.get(t.name, 0)
        if t.partitions > biggest:
            biggest, name = t.partitions, t.name
    path = f"topics.{name}.partitions" if name else ""
    return Need(base + per_part * parts + per_pair * pairs,
                f"{what} on {parts} partitions ({pairs} partition-member pairs)", path)


def streams_need(instance: Any, kind: str, what: str, name: str = "", workers: int = 1) -> Need:
    """Estimate for a Streams instance: tasks, clients and (task, client, replica) triples.

    ``name`` is the assignor's registry name; assignors in :data:`QUADRATIC_IN_CLIENTS`
    also get the work limit :data:`HA_WORK_LIMIT`.
    """
    spec = instance.streams
    tasks, clients = len(spec.tasks), len(spec.clients)
    replicas = 1 + min(spec.config.num_standby_replicas, max(clients - 1, 0))
    per_task, per_client, per_triple = STREAMS_COSTS[kind]
    need = per_task * tasks + per_client * clients + per_triple * tasks * clients * replicas
    if kind == "solver":
        need += solver_base(workers)
    if name in PER_MEMBER or spec.has_members:
        # KIP-1071: every writer and the scorer build each member (a client without members: capacity of them),
        # and the optimum's sharing step a flow node pair per member (solver.streams.members.share)
        members = sum(len(c.members) if c.members is not None else c.capacity for c in spec.clients)
        need += BYTES_PER_MEMBER * members
        if members > MEMBER_LIMIT:
            return Need(need, f"{what} on {members} members", "clients", members, MEMBER_LIMIT,
                        f"{what} on {members:,} group members (a client without members counts its capacity: one "
                        f"member per stream thread): at most {MEMBER_LIMIT:,}, which take about 25 s (see "
                        f"docs/format.md#limits)")
    if name in TASK_PAIRS:
        slots = sum(replicas if t.stateful else 1 for t in spec.tasks)  # stateless tasks get no standbys
        per_client = -(-slots // max(clients, 1))
        pairs = min(tasks * (tasks - 1) // 2, max(clients, 1) * per_client * per_client // 2)
        need += BYTES_PER_PAIR * pairs
        if pairs > PAIR_LIMIT:
            return Need(need, f"{what} on {tasks} tasks", "tasks", pairs, PAIR_LIMIT,
                        f"{what} on {tasks:,} tasks ({slots:,} with their standbys) over {clients:,} client(s) keeps "
                        f"about "
                        f"{pairs:,} pairs of tasks that share a client (Kafka's TaskPairs): at most "
                        f"{PAIR_LIMIT:,}, which take about 10 s (see docs/format.md#limits)")
    if name in PER_CLIENT_WORK_LIMIT and clients * tasks * replicas > PER_CLIENT_WORK_LIMIT[name]:
        work, limit = clients * tasks * replicas, PER_CLIENT_WORK_LIMIT[name]
        return Need(need, f"{what} on {tasks} tasks", "clients" if clients >= tasks else "tasks", work, limit,
                    f"{what} on {clients:,} clients x {tasks:,} tasks x {replicas} replica(s) scans every client "
                    f"for every replica it places ({work:.3g}; the limit is {limit:.3g}, about 12 s; see "
                    f"docs/format.md#limits)")
    work = clients * clients * tasks * replicas if name in QUADRATIC_IN_CLIENTS else 0
    return Need(need, f"{what} on {tasks} tasks x {clients} clients x {replicas} replica(s)",
                "clients" if clients >= tasks else "tasks", work, HA_WORK_LIMIT if work else 0,
                f"{what} on {clients} clients x {tasks} tasks x {replicas} replica(s) would run for hours: its "
                f"work grows with clients^2 x tasks x replicas ({work:.3g}; the limit is {HA_WORK_LIMIT:.3g}, "
                f"about a minute; see docs/format.md#limits)")


def instance_need(instance: Any, kind: str, what: str, name: str = "", workers: int = 1) -> Need:
    """:func:`consumer_need` or :func:`streams_need`, by the instance's protocol."""
    if instance.protocol == "streams":
        return streams_need(instance, kind, what, name, workers)
    return consumer_need(instance, kind, what, workers)
