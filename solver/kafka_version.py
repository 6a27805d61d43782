"""Kafka releases: which one a Kafka-named assignor follows, and the rule in force at each.

Kafka's assignors change between releases (KIP-848's ``uniform`` in 4.0.1,
the Streams group coordinator's ``sticky`` in 4.3.2 and 4.4.0, ...).  Every
assignor named after a Kafka class follows one release: the ``--kafka-version``
flag (``Params.kafka_version``), else the instance's ``kafka_version`` field,
else :data:`DEFAULT` (the newest release modelled).

Accepted spellings: ``X.Y.Z`` (a release), ``X.Y`` (the newest release of that
line, as Kafka's own system tests read ``LATEST_X_Y``) and ``X.Y.Z-SNAPSHOT``
(a build of that release's branch before the release, which follows that
release's rules).  Every release from 3.0.0 on is known (:data:`RELEASES`);
anything else is a :class:`KafkaVersionError` that lists them.

Examples
--------
>>> str(KafkaVersion.parse("4.3")), str(KafkaVersion.parse("4.4.0-SNAPSHOT")), str(DEFAULT)
('4.3.2', '4.4.0', '4.4.0')
>>> rules = VersionRules("4.0.0", (("4.0.0", "4.0.0"), ("4.0.1", "4.0.1+ (KAFKA-18688)")))
>>> rules.rule(KafkaVersion.parse("4.3.1"), "uniform")
'4.0.1+ (KAFKA-18688)'
>>> rules.rule(KafkaVersion.parse("3.9"), "uniform")
Traceback (most recent call last):
...
solver.kafka_version.KafkaVersionError: assignor 'uniform' is not in Kafka 3.9.2: kassign models it from Kafka 4.0.0
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from solver.errors import KassignError

#: Every Apache Kafka release from 3.0.0 on, oldest first: the releases in Kafka's own
#: ``tests/kafkatest/version.py`` (4.4 branch), then 4.0.2, 4.2.2, 4.3.2 and 4.4.0 (4.0.2 and 4.2.2 are on
#: Maven Central and in the differential matrix).
RELEASES: tuple[str, ...] = (
    "3.0.0", "3.0.1", "3.0.2", "3.1.0", "3.1.1", "3.1.2", "3.2.0", "3.2.1", "3.2.2", "3.2.3",
    "3.3.0", "3.3.1", "3.3.2", "3.4.0", "3.4.1", "3.5.0", "3.5.1", "3.5.2", "3.6.0", "3.6.1", "3.6.2",
    "3.7.0", "3.7.1", "3.7.2", "3.8.0", "3.8.1", "3.9.0", "3.9.1", "3.9.2",
    "4.0.0", "4.0.1", "4.0.2", "4.1.0", "4.1.1", "4.1.2", "4.2.0", "4.2.1", "4.2.2", "4.3.0", "4.3.1", "4.3.2", "4.4.0",
)

_FORM = re.compile(r"(\d{1,4})\.(\d{1,4})(?:\.(\d{1,4}))?(-SNAPSHOT)?", re.ASCII)  # 0-9 only, not "٤.٤"


class KafkaVersionError(KassignError):
    """A Kafka version kassign does not know, or an assignor that a release does not have (exit 2)."""

    exit_code = 2


def supported_text() -> str:
    """The known releases as one line, grouped by release line.

    Examples
    --------
    >>> supported_text().split("; ")[-2:]
    ['4.3.0-4.3.2', '4.4.0']
    """
    lines: dict[str, list[str]] = {}
    for r in RELEASES:
        lines.setdefault(r.rsplit(".", 1)[0], []).append(r)
    return "; ".join(v[0] if len(v) == 1 else f"{v[0]}-{v[-1]}" for v in lines.values())


@dataclass(frozen=True, order=True)
class KafkaVersion:
    """One Kafka release, ordered as releases are.

    Attributes
    ----------
    major, minor, patch
        ``4``, ``3``, ``1`` for Kafka 4.3.1.
    """

    major: int
    minor: int
    patch: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    @classmethod
    def parse(cls, text: str) -> KafkaVersion:
        """Read ``X.Y``, ``X.Y.Z`` or ``X.Y.Z-SNAPSHOT`` (see the module docstring).

        Raises
        ------
        KafkaVersionError
            For anything that is not a known release, naming the known ones.

        Examples
        --------
        >>> KafkaVersion.parse("3.8.1") < KafkaVersion.parse("4.0")
        True
        >>> KafkaVersion.parse("5.0")
        Traceback (most recent call last):
        ...
        solver.kafka_version.KafkaVersionError: unknown Kafka version '5.0'; kassign knows 3.0.0-3.0.2; \
3.1.0-3.1.2; 3.2.0-3.2.3; 3.3.0-3.3.2; 3.4.0-3.4.1; 3.5.0-3.5.2; 3.6.0-3.6.2; 3.7.0-3.7.2; 3.8.0-3.8.1; \
3.9.0-3.9.2; 4.0.0-4.0.2; 4.1.0-4.1.2; 4.2.0-4.2.2; 4.3.0-4.3.2; 4.4.0 (X.Y: the newest release of that line)
        """
        if not isinstance(text, str):
            raise KafkaVersionError(f"a Kafka version is a string like '4.3.1', got {text!r}")
        m = _FORM.fullmatch(text.strip())
        found: str | None = None
        if m is not None:
            major, minor, patch, snapshot = m.groups()
            line = f"{int(major)}.{int(minor)}"
            if patch is None and snapshot is None:
                found = next((r for r in reversed(RELEASES) if r.rsplit(".", 1)[0] == line), None)
            elif patch is not None:
                candidate = f"{line}.{int(patch)}"
                found = candidate if candidate in RELEASES else None
        if found is None:
            shown = text if len(text) <= 40 else text[:40] + "..."
            raise KafkaVersionError(f"unknown Kafka version {shown!r}; kassign knows {supported_text()} "
                                    "(X.Y: the newest release of that line)")
        a, b, c = (int(x) for x in found.split("."))
        return cls(a, b, c)


#: The newest release modelled: what Kafka-named assignors follow when nothing else is said.
DEFAULT = KafkaVersion.parse(RELEASES[-1])


def release(version: str | None) -> KafkaVersion:
    """The release an assignor runs at, from ``Params.kafka_version`` (resolved by the registry): ``None`` is
    :data:`DEFAULT`.

    Examples
    --------
    >>> str(release("4.3.1")), str(release(None))
    ('4.3.1', '4.4.0')
    """
    return KafkaVersion.parse(version) if version is not None else DEFAULT


def resolve(flag: str | None, instance_field: str | None) -> KafkaVersion:
    """The release to follow: the flag (``Params.kafka_version``), else the instance's field, else :data:`DEFAULT`.

    Examples
    --------
    >>> str(resolve(None, "4.3.1")), str(resolve("4.2", "4.3.1")), str(resolve(None, None))
    ('4.3.1', '4.2.2', '4.4.0')
    """
    if flag is not None:
        return KafkaVersion.parse(flag)
    if instance_field is not None:
        return KafkaVersion.parse(instance_field)
    return DEFAULT


@dataclass(frozen=True)
class VersionRules:
    """Which rule of one Kafka assignor is in force at each release.

    Attributes
    ----------
    since
        The first release kassign models the assignor at (the release that
        introduced it, or where its modelled code begins).
    rules
        ``(first release, label)`` pairs, oldest first; a release follows the
        last rule that starts at or before it.  The label names the rule in
        output and docs (``"4.0.1+ (KAFKA-18688)"``).
    before
        Why releases before ``since`` are refused, when the assignor existed
        there in another form (added to the error message).
    """

    since: str
    rules: tuple[tuple[str, str], ...]
    before: str = ""

    def __post_init__(self) -> None:
        starts = [KafkaVersion.parse(s) for s, _ in self.rules]
        if not starts or starts != sorted(starts) or starts[0] != KafkaVersion.parse(self.since):
            raise ValueError("rules must start at `since` and be in release order")

    def rule(self, version: KafkaVersion, assignor: str) -> str:
        """The label of the rule in force at ``version``.

        Raises
        ------
        KafkaVersionError
            When ``version`` is older than :attr:`since`.
        """
        if version < KafkaVersion.parse(self.since):
            why = f" ({self.before})" if self.before else ""
            raise KafkaVersionError(f"assignor {assignor!r} is not in Kafka {version}: kassign models it from "
                                    f"Kafka {self.since}{why}")
        label = self.rules[0][1]
        for start, text in self.rules:
            if KafkaVersion.parse(start) <= version:
                label = text
        return label

    def table(self) -> list[tuple[str, str, str]]:
        """``(first release, last release, label)`` per rule, for docs and ``kassign list``.

        Examples
        --------
        >>> VersionRules("4.0.0", (("4.0.0", "a"), ("4.0.1", "b"))).table()
        [('4.0.0', '4.0.0', 'a'), ('4.0.1', '4.4.0', 'b')]
        """
        out = []
        for k, (start, label) in enumerate(self.rules):
            if k + 1 < len(self.rules):
                nxt = self.rules[k + 1][0]
                last = RELEASES[RELEASES.index(nxt) - 1]
            else:
                last = RELEASES[-1]
            out.append((start, last, label))
        return out


__all__ = ["DEFAULT", "RELEASES", "KafkaVersion", "KafkaVersionError", "VersionRules", "release", "resolve",
           "supported_text"]
