"""Fixed-seed samples of cases: the same cases on every run (CI's sample, the long campaign's batches)."""

from __future__ import annotations

import random

from tests.heuristics.differential.strategies import SIZES, Shape

_KINDS = list(SIZES)
_WEIGHTS = [2, 4, 3, 1, 1]  # tiny, small, medium, large, wide


def shapes_sample(n: int, seed: int) -> list[Shape]:
    """``n`` shapes drawn from ``seed`` with the same kinds as :data:`strategies.shapes`."""
    rng = random.Random(seed)
    return [Shape(size=rng.choices(_KINDS, _WEIGHTS)[0],
                  subscriptions=rng.choice(["identical", "random", "two-groups"]),
                  owned=rng.choice(["none", "previous", "shuffled", "previous"]),
                  static=rng.random() < 0.4, racks=rng.random() < 0.4, stale=rng.random() < 0.4,
                  seed=rng.getrandbits(32)) for _ in range(n)]


__all__ = ["shapes_sample"]
