"""One registry by name for every assignor (Kafka heuristics) and solver.

Modules register themselves on import with :func:`register`.  ``solver`` never
imports ``heuristics``; :func:`spark_runner.assignors.load_all` imports both
packages so that the registry is complete.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from solver.kafka_version import VersionRules, resolve
from solver.model import Instance
from solver.options import ASSIGNOR_OPTIONS, check_assignor_options
from solver.resources import check_fits, instance_need
from solver.result import Params, Result

AssignFn = Callable[[Instance, Params], Result]
Kind = Literal["heuristic", "solver"]


class UnknownAssignorError(KeyError):
    """Raised for a name that is not registered."""


class UnsupportedInstanceError(ValueError):
    """Raised when an assignor cannot handle an instance (e.g. wrong protocol)."""


@dataclass(frozen=True)
class AssignorSpec:
    """A registered assignor or solver.

    Attributes
    ----------
    name
        Registry name (``range``, ``cooperative-sticky``, ``optimal`` ...).
    fn
        ``fn(instance, params) -> Result``.
    kind
        ``"heuristic"`` (a Kafka assignor) or ``"solver"`` (exact).
    protocol
        ``"consumer"`` or ``"streams"``.
    summary
        One line for ``kassign list``.
    source
        Where the rule comes from (Kafka class, KIP or JIRA).
    versions
        For an assignor named after a Kafka class: the Kafka releases it is
        modelled at and the rule in force at each (``None`` for solvers and
        proposals that Kafka never shipped).
    """

    name: str
    fn: AssignFn
    kind: Kind
    protocol: str
    summary: str
    source: str = ""
    versions: VersionRules | None = None

    def run(self, instance: Instance, params: Params | None = None) -> Result:
        """Run on ``instance``; fills ``seconds`` when the function did not.

        A Kafka-named assignor runs at one Kafka release (``params.kafka_version``,
        else ``instance.kafka_version``, else the newest modelled): ``fn`` gets it
        resolved in ``params.kafka_version`` (``"4.3.1"``), and the result says it
        in ``extra["kafka_version"]``.

        Raises
        ------
        solver.kafka_version.KafkaVersionError
            For an unknown release, or one that does not have this assignor.
        """
        if instance.protocol != self.protocol:
            raise UnsupportedInstanceError(
                f"assignor {self.name!r} is for the {self.protocol} protocol, "
                f"the instance uses {instance.protocol!r}"
            )
        p = params or Params()
        # Option values in range (solver.options), the Kafka release, then refuse, before anything is built per
        # partition or task, what this machine cannot hold.
        opts = check_assignor_options(self.name, p.options, strict=False)
        if opts != dict(p.options):
            p = replace(p, options=opts)
        version = None
        if self.versions is not None:
            version = resolve(p.kafka_version, instance.kafka_version)
            self.versions.rule(version, self.name)  # refuses a release without this assignor
            p = replace(p, kafka_version=str(version))
        workers = opts.get("workers", 1) if "workers" in ASSIGNOR_OPTIONS.get(self.name, {}) else 1
        check_fits(instance_need(instance, self.kind, f"assignor {self.name!r}", self.name, workers),
                   instance.name or "instance")
        t0 = time.perf_counter()
        res = self.fn(instance, p)
        seconds = res.seconds if res.seconds != 0.0 else time.perf_counter() - t0
        extra: Mapping[str, Any] = res.extra
        if version is not None:
            extra = {**res.extra, "kafka_version": str(version)}
        if seconds != res.seconds or version is not None:
            res = Result(res.assignment, res.status, res.objective, res.bound, seconds, extra)
        return res

    def rule(self, params: Params, instance: Instance | None = None) -> str | None:
        """The label of the Kafka rule this assignor follows for ``params`` (and ``instance``), or ``None``."""
        if self.versions is None:
            return None
        return self.versions.rule(resolve(params.kafka_version, instance.kafka_version if instance else None),
                                  self.name)


_REGISTRY: dict[str, AssignorSpec] = {}


def register(
    name: str,
    *,
    kind: Kind = "heuristic",
    protocol: str = "consumer",
    summary: str = "",
    source: str = "",
    versions: VersionRules | None = None,
) -> Callable[[AssignFn], AssignFn]:
    """Decorator registering ``fn(instance, params) -> Result`` under ``name``.

    ``versions`` marks an assignor named after a Kafka class: the releases it
    is modelled at and its rule at each (:class:`~solver.kafka_version.VersionRules`).
    """

    def deco(fn: AssignFn) -> AssignFn:
        prev = _REGISTRY.get(name)
        # The same function imported a second time (doctest collection re-imports modules) replaces itself;
        # a different function under a taken name is a bug.
        if prev is not None and (prev.fn.__module__.rsplit(".", 1)[-1], prev.fn.__qualname__) != (
            fn.__module__.rsplit(".", 1)[-1], fn.__qualname__
        ):
            raise ValueError(f"assignor {name!r} registered twice")
        _REGISTRY[name] = AssignorSpec(name, fn, kind, protocol, summary, source, versions)
        return fn

    return deco


def get(name: str) -> AssignorSpec:
    """Return the spec registered under ``name``."""
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise UnknownAssignorError(f"unknown assignor {name!r}{did_you_mean(name, _REGISTRY)} (known: {known})"
                                   ) from None


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest known name (typos, missing dashes), else ``""``.

    Examples
    --------
    >>> did_you_mean("coperative-sticky", ["cooperative-sticky", "sticky", "range"])
    "; did you mean 'cooperative-sticky'?"
    >>> did_you_mean("cooperativesticky", ["cooperative-sticky", "sticky"])
    "; did you mean 'cooperative-sticky'?"
    >>> did_you_mean("zzz", ["range"])
    ''
    """
    import difflib

    names = list(known)
    folded = {n.replace("-", "").replace("_", "").lower(): n for n in names}
    key = name.replace("-", "").replace("_", "").lower()
    if key in folded:
        return f"; did you mean {folded[key]!r}?"
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def all_specs() -> list[AssignorSpec]:
    """Every registered spec, sorted by kind then name."""
    return sorted(_REGISTRY.values(), key=lambda s: (s.kind != "heuristic", s.protocol, s.name))
