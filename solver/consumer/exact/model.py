"""The class-count CP-SAT model of the exact engine: variables, loads, stage objectives, hints, one solve.

For every class ``c`` and candidate member ``m`` an integer ``x[c, m]`` counts
the items of ``c`` on ``m``, ``sum_m x[c, m] = n_c``; ``NL_m = r_m * sum_c W_c
x[c, m]`` is the load per capacity in the engine's integers
(:mod:`.data`).  With ``total_row`` the loads ``sum_c W_c x[c, m]`` are
variables too and sum to the total load.  Stage objectives are variables
whose domains the stage driver (:mod:`.engine`) narrows as stages settle:

* ``max_load``: ``Z >= NL_m``, ``Z`` starting at the max-load bound;
* ``moves``: ``sum x[c, m] (owned_c - owned_c(m))``, the scorer's ``moved_cost``;
* ``racks``: cross-rack topic-partitions;
* ``topic_balance``: topic-partitions above their topic's even share (:mod:`.topic_balance`);
* ``sum_sq``: ``sum_m NL_m**2``, built on demand once the max load is capped
  (order encoding for short ranges, else an exact product with tangent cuts,
  on a coarser load scale when the squares would overflow).

Every hint is complete -- the counts and every derived variable -- so CP-SAT
takes it as a solution at once.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from solver.consumer.exact.budgets import MOVES_INTERLEAVE
from solver.consumer.exact.data import Scaled
from solver.consumer.exact.topic_balance import topic_balance_terms
from solver.consumer.items import ItemClasses
from solver.runtime import run_cpsat, set_budget

#: Largest scaled load per capacity whose square enters the sum_sq stage exactly.
MAX_SQUARED = 2**28
#: Member load ranges up to this many levels get the order encoding of the square.
ORDER_ENCODING_MAX = 600

#: A solution: ``{(class, member): count}`` for the non-zero counts.
Solution = dict[tuple[int, int], int]


class ClassModel:
    """The CP-SAT model over class counts (see the module docstring).

    Parameters
    ----------
    ic, sc
        Item classes and their integer data.
    cand
        Per class, the members it may go to in this model (all eligible ones unless restricted).
    racks
        Member racks.
    lb_z, cap_z
        The max-load bound and cap (``Z``'s domain).
    moves_cap
        Largest scaled moved cost allowed (``None``: none).
    topic_balance
        Build the ``topic_balance`` objective too (classes per topic).
    total_row
        Add each member's load in the engine's integers and their sum, the total load, as a constraint.
    interleave_moves
        Solve the ``moves`` stage, when deterministic, with CP-SAT's interleaved portfolio
        (:data:`~solver.consumer.exact.budgets.MOVES_INTERLEAVE`).
    """

    def __init__(self, ic: ItemClasses, sc: Scaled, cand: Sequence[Sequence[int]], racks: Sequence[str | None], *,
                 lb_z: int, cap_z: int, moves_cap: int | None = None, topic_balance: bool = False,
                 total_row: bool = False, interleave_moves: bool = False) -> None:
        from ortools.sat.python import cp_model

        self.ic, self.sc, self.cand, self.racks = ic, sc, cand, list(racks)
        n, nc = ic.n_members, ic.n_classes
        W, ratio = sc.wint, sc.ratio
        self.n = n
        self.model = model = cp_model.CpModel()
        self.xs: list[list[tuple[int, Any]]] = []
        load_terms: list[list[tuple[int, Any]]] = [[] for _ in range(n)]
        load_hi = [0] * n
        mv_terms: list[tuple[int, Any]] = []
        rk_terms: list[tuple[int, Any]] = []
        for c in range(nc):
            row = []
            cnt = int(ic.count[c])
            for m in cand[c]:
                v = model.new_int_var(0, cnt, f"x{c}_{m}") if cnt > 1 else model.new_bool_var(f"x{c}_{m}")
                row.append((m, v))
                if W[c]:
                    load_terms[m].append((W[c], v))
                    load_hi[m] += W[c] * cnt
                mvc = sc.owned[c] - sc.own[c].get(m, 0)
                if mvc:
                    mv_terms.append((mvc, v))
                rkc = ic.rack_cost(c, self.racks[m])
                if rkc:
                    rk_terms.append((rkc, v))
            model.add(sum(v for _, v in row) == cnt)
            self.xs.append(row)
        self.n_vars = sum(len(r) for r in self.xs)
        self.nl_hi = [min(cap_z, load_hi[m] * ratio[m]) for m in range(n)]
        self.aux_hints: list[tuple[int, Any]] = []  # (variable index, its value from the members' NL)
        self.nl = []
        self.interleave_moves = interleave_moves
        loads = []
        for m in range(n):
            v = model.new_int_var(0, max(0, self.nl_hi[m]), f"nl{m}")
            if total_row:
                ld = model.new_int_var(0, max(0, self.nl_hi[m] // ratio[m]), f"ld{m}")
                model.add(ld == sum(w * x for w, x in load_terms[m]))
                model.add(v == ratio[m] * ld)
                self.aux_hints.append((ld.index, lambda nlv, m=m: nlv[m] // ratio[m]))
                loads.append(ld)
            else:
                model.add(v == ratio[m] * sum(w * x for w, x in load_terms[m]))
            self.nl.append(v)
        if loads:
            # implied by the class rows, but CP-SAT does not propagate it from them: with it, every member's
            # least load follows from the others' caps, the narrow windows of a tight packing
            model.add(sum(loads) == sum(int(W[c]) * int(ic.count[c]) for c in range(nc)))
        self.z = model.new_int_var(lb_z, max(lb_z, cap_z), "z")
        for v in self.nl:
            model.add(self.z >= v)
        self.objs: dict[str, Any] = {"max_load": self.z}
        self.dom: dict[str, Any] = {"max_load": model.proto.variables[self.z.index].domain}
        mv_hi = sum(sc.owned[c] * int(ic.count[c]) for c in range(nc))
        self._linear("moves", mv_terms, mv_hi)
        if moves_cap is not None:
            self.dom["moves"][1] = max(0, min(mv_hi, moves_cap))
        self._linear("racks", rk_terms, sum(int(ic.size[c]) * int(ic.count[c]) for c in range(nc)))
        if topic_balance:
            self._topic_balance()
        self.to_orig = {"max_load": sc.load_unit, "sum_sq": sc.load_unit * sc.load_unit, "moves": sc.move_unit,
                        "racks": Fraction(1), "topic_balance": Fraction(1)}
        self.sq_coarse = 1  # > 1: the sum_sq stage squares loads divided by this (its value is not exact)
        self.hint_vars = [v.index for row in self.xs for _, v in row]
        self.hint_keys = [(c, m) for c, row in enumerate(self.xs) for m, _ in row]
        self.det_spent = 0.0  # CP-SAT deterministic seconds used so far

    @property
    def z_dom(self) -> Any:
        return self.dom["max_load"]

    @property
    def sq_exact(self) -> bool:
        return self.sq_coarse == 1

    # ---- objectives
    def _linear(self, name: str, terms: list[tuple[int, Any]], hi: int) -> None:
        v = self.model.new_int_var(0, max(0, hi) if terms else 0, name)
        self.model.add(v == sum(k * x for k, x in terms) if terms else v == 0)
        self.objs[name] = v
        self.dom[name] = self.model.proto.variables[v.index].domain

    def _topic_balance(self) -> None:
        ic, model = self.ic, self.model
        terms: list[tuple[int, Any]] = []
        by_member = [dict(row) for row in self.xs]
        for cls, share, members in topic_balance_terms(ic):
            k = int(ic.size[cls[0]])  # topic-partitions per item (a co-partition unit: one per topic)
            top = sum(int(ic.count[c]) for c in cls)
            if top <= share:
                continue
            for m in members:
                held = [by_member[c][m] for c in cls if m in by_member[c]]
                if not held:
                    continue
                over = model.new_int_var(0, top - share, f"tb{m}")
                model.add(over >= sum(held) - share)
                terms.append((k, over))
        self._linear("topic_balance", terms, sum(int(ic.size[c]) * int(ic.count[c]) for c in range(ic.n_classes)))

    def sum_sq(self) -> Any:
        """The ``sum_sq`` objective (built on first use, under the current cap on ``Z``)."""
        if "sum_sq" not in self.objs:
            self.objs["sum_sq"] = self._sum_sq()
        return self.objs["sum_sq"]

    def _sum_sq(self) -> Any:
        model, ratio = self.model, self.sc.ratio
        zhi = int(self.z_dom[1])
        coarse = 1
        if zhi > MAX_SQUARED:
            coarse = -(-zhi // MAX_SQUARED)
            self.sq_coarse = coarse
        terms: list[Any] = []
        base = 0
        for m in range(self.n):
            hi = min(self.nl_hi[m], zhi)
            if hi <= 0:
                continue
            step = ratio[m]
            k0, k1 = 0, hi // step
            if coarse == 1 and 0 <= k1 - k0 <= ORDER_ENCODING_MAX:
                # NL = step (k0 + sum_k b_k); (step k)^2 - (step (k - 1))^2 = step^2 (2k - 1)
                bs = [model.new_bool_var(f"b{m}_{k}") for k in range(k0 + 1, k1 + 1)]
                for k, b in enumerate(bs, start=k0 + 1):
                    self.aux_hints.append((b.index, lambda v, m=m, k=k, step=step: int(v[m] >= step * k)))
                for a, b in itertools.pairwise(bs):
                    model.add_implication(b, a)
                model.add(self.nl[m] == step * (k0 + sum(bs)))
                base += (step * k0) ** 2
                terms.append(sum(step * step * (2 * k - 1) * b for k, b in enumerate(bs, start=k0 + 1)))
                continue
            src = self.nl[m]
            top = hi
            if coarse > 1:
                # y = floor(NL / coarse): the square of a coarser load (inexact, never claimed proven)
                y = model.new_int_var(0, hi // coarse, f"y{m}")
                self.aux_hints.append((y.index, lambda v, m=m: v[m] // coarse))
                model.add(coarse * y <= self.nl[m])
                model.add(self.nl[m] <= coarse * y + coarse - 1)
                src, top = y, hi // coarse
            sq = model.new_int_var(0, top * top, f"sq{m}")
            self.aux_hints.append((sq.index, lambda v, m=m: (v[m] // coarse) ** 2))
            model.add_multiplication_equality(sq, [src, src])
            for pt in _tangent_points(top, 48):
                model.add(sq >= 2 * pt * src - pt * pt)
            terms.append(sq)
        hi_total = sum(min(self.nl_hi[m], zhi) ** 2 // (coarse * coarse) for m in range(self.n))
        v = model.new_int_var(0, hi_total or 0, "sumsq")
        self.aux_hints.append((v.index, lambda nlv: sum((x // coarse) ** 2 for x in nlv)))
        model.add(v == base + (sum(terms) if terms else 0))
        self.dom["sum_sq"] = model.proto.variables[v.index].domain
        self.to_orig["sum_sq"] = self.sc.load_unit * self.sc.load_unit * coarse * coarse
        return v

    # ---- solutions
    def values(self, sol: Solution) -> dict[str, Any]:
        """Stage values of ``sol`` in scaled integers (``sum_sq`` of the exact loads), and ``nl``."""
        W, ratio, sc, ic = self.sc.wint, self.sc.ratio, self.sc, self.ic
        load = [0] * self.n
        mv = rk = 0
        for (c, m), k in sol.items():
            load[m] += k * W[c]
            mv += k * (sc.owned[c] - sc.own[c].get(m, 0))
            rk += k * ic.rack_cost(c, self.racks[m])
        norm = [load[m] * ratio[m] for m in range(self.n)]
        return {"max_load": max(norm, default=0), "sum_sq": sum(v * v for v in norm), "moves": mv, "racks": rk,
                "nl": norm}

    def model_value(self, name: str, sol: Solution) -> int:
        """Stage ``name``'s objective of ``sol`` in this model's units (``sum_sq`` on its coarser scale)."""
        got = self.values(sol)
        if name == "sum_sq" and self.sq_coarse > 1:
            return sum((v // self.sq_coarse) ** 2 for v in got["nl"])
        return int(got[name])

    def fits(self, sol: Solution) -> bool:
        """Whether ``sol`` keeps the caps the settled stages have set."""
        got = self.values(sol)
        return got["max_load"] <= int(self.z_dom[1]) and all(got[k] <= int(self.dom[k][1]) for k in ("moves", "racks"))

    def fix(self, name: str, value: int, proven: bool) -> None:
        """Settle stage ``name``: later solves keep it at most ``value`` (exactly, when proven)."""
        d = self.dom[name]
        if proven:
            d[0] = value
        d[1] = value

    def set_hint(self, sol: Solution | None) -> None:
        """A complete hint (every x and every derived variable), written into the proto in bulk."""
        self.model.clear_hints()
        if sol is None:
            return
        h = self.model.proto.solution_hint
        h.vars.extend(self.hint_vars)
        h.values.extend([sol.get(key, 0) for key in self.hint_keys])
        got = self.values(sol)
        nlv: list[int] = got["nl"]
        extra: dict[int, int] = {v.index: nlv[m] for m, v in enumerate(self.nl)}
        extra[self.z.index] = got["max_load"]
        for name in ("moves", "racks"):
            extra[self.objs[name].index] = got[name]
        for idx, fn in self.aux_hints:
            extra[idx] = fn(nlv)
        h.vars.extend(list(extra))
        h.values.extend(list(extra.values()))

    def solve(self, stage: str | None, hint: Solution | None, seconds: float, *, seed: int, workers: int,
              deterministic: bool) -> tuple[str, Solution | None, int | None, int | None, float]:
        """Minimise stage ``stage`` (``None``: feasibility) from ``hint``.

        Returns ``(status, solution, value, bound, seconds)``; status ``optimal``, ``feasible``,
        ``infeasible`` or ``unknown``.  A solution worse on ``stage`` than a ``hint`` that keeps the caps
        (a short budget can end before CP-SAT takes its hint) is replaced by the hint.
        """
        from ortools.sat.python import cp_model

        objective = None if stage is None else self.sum_sq() if stage == "sum_sq" else self.objs[stage]
        if objective is None:
            self.model.clear_objective()
        else:
            self.model.minimize(objective)
        self.set_hint(hint)
        solver = cp_model.CpSolver()
        interleave = deterministic and stage == "moves" and self.interleave_moves
        set_budget(solver, seconds, seed=seed, deterministic=deterministic, workers=workers, interleave=interleave)
        if interleave:
            solver.parameters.num_workers = MOVES_INTERLEAVE
            solver.parameters.ignore_subsolvers.append("max_lp")
        t0 = time.perf_counter()
        st = run_cpsat(solver, self.model)
        dt = time.perf_counter() - t0
        self.det_spent += min(seconds, solver.deterministic_time)
        name = {cp_model.OPTIMAL: "optimal", cp_model.FEASIBLE: "feasible",
                cp_model.INFEASIBLE: "infeasible"}.get(st, "unknown")
        if name not in ("optimal", "feasible"):
            return name, None, None, None, dt
        sol = {(c, m): int(solver.value(v)) for c, row in enumerate(self.xs) for m, v in row if solver.value(v)}
        if objective is None:
            return name, sol, 0, 0, dt
        val = round(solver.objective_value)
        bnd = math.ceil(solver.best_objective_bound - 1e-6)
        if name == "feasible" and hint is not None and stage in ("max_load", "moves", "racks") and self.fits(hint):
            before = self.values(hint)[stage]
            if before < val:
                sol, val = hint, before
        return name, sol, val, (val if name == "optimal" else bnd), dt


def _tangent_points(hi: int, k: int) -> list[int]:
    """Up to ``k`` integer points spread over ``[1, hi]`` (all of them when ``hi <= k``)."""
    if hi <= k:
        return list(range(1, hi + 1))
    return sorted({max(1, round(hi * i / k)) for i in range(1, k + 1)})


def candidates(ic: ItemClasses, hint: np.ndarray, restricted: bool, max_vars: int, seed: int) -> list[list[int]]:
    """Per class, the members the model offers it: all eligible ones, or (restricted) a neighbourhood --
    where the hint puts it, its previous owners, and random others up to ``max_vars / classes``."""
    rng = np.random.default_rng(seed)
    nc = ic.n_classes
    per_class = max(4, max_vars // max(1, nc)) if restricted else 0
    elig_lists = [e.tolist() for e in ic.eligsets]
    elig_sets = [set(e) for e in elig_lists]
    cand: list[list[int]] = []
    for c in range(nc):
        e = int(ic.cls_elig[c])
        members = elig_lists[e]
        if not restricted or len(members) <= per_class:
            cand.append(members)
            continue
        keep = set(np.nonzero(hint[c])[0].tolist()) | ({o for o, _ in ic.owners[c]} & elig_sets[e])
        # random others, drawn with replacement and deduplicated (cheap; a few short of per_class is fine)
        picks = rng.integers(0, len(members), size=max(0, per_class - len(keep)))
        cand.append(sorted(keep | {members[j] for j in picks.tolist()}))
    return cand
