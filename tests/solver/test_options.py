"""The option schema: every numeric option refuses non-finite, out-of-sign and out-of-magnitude values, once, with
one message naming the option; values in range come back unchanged (normalised)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solver import options as o
from solver.errors import OptionError
from solver.planning.config import PlanConfig, PlanUsageError, check_config
from solver.result import Params

HOSTILE_FLOATS = [0.0, -0.0, -1.0, 1e308, math.inf, -math.inf, math.nan, 5e-324, 1e-320]
NUMBERS = [v for v in vars(o).values() if isinstance(v, o.Number)]


@pytest.mark.parametrize("opt", NUMBERS, ids=lambda n: n.name)
def test_every_number_refuses_non_finite_and_out_of_range_values(opt: o.Number) -> None:
    for bad in (math.nan, math.inf, -math.inf, True, "1", None, opt.hi * 2 + 1, opt.lo - 1):
        with pytest.raises(OptionError) as e:
            opt.check(bad)
        assert str(e.value).startswith(f"{opt.name} must be ") and e.value.exit_code == 2
    for good in (opt.hi, (opt.lo + opt.hi) / 2 if not opt.integer else (opt.lo + opt.hi) // 2):
        assert opt.check(good) == good
    if opt.lo_open:
        with pytest.raises(OptionError):
            opt.check(opt.lo)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_capacity_accepts_exactly_the_normal_positive_floats_in_range(x: float) -> None:
    inside = math.isfinite(x) and 1e-100 <= x <= 1e100
    if inside:
        assert o.CAPACITY.check(x) == x
    else:
        with pytest.raises(OptionError, match="--capacity must be a positive number"):
            o.CAPACITY.check(x)


def test_negative_zero_reads_as_zero() -> None:
    v = o.BALANCE_TOLERANCE.check(-0.0)
    assert v == 0.0 and math.copysign(1.0, v) == 1.0


@pytest.mark.parametrize("field", ["time_limit", "balance_tolerance"])
@pytest.mark.parametrize("value", HOSTILE_FLOATS)
def test_params_check_their_numbers_on_construction(field: str, value: float) -> None:
    spec = o.TIME_LIMIT if field == "time_limit" else o.BALANCE_TOLERANCE
    try:
        want = spec.check(value)
    except OptionError:
        with pytest.raises(OptionError, match=spec.name):
            Params(**{field: value})
        return
    assert getattr(Params(**{field: value}), field) == want


@pytest.mark.parametrize("seed", [-1, 2**31, 2**63, True])
def test_params_seed_is_a_32_bit_int(seed: int) -> None:
    with pytest.raises(OptionError, match="--seed"):
        Params(seed=seed)


@pytest.mark.parametrize(("field", "value"), [(f, v) for f in ("capacity", "active_load", "standby_load",
                                                                 "new_capacity", "lag_threshold", "catch_up_seconds")
                                              for v in HOSTILE_FLOATS])
def test_plan_config_numbers(field: str, value: float) -> None:
    cfg = PlanConfig(capacity=10.0, **{field: value}) if field != "capacity" else PlanConfig(capacity=value)
    spec = {"capacity": o.CAPACITY, "active_load": o.ACTIVE_LOAD, "standby_load": o.STANDBY_LOAD,
            "new_capacity": o.NEW_CAPACITY, "lag_threshold": o.LAG_THRESHOLD,
            "catch_up_seconds": o.CATCH_UP_SECONDS}[field]
    try:
        spec.check(value)
    except OptionError:
        with pytest.raises(PlanUsageError, match=spec.name):
            check_config(cfg)
        return
    check_config(cfg)


def test_resilience_larger_than_the_fleet_is_refused() -> None:
    with pytest.raises(PlanUsageError, match="leaves none"):
        check_config(PlanConfig(capacity=1.0, resilience=5, range=(2, 5)))
    check_config(PlanConfig(capacity=1.0, resilience=4, range=(2, 5)))
    with pytest.raises(PlanUsageError, match="give --range A:B with B > 39"):
        check_config(PlanConfig(capacity=1.0, resilience=39))
    with pytest.raises(PlanUsageError, match="--resilience must be an integer between 0 and 10000"):
        check_config(PlanConfig(capacity=1.0, resilience=10**9, range=(1, 200)))


@pytest.mark.parametrize(("assignor", "options", "message"), [
    ("optimal", {"workers": 0}, "-O workers must be an integer between 1 and 64, got 0"),
    ("optimal", {"workers": 10**12}, "-O workers must be an integer between 1 and 64"),
    ("optimal", {"workers": 2.5}, "-O workers must be an integer"),
    ("optimal", {"max_vars": 2**40}, "-O max_vars must be an integer between 1 and 2147483647"),
    ("optimal", {"backend": "glpk"}, "-O backend must be one of cpsat, highs, scip"),
    ("optimal-streams", {"full_restore_lag": 2**63}, "-O full_restore_lag must be an integer between 0 and "
                                                     "9223372036854775807"),
    ("optimal-streams", {"flows": "maybe"}, "-O flows must be true or false"),
    ("cooperative-sticky", {"rounds": "settle", "settle": False}, "contradict each other"),
    ("range", {"x": 1}, "-O x: unknown option for 'range' (its options: none)"),
])
def test_assignor_options(assignor: str, options: dict[str, object], message: str) -> None:
    with pytest.raises(OptionError) as e:
        o.check_assignor_options(assignor, options)
    assert message in str(e.value)


def test_the_registry_checks_option_values_from_python(registry_loaded: None) -> None:
    from solver.io import parse_instance
    from spark_runner.assignors import get

    inst = parse_instance({"format": "kassign/v1", "topics": {"T": 2}, "members": [{"id": "a", "topics": ["T"]}]})
    with pytest.raises(OptionError, match="-O workers"):
        get("optimal").run(inst, Params(options={"workers": 10**9}))
    assert get("optimal").run(inst, Params(options={"workers": 1, "deterministic": "yes"})).status.value \
        == "optimal"


def test_messages_show_long_values_cut() -> None:
    with pytest.raises(OptionError) as e:
        o.WORKERS.check(10**200)
    assert len(str(e.value)) < 120 and str(e.value).endswith("...")


def test_free_text_options_must_be_utf8() -> None:
    """Was: ``decode-subscription --name $'\\xff'`` wrote an instance kassign itself refuses to read back."""
    from solver.errors import OptionError
    from solver.options import check_text

    assert check_text("--name", "ä ☃") == "ä ☃"
    with pytest.raises(OptionError, match=r"^--name must be UTF-8 text, got '\\udcff'$"):
        check_text("--name", "\udcff")
