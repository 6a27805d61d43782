"""The Kafka releases each Kafka-named assignor is modelled at, and the rule in force at each.

Read in Kafka's sources (release branches 3.0 to 4.4).  A release follows the
last rule that starts at or before it; docs/algorithms.md prints this table.
``kassign list --json`` and every result's ``stats.kafka_version`` say which
release an assignor followed.
"""

from __future__ import annotations

from solver.kafka_version import KafkaVersion, VersionRules

#: KIP-848's homogeneous ``uniform`` keeps balanced groups still (KAFKA-18688, 4.0.1 and 4.1.0).
KAFKA_18688 = KafkaVersion(4, 0, 1)
#: The group coordinator's Streams ``sticky`` skips previous standby holders whose process has the task:
#: from 4.3.2 on, and back-ported to 4.2.2 (Kafka 4.2.2's released jar has it; 4.3.0 and 4.3.1 do not).
KAFKA_20899 = KafkaVersion(4, 3, 2)
KAFKA_20899_BACKPORTS = (KafkaVersion(4, 2, 2),)


def has_kafka_20899(version: KafkaVersion) -> bool:
    """Whether ``version`` has KAFKA-20899 (found by running Kafka's released jars: 4.2.2 has it, 4.3.1 not).

    Examples
    --------
    >>> [has_kafka_20899(KafkaVersion.parse(v)) for v in ("4.2.1", "4.2.2", "4.3.1", "4.3.2", "4.4.0")]
    [False, True, False, True, True]
    """
    return version >= KAFKA_20899 or version in KAFKA_20899_BACKPORTS
#: 4.4.0: members' current tasks (KAFKA-20790) and reported offsets (KAFKA-20719); computeIfAbsent process map.
KAFKA_20719 = KafkaVersion(4, 4, 0)
#: KIP-924's ``StickyTaskAssignor``: a ceiling of the proportional share of actives per client (4.4.0).
KAFKA_20198 = KafkaVersion(4, 4, 0)
#: KIP-881: ``range``, ``sticky`` and ``cooperative-sticky`` read member racks from 3.5.0.
KIP_881 = KafkaVersion(3, 5, 0)

_KIP_848_BEFORE = ("KIP-848's server-side assignors were early access in 3.7 and preview in 3.8-3.9, "
                   "with code kassign does not model; generally available from 4.0.0")

UNIFORM = VersionRules(
    "4.0.0",
    (("4.0.0", "the first (partitions % members) members walked take the extra partitions"),
     ("4.0.1", "a member keeps an extra partition only if its kept ones fill it, else the last members walked "
               "take them (KAFKA-18688)")),
    before=_KIP_848_BEFORE,
)
SERVER_RANGE = VersionRules("4.0.0", (("4.0.0", "one rule (KAFKA-16944's rewrite)"),), before=_KIP_848_BEFORE)

STREAMS_SERVER_STICKY = VersionRules(
    "4.2.0",
    (("4.2.0", "previous target assignment; a standby's previous holders give up when the first one's "
               "process has the task"),
     ("4.2.2", "previous holders whose process has the task are skipped (KAFKA-20899, back-ported to 4.2.2)"),
     ("4.3.0", "as 4.2.0: 4.3.0 and 4.3.1 lack KAFKA-20899"),
     ("4.3.2", "previous holders whose process has the task are skipped (KAFKA-20899)"),
     ("4.4.0", "current tasks, and reported offsets, make candidates (KAFKA-20790, KAFKA-20719); process "
               "map filled by computeIfAbsent")),
    before="the Streams rebalance protocol (KIP-1071) was early access in 4.1 with another assignor "
           "(task pairs); generally available from 4.2.0",
)
KIP924_STICKY = VersionRules(
    "3.8.0",
    (("3.8.0", "a client keeps previous actives up to threads x floor(tasks / total threads)"),
     ("4.4.0", "up to ceil(tasks x threads / total threads) (KAFKA-20198)")),
)

RANGE = VersionRules(
    "3.0.0",
    (("3.0.0", "member racks not read"),
     ("3.5.0", "rack-aware when members and partitions have racks (KIP-881)")),
)
ROUNDROBIN = VersionRules("3.0.0", (("3.0.0", "one rule"),))


_STICKY_BEFORE = ("kassign models AbstractStickyAssignor as it stands from 3.7.1 to 4.4; earlier releases differ: "
                  "KAFKA-16277 and KAFKA-15170 (3.7.1), KAFKA-15106 (3.5.2), KIP-881 racks (3.5.0), "
                  "KAFKA-14639 (3.4.1)")
STICKY = VersionRules("3.7.1", (("3.7.1", "one rule (KAFKA-16277, KAFKA-15170 and KIP-881 in)"),),
                      before=_STICKY_BEFORE)
COOPERATIVE_STICKY = STICKY

_STREAMS_BEFORE = ("kassign models Kafka Streams' classic assignors as they stand from 3.8.0 to 4.4 (after KIP-924 "
                   "reworked their inputs); earlier releases differ: 3.6-3.7 in code kassign has not checked "
                   "line by line, and before 3.6.0 there is no rack awareness (KIP-925)")
HIGH_AVAILABILITY = VersionRules("3.8.0", (("3.8.0", "one rule (KIP-441, KIP-925, KIP-708 client tags)"),),
                                 before=_STREAMS_BEFORE)
STICKY_TASK = VersionRules("3.8.0", (("3.8.0", "one rule (LegacyStickyTaskAssignor, KIP-925)"),),
                           before=_STREAMS_BEFORE)

__all__ = [
    "CAMPAIGN_CASES",
    "CAMPAIGN_DATE",
    "COOPERATIVE_STICKY",
    "DIFFERENTIAL_MATRIX",
    "HIGH_AVAILABILITY",
    "KAFKA_18688",
    "KAFKA_20198",
    "KAFKA_20719",
    "KAFKA_20899",
    "KAFKA_20899_BACKPORTS",
    "KIP924_STICKY",
    "KIP_881",
    "RANGE",
    "ROUNDROBIN",
    "SERVER_RANGE",
    "STICKY",
    "STICKY_TASK",
    "STREAMS_SERVER_STICKY",
    "UNIFORM",
    "checked",
    "has_kafka_20899",
]


# --------------------------------------------------------------------------- checked against Kafka's jars

#: The releases of the differential matrix (``java/releases``): kassign's answers are compared there with
#: Apache Kafka's released classes (docs/algorithms.md, "Apache Kafka's own classes as the reference").
DIFFERENTIAL_MATRIX: tuple[str, ...] = (
    "3.0.2", "3.1.2", "3.2.3", "3.3.2", "3.4.1", "3.5.2", "3.6.2", "3.7.2", "3.8.1", "3.9.2",
    "4.0.0", "4.0.1", "4.0.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0",
)
#: Random cases per release that each assignor was checked on against Kafka's classes, all exact: the
#: last long campaign (``python -m benchmarks.differential``, date in :data:`CAMPAIGN_DATE`), else CI's
#: fixed-seed sample (200 per release, on every run; docs/benchmarks.md has the campaign's figures).
CAMPAIGN_CASES: dict[str, int] = {
    "range": 10_000, "roundrobin": 10_000, "sticky": 13_000, "cooperative-sticky": 12_000, "uniform": 10_000,
    "server-range": 10_000, "high-availability": 10_000, "streams-server-sticky": 10_000, "sticky-task": 10_000,
    "kip924-sticky": 10_000,
}
#: When :data:`CAMPAIGN_CASES` was measured.
CAMPAIGN_DATE = "2026-11-27"


def checked(name: str, first: str, last: str) -> str:
    """The matrix releases in ``first..last`` where ``name`` was checked, and on how many cases each.

    Examples
    --------
    >>> checked("fair", "3.0.0", "4.4.0")
    '-'
    """
    if name not in CAMPAIGN_CASES:
        return "-"

    def key(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in v.split("."))

    rel = [r for r in DIFFERENTIAL_MATRIX if key(first) <= key(r) <= key(last)]
    if not rel:
        return "no release of the matrix (not on Maven Central here)"
    span = rel[0] if len(rel) == 1 else f"{rel[0]}, ..., {rel[-1]}" if len(rel) > 3 else ", ".join(rel)
    return f"{span} ({len(rel)} release{'s' if len(rel) > 1 else ''}) x {CAMPAIGN_CASES[name]:,} cases"
