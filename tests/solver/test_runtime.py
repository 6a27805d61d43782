"""Stop requests: a running CP-SAT search ends at once, its partial answer is never used, later calls do not start."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator

import pytest

from solver import runtime
from solver.errors import Interrupted


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    runtime.reset()
    yield
    runtime.reset()


def _hard_model() -> tuple[object, object]:
    """A CP-SAT model no worker proves within a minute: 13 pigeons, 12 holes, as pairwise inequalities."""
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    xs = [m.new_int_var(0, 11, f"p{i}") for i in range(13)]
    for i in range(13):
        for j in range(i + 1, 13):
            m.add(xs[i] != xs[j])
    s = cp_model.CpSolver()
    s.parameters.max_time_in_seconds = 60.0
    s.parameters.num_workers = 1
    s.parameters.symmetry_level = 0
    s.parameters.cp_model_presolve = False
    return m, s


def test_a_stop_request_ends_a_cpsat_search_and_raises() -> None:
    model, solver = _hard_model()
    threading.Timer(0.5, runtime.request_stop, args=(signal.SIGINT,)).start()
    t0 = time.monotonic()
    with pytest.raises(Interrupted) as e:
        runtime.run_cpsat(solver, model)
    assert time.monotonic() - t0 < 3
    assert e.value.exit_code == 130


def test_after_a_stop_request_no_solve_starts() -> None:
    model, solver = _hard_model()
    runtime.request_stop(signal.SIGTERM)
    t0 = time.monotonic()
    with pytest.raises(Interrupted) as e:
        runtime.run_cpsat(solver, model)
    assert time.monotonic() - t0 < 0.5 and e.value.exit_code == 143


def test_an_error_caused_by_the_stop_becomes_interrupted() -> None:
    def cancelled_job() -> None:
        runtime.request_stop(signal.SIGINT)
        raise RuntimeError("Job 3 cancelled as part of cancellation of all jobs")

    with pytest.raises(Interrupted), runtime.stoppable(lambda: None):
        cancelled_job()


def test_without_a_stop_request_errors_pass_and_hooks_are_unregistered() -> None:
    calls: list[str] = []
    with pytest.raises(ValueError), runtime.stoppable(lambda: calls.append("stop")):
        raise ValueError("the solver's own error")
    runtime.request_stop(signal.SIGINT)  # the hook is gone: not called
    assert calls == []


def test_temporary_files_are_removed_on_request(tmp_path) -> None:
    f = tmp_path / ".x.123.tmp"
    f.write_text("half")
    runtime.track_temp(str(f))
    runtime.remove_temps()
    assert not f.exists()
