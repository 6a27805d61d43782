"""Which assignors ship with Kafka (or its clients), since which release, and how to turn each one on.

A recommendation is only worth something if a user can deploy it: :data:`SHIPPED` holds one line per
assignor that Apache Kafka ships -- the first release that has it and the configuration key and value
that select it -- and :data:`PROPOSALS` the rules kassign models that no Kafka release ships (KIPs
that were never merged, third-party libraries).  Verdicts (the sweep report, ``kassign compare``)
recommend among :data:`SHIPPED` only and show proposals apart, as what they would gain.

Adding an assignor is one line here.  Facts as read in Apache Kafka's sources (release branches):
``RangeAssignor`` and ``RoundRobinAssignor`` are in 0.9.0, ``StickyAssignor`` from 0.11.0,
``CooperativeStickyAssignor`` from 2.4.0; the client's default ``partition.assignment.strategy`` is
``[RangeAssignor, CooperativeStickyAssignor]`` since 3.0.  The KIP-848 server-side assignors
(``uniform``, ``range``) run in the group coordinator from 3.7 (early access) and are generally
available from 4.0.0; a consumer picks one with ``group.remote.assignor`` under
``group.protocol=consumer``, and without it the coordinator uses the first of the broker's
``group.consumer.assignors`` (``uniform,range`` by default).  Kafka Streams has run the KIP-441
``HighAvailabilityTaskAssignor`` by default since 2.6.0; its older ``StickyTaskAssignor`` (from
0.11.0; ``LegacyStickyTaskAssignor`` from 3.8.0) is selected with the internal setting
``internal.task.assignor.class``, and KIP-924's public assignors (3.8.0) with ``task.assignor.class``.

Examples
--------
>>> shipped("cooperative-sticky").setting
'partition.assignment.strategy=org.apache.kafka.clients.consumer.CooperativeStickyAssignor'
>>> shipped("uniform").since, shipped("uniform").needs
('4.0.0', 'with group.protocol=consumer (KIP-848) on brokers 4.0 or later')
>>> shipped("fair") is None, PROPOSALS["fair"]
(True, 'KIP-49 (never merged)')
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shipped:
    """An assignor that a Kafka release ships, and how to select it.

    Attributes
    ----------
    name
        kassign's name for it.
    protocol
        ``consumer`` or ``streams``.
    since
        The first Apache Kafka release that ships it (client, broker or Kafka Streams).
    key, value
        The configuration that selects it.
    needs
        What else must hold (protocol, broker release), or ``""``.
    """

    name: str
    protocol: str
    since: str
    key: str
    value: str
    needs: str = ""

    @property
    def setting(self) -> str:
        """``key=value``, as it goes into the client's properties (``key unset`` for a default).

        >>> shipped("high-availability").setting
        'task.assignor.class unset'
        """
        return f"{self.key} unset" if self.value == UNSET else f"{self.key}={self.value}"

    def how(self) -> str:
        """One line: the setting, the release and what else it needs.

        >>> shipped("range").how()
        'partition.assignment.strategy=org.apache.kafka.clients.consumer.RangeAssignor (Kafka 0.9.0 or later)'
        """
        return f"{self.setting} (Kafka {self.since} or later{', ' + self.needs if self.needs else ''})"


#: The value of a setting that selects the default by leaving the key out.
UNSET = "(unset)"
_CLIENT = "org.apache.kafka.clients.consumer."
_KIP848 = "with group.protocol=consumer (KIP-848) on brokers 4.0 or later"

#: One line per assignor that ships with Kafka.
SHIPPED: tuple[Shipped, ...] = (
    Shipped("range", "consumer", "0.9.0", "partition.assignment.strategy", _CLIENT + "RangeAssignor"),
    Shipped("roundrobin", "consumer", "0.9.0", "partition.assignment.strategy", _CLIENT + "RoundRobinAssignor"),
    Shipped("sticky", "consumer", "0.11.0", "partition.assignment.strategy", _CLIENT + "StickyAssignor"),
    Shipped("cooperative-sticky", "consumer", "2.4.0", "partition.assignment.strategy",
            _CLIENT + "CooperativeStickyAssignor"),
    Shipped("uniform", "consumer", "4.0.0", "group.remote.assignor", "uniform", _KIP848),
    Shipped("server-range", "consumer", "4.0.0", "group.remote.assignor", "range", _KIP848),
    Shipped("high-availability", "streams", "2.6.0", "task.assignor.class", UNSET,
            "Kafka Streams' default"),
    Shipped("sticky-task", "streams", "0.11.0", "internal.task.assignor.class",
            "org.apache.kafka.streams.processor.internals.assignment.LegacyStickyTaskAssignor",
            "an internal setting; StickyTaskAssignor before 3.8"),
    Shipped("kip924-sticky", "streams", "3.8.0", "task.assignor.class",
            "org.apache.kafka.streams.processor.assignment.assignors.StickyTaskAssignor"),
    Shipped("streams-server-sticky", "streams", "4.2.0", "group.protocol", "streams",
            "KIP-1071: the group coordinator assigns the tasks, on brokers 4.2 or later"),
)

#: Rules kassign models that no Kafka release ships: what each one is.
PROPOSALS: dict[str, str] = {
    "fair": "KIP-49 (never merged)",
    "stream-join-sticky": "KIP-315 (never merged)",
    "state-store-weighted": "KIP-262 (rejected)",
    "lag-based": "a third-party library (grantneale/kafka-lag-based-assignor), not part of Kafka",
}

_BY_NAME = {s.name: s for s in SHIPPED}


def shipped(name: str) -> Shipped | None:
    """The :class:`Shipped` line of ``name``, or ``None`` when no Kafka release ships it.

    A sweep's ``NAME@X.Y.Z`` (an assignor at one Kafka release) is the assignor ``NAME``.

    >>> shipped("uniform@4.0.0").name
    'uniform'
    """
    return _BY_NAME.get(name.partition("@")[0])


#: Kafka class names that select an assignor but are not the value of its setting today: the Streams
#: classes of older releases and the group coordinator's classes behind ``uniform`` and ``range``.
_CLASS_ALIASES: dict[str, str] = {
    "org.apache.kafka.streams.processor.internals.assignment.StickyTaskAssignor": "sticky-task",
    "org.apache.kafka.streams.processor.internals.assignment.HighAvailabilityTaskAssignor": "high-availability",
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "server-range",
}


def _class_names() -> dict[str, str]:
    """Full class name -> kassign name, and the simple name of each setting's class (today's classes only:
    ``StickyTaskAssignor`` is KIP-924's public one, ``RangeAssignor`` the client's)."""
    full = {s.value: s.name for s in SHIPPED if "." in s.value}
    simple = {cls.rsplit(".", 1)[1]: name for cls, name in full.items()}
    return {**simple, **full, **_CLASS_ALIASES}


_BY_CLASS = _class_names()


def from_class_name(name: str) -> str | None:
    """kassign's name for a Kafka class name (full, or the simple name of a setting's class), else ``None``.

    A sweep's ``@X.Y.Z`` suffix is kept.

    Examples
    --------
    >>> from_class_name("org.apache.kafka.clients.consumer.CooperativeStickyAssignor")
    'cooperative-sticky'
    >>> from_class_name("RangeAssignor@3.9.0"), from_class_name("range")
    ('range@3.9.0', None)
    >>> from_class_name("org.apache.kafka.streams.processor.assignment.assignors.StickyTaskAssignor")
    'kip924-sticky'
    >>> from_class_name("org.apache.kafka.streams.processor.internals.assignment.LegacyStickyTaskAssignor")
    'sticky-task'
    >>> from_class_name("StickyTaskAssignor")
    'kip924-sticky'
    >>> from_class_name("org.apache.kafka.coordinator.group.assignor.RangeAssignor")
    'server-range'
    """
    base, at, release = name.partition("@")
    got = _BY_CLASS.get(base.strip())
    return None if got is None else got + at + release


__all__ = ["PROPOSALS", "SHIPPED", "UNSET", "Shipped", "from_class_name", "shipped"]
