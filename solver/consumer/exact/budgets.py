"""How the exact engine shares its time limit: the phases, the primal side, CP-SAT, HiGHS, the column generation.

Every figure is a share of a time limit (counted work in deterministic mode) or a model-size threshold that
decides which part runs; the stage driver (:mod:`.engine`) reads them.  Each says what it was measured on.
"""

from __future__ import annotations

#: CP-SAT's share of a linear stage's budget before HiGHS takes what it left open (auto backend).
CPSAT_SHARE = 0.4
#: Largest model handed to the HiGHS fallback (HiGHS can overrun its time limit by far on larger ones).
MIP_MAX_VARS = 2_000
#: Above this many x[c, m] variables, classes keep only a neighbourhood of members.
MAX_VARS = 60_000
#: Share of the time limit the local search may take before a CP-SAT-only solve (it usually ends sooner).
LOCAL_SHARE = 0.4
#: Share of the time limit the primal stages take before CP-SAT, on models small enough for one CP-SAT model:
#: small ones (up to :data:`SMALL_VARS` variables), where CP-SAT proves fast, and the others, where the primal
#: side finds more in the time (on ws411-0, 10,143 variables, the CP-SAT stages after a 30% share ended at
#: 29,802 moved cost where a 70% share reaches 6,807).
PRIMAL_SHARE = {"small": 0.3, "mid": 0.7}
#: Windows in a row without a gain after which the primal moves search stops (and, on a model CP-SAT takes
#: whole, hands over to it).  Small models get the starts only: CP-SAT closes their moves stage faster than
#: windows do (on the realistic records a patience of 25 windows took the median whole solve from 0.65 s to
#: 2.14 s).  Larger ones stop after three idle windows: on the weighted-scale and generated groups (72 runs,
#: strict and 1%) a window gained after more than two idle ones in one group only (gen-3: strict 806,380
#: moved instead of 799,050, at 1% 439,244 instead of 577,947), while the idle windows after the last gain
#: took 3.8 s a run (an idle window's 0.25 deterministic seconds are 0.6-1.5 s of wall time there).
HYBRID_PATIENCE = {"small": 0, "mid": 3, "large": 3}
#: Largest model counted as small for :data:`PRIMAL_SHARE`.
SMALL_VARS = 8_000
#: Models up to this many variables go to the plain CP-SAT stages at once (no primal search, no local-search
#: start): CP-SAT proves them faster than the heuristics improve them (the issue's 44-partition group).
PLAIN_VARS = 0
#: Share of the time limit the strict ``max_load, moves`` phase takes (:func:`.engine._two_phases`), by the model's
#: size (:data:`SMALL_VARS`); the same with or without a balance tolerance, so both runs hold the same strict answer.
#: Small models get more: their moves stage is where a tight packing stays open, while the sum-of-squares
#: stage after it is proven in a fraction of a second or left open either way (the small tight groups of
#: ``tests/solver/consumer/exact/test_phases.py``, seeds 0-31: docs/benchmarks.md, 2026-12-04).
STRICT_SHARE = {"small": 0.8, "mid": 0.7}
#: Budget of the moves stage's column generation (:mod:`.colgen`), as a share of its phase's time limit, by where
#: the stage runs and the model's size.  At the strict cap of a large model little (a perfect packing leaves its
#: bound weak: ws411-16 9 against 89 moved after 5 s; where the strict answer moves little it proves fast,
#: ws411-19 24 in 0.3 s); on small models half (their rounds are cheap: 48-partition lognormal steps of the
#: research grid proven at 3 moved from 11 and 20 in under a second, where 0.2 s left them at 0-5 against
#: 3-20); in the window of a balance tolerance the whole phase (ws411-21's 16 moved needs 0.5 counted seconds,
#: ws411-16's 47 about 1.5).
COLGEN_SHARE = {("strict", "small"): 0.5, ("strict", "mid"): 0.1, ("strict", "large"): 0.1,
                ("window", "small"): 1.0, ("window", "mid"): 1.0, ("window", "large"): 1.0}
#: Share of the sum_sq stage's budget its levelling local search may take.
LEVEL_SHARE = 0.2
#: Threads of the interleaved CP-SAT portfolio that solves a small model's moves stage in deterministic mode
#: (``interleave_search``: the same answer on every run and at any thread count, whatever the load).  A plain
#: single-worker solve runs the default search only; the interleaved portfolio takes turns between it, LNS and
#: other searches within the same counted work (the small tight lognormal groups, seeds 0-31 at
#: ``--time-limit 10``: moves proven on 30 instead of 28; docs/benchmarks.md, 2026-12-04).  One thread: with
#: four, each batch runs four full-problem chunks, and under load the realistic ingest example's moves stage
#: took 11 s of wall time instead of 1.9.  ``max_lp`` is left out: in OR-Tools 9.15 it aborts the process on
#: some models (a failed check on an infeasible column-generation model, reproduced standalone).
MOVES_INTERLEAVE = 1
