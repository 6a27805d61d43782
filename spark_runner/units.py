"""Numbers a person reads: thousands separators, the instance's unit, never scientific notation.

An instance says what its weights and move costs measure with the optional top-level ``units`` object
(``{"weights": "bytes/s", "move_costs": "bytes"}``; docs/format.md).  Byte units are shown with a
decimal prefix chosen per column (``kB/s``, ``MB/s``, ``GB/s``), so one column reads alike; any other
unit (``records``, ``records/s``, ``lag``, ...) is shown as given.  Without ``units`` a weighted
instance's loads are in ``weight``.

Examples
--------
>>> number(27069000.0), number(0.5), number(12), number(None), number(1234.5678)
('27,069,000', '0.5', '12', '-', '1,235')
>>> Scale.for_values([27_069_000.0, 3_000_000.0], "bytes/s").show(27_069_000.0)
'27.07'
>>> Scale.for_values([27_069_000.0], "bytes/s").unit
'MB/s'
>>> Scale.for_values([3.0, 7.0], "records").unit, Scale.for_values([3.0], "records").show(3.0)
('records', '3')
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: Byte units and the prefixes they scale through (decimal, as Kafka's metrics and most dashboards).
_BYTES = {"bytes": "B", "bytes/s": "B/s", "B": "B", "B/s": "B/s"}
_PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def number(v: Any, digits: int = 4) -> str:
    """``v`` for a person: ``-`` for none, yes/no, integers with thousands separators, floats to about
    ``digits`` significant digits (more before the point, never an exponent)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if not isinstance(v, float):
        try:
            v = float(v)
        except (TypeError, ValueError):
            return str(v)
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == int(v) and abs(v) < 1e18:
        return f"{int(v):,}"
    mag = abs(v)
    if mag >= 10 ** (digits - 1):
        return f"{v:,.0f}"
    decimals = max(0, digits - 1 - math.floor(math.log10(mag))) if mag > 0 else 0
    text = f"{v:,.{min(decimals, 12)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


@dataclass(frozen=True)
class Scale:
    """How one column of values in one unit is shown: divide by ``factor``, print ``unit``."""

    factor: float
    unit: str

    @classmethod
    def for_values(cls, values: Iterable[Any], unit: str | None) -> Scale:
        """The scale of a column: a byte unit gets the prefix of its largest value; others stay as given."""
        unit = unit or ""
        if unit not in _BYTES:
            return cls(1.0, unit)
        nums = [abs(float(x)) for x in values if isinstance(x, int | float) and not isinstance(x, bool)
                and math.isfinite(float(x))]
        top = max(nums, default=0.0)
        for factor, prefix in _PREFIXES:
            if top >= factor:
                return cls(factor, prefix + _BYTES[unit])
        return cls(1.0, _BYTES[unit])

    def show(self, v: Any) -> str:
        """``v`` in this scale, without the unit (the column header carries it)."""
        if v is None or isinstance(v, bool) or not isinstance(v, int | float):
            return number(v)
        return number(v / self.factor)

    def with_unit(self, v: Any) -> str:
        """``v`` in this scale with the unit: ``27.07 MB/s``."""
        text = self.show(v)
        return f"{text} {self.unit}" if self.unit and text != "-" else text


def instance_units(instance: Any) -> dict[str, str]:
    """``{"weights": ..., "move_costs": ...}`` from an instance's ``units`` (defaults: ``weight``, ``move cost``)."""
    meta: Mapping[str, Any] = getattr(instance, "meta", {}) or {}
    units = meta.get("units") or {}
    return {"weights": str(units.get("weights") or "weight"),
            "move_costs": str(units.get("move_costs") or "move_costs")}


def ms(seconds: Any) -> str:
    """Seconds as milliseconds for a person: ``0.0001121`` -> ``0.11``.

    >>> ms(0.0001121), ms(2.5), ms(None)
    ('0.1121', '2,500', '-')
    """
    if seconds is None or not isinstance(seconds, int | float):
        return "-"
    return number(1000.0 * float(seconds))


__all__ = ["Scale", "instance_units", "ms", "number"]
