"""Kafka Streams client tags (KIP-708): each client's ``client.tag.*`` and ``rack.aware.assignment.tags``.

A Kafka Streams client names its location with ``client.tag.<key>=<value>`` configs (``zone``,
``cluster``, ...); ``rack.aware.assignment.tags`` lists the keys over whose values the group leader
spreads every task's standbys (Kafka's ``ClientTagAwareStandbyTaskAssignor``).  Kafka's
``StreamsConfig`` refuses, at a client's start, more than 5 client tags, a blank key or value, a key of
more than 20 characters and a value of more than 30 (Java ``String.length()``: UTF-16 code units), and a
``rack.aware.assignment.tags`` of more than 5 entries or with an empty one; kassign refuses the same in an
instance (exit 65).

Examples
--------
>>> problems = []
>>> check_client_tags({"zone": "eu-1a", "": "x"}, ("clients", 0, "client_tags"),
...                   lambda where, msg: problems.append((where, msg)))
>>> problems
[(('clients', 0, 'client_tags'), "blank tag key '' (Kafka refuses it: missing client tag key)")]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

#: ``StreamsConfig.MAX_RACK_AWARE_ASSIGNMENT_TAG_LIST_SIZE``: client tags of one client, and keys configured.
MAX_TAGS = 5
#: ``StreamsConfig.MAX_RACK_AWARE_ASSIGNMENT_TAG_KEY_LENGTH``.
MAX_KEY_LENGTH = 20
#: ``StreamsConfig.MAX_RACK_AWARE_ASSIGNMENT_TAG_VALUE_LENGTH``.
MAX_VALUE_LENGTH = 30

Where = tuple[str | int, ...]


def java_length(s: str) -> int:
    """Java's ``String.length()``: UTF-16 code units (a character beyond the BMP counts 2)."""
    return len(s.encode("utf-16-be")) // 2


def check_client_tags(tags: Mapping[str, str], where: Where, bad: Callable[[Where, str], None]) -> None:
    """Report (``bad(path, message)``) what Kafka's ``StreamsConfig`` refuses in one client's tags."""
    if len(tags) > MAX_TAGS:
        bad(where, f"{len(tags)} client tags; Kafka Streams allows at most {MAX_TAGS} (client.tag.*)")
    for key, value in tags.items():
        at = (*where, key)
        if not key.strip():
            bad(where, f"blank tag key {key!r} (Kafka refuses it: missing client tag key)")
            continue
        if java_length(key) > MAX_KEY_LENGTH:
            bad(at, f"tag key of {java_length(key)} characters; Kafka allows at most {MAX_KEY_LENGTH}")
        if not value.strip():
            bad(at, "blank tag value (Kafka refuses it: tag value cannot be empty)")
        elif java_length(value) > MAX_VALUE_LENGTH:
            bad(at, f"tag value of {java_length(value)} characters; Kafka allows at most {MAX_VALUE_LENGTH}")


def check_tag_config(keys: Sequence[str], where: Where, bad: Callable[[Where, str], None]) -> None:
    """Report what Kafka refuses in ``rack.aware.assignment.tags`` (at most 5 keys, none empty; a key longer
    than a client tag key can be matches no client's tag, as Kafka's check against the client's own tags
    refuses it)."""
    if len(keys) > MAX_TAGS:
        bad(where, f"{len(keys)} tag keys; Kafka's rack.aware.assignment.tags takes at most {MAX_TAGS}")
    for j, key in enumerate(keys):
        if not key.strip():
            bad((*where, j), "blank tag key (Kafka refuses it: tag key cannot be empty)")
        elif java_length(key) > MAX_KEY_LENGTH:
            bad((*where, j), f"tag key of {java_length(key)} characters; a client tag key has at most "
                             f"{MAX_KEY_LENGTH}")
