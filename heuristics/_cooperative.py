"""Follow-up rounds of a cooperative assignor (KIP-429).

Under the cooperative protocol a partition that changes owner is first
revoked by its old owner and only assigned to the new one in the next
rebalance.  :func:`settle` runs those rounds: each round's output becomes every
member's ``owned`` at the next generation, until a round withholds nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from solver.model import Assignment, Instance, OwnedMap

RoundFn = Callable[[Instance], tuple[Assignment, int]]
"""One round: ``instance -> (assignment, number of withheld partitions)``."""

MAX_ROUNDS = 100


def next_round(instance: Instance, assignment: Assignment) -> Instance:
    """The instance of the next rebalance: ``owned`` = ``assignment``, generation + 1.

    Every member joins the next generation (one more than the highest known,
    at least 1); members the assignment does not mention own nothing.

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"t": 2}, "members": [
    ...     {"id": "a", "topics": ["t"], "generation": 4}, {"id": "b", "topics": ["t"], "generation": 3}]})
    >>> nxt = next_round(inst, Assignment.from_lists({"a": {"t": [0, 1]}, "b": {}}))
    >>> [(m.id, m.generation, {t: p.tolist() for t, p in m.owned.items()}) for m in nxt.members]
    [('a', 5, {'t': [0, 1]}), ('b', 5, {})]
    """
    generation = max([0, *(m.generation for m in instance.members)]) + 1
    members = []
    for m in instance.members:
        owned = assignment.members.get(m.id, {})
        if not isinstance(owned, OwnedMap):
            owned = OwnedMap.from_lists({t: a.tolist() for t, a in owned.items() if a.size})
        members.append(dataclasses.replace(m, owned=owned, generation=generation))
    return dataclasses.replace(instance, members=tuple(members))


def settle(instance: Instance, first_round_fn: RoundFn) -> tuple[Assignment, int]:
    """Run rounds until nothing is withheld.

    Parameters
    ----------
    instance
        The group state of the first round.
    first_round_fn
        One cooperative round: ``instance -> (assignment, withheld count)``.

    Returns
    -------
    assignment, rounds
        The settled assignment and the number of rounds run (1 when the first
        round withholds nothing).

    Raises
    ------
    RuntimeError
        If the rounds do not settle within :data:`MAX_ROUNDS`.
    """
    current = instance
    for rounds in range(1, MAX_ROUNDS + 1):
        assignment, withheld = first_round_fn(current)
        if withheld == 0:
            return assignment, rounds
        current = next_round(current, assignment)
    raise RuntimeError(f"cooperative rounds did not settle within {MAX_ROUNDS} rounds")


def wants_settle(options: object) -> bool:
    """Whether assignor options ask for the settled assignment.

    ``{"rounds": "settle"}`` or ``{"settle": true}`` (also the strings
    ``"true"``/``"1"``) ask for it.
    """
    if not hasattr(options, "get"):
        return False
    if options.get("rounds") == "settle":
        return True
    flag = options.get("settle")
    return flag is True or (isinstance(flag, str) and flag.lower() in {"true", "1", "yes"})
