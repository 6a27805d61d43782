"""kassign's runner: the complete assignor registry, comparisons, generated scenarios, Spark sweeps and the CLI.

The public API is three functions, loaded on first use (``import spark_runner``
starts no Spark and imports neither pyspark nor the solvers):

:func:`compare`
    Every assignor of an instance's protocol beside the optimum
    (:func:`spark_runner.comparison.compare`; ``kassign compare``).
:func:`run_sweep`
    A grid of generated scenarios on Spark, Parquet rows and a report
    (:func:`spark_runner.sweep.api.run_sweep`; ``kassign sweep``).
:func:`capture`
    A live group's state read from a cluster as an instance document
    (:func:`spark_runner.live.capture.capture`; ``kassign capture``).

Sub-packages: :mod:`spark_runner.scenarios` (scenario generators),
:mod:`spark_runner.sweep` (evaluation, Spark runs, reports),
:mod:`spark_runner.cli` (the ``kassign`` command line), :mod:`spark_runner.live`
(capture and the live assignor);
:mod:`spark_runner.assignors` is the registry with every heuristic and solver.

Examples
--------
>>> import spark_runner
>>> spark_runner.compare.__module__, spark_runner.run_sweep.__module__, spark_runner.capture.__module__
('spark_runner.comparison', 'spark_runner.sweep.api', 'spark_runner.live.capture')
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spark_runner.comparison import Comparison, compare
    from spark_runner.live.capture import capture
    from spark_runner.sweep.api import run_sweep

#: Public name -> the module defining it (imported on first access).
_LAZY = {"compare": "spark_runner.comparison", "Comparison": "spark_runner.comparison",
         "run_sweep": "spark_runner.sweep.api", "capture": "spark_runner.live.capture"}

__all__ = ["Comparison", "capture", "compare", "run_sweep"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
