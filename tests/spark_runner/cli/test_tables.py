"""Tables that fit the terminal: names never cut, plain text off a terminal, --format table|tsv|md|json."""

from __future__ import annotations

import io
import json

import pytest

from spark_runner.cli.tables import Column, choose_format, render, terminal_width
from tests.spark_runner.cli.test_cli import EXAMPLES, kassign

NAMES = ["cooperative-sticky", "stream-join-sticky", "server-range", "optimal"]
COMPARE_COLS = [Column("assignor", align="left"), *(Column(c) for c in (
    "status", "valid", "copartition_violations", "max_load", "sum_sq_load", "weighted_max_load", "moved",
    "moved_cost", "cross_rack", "max_load_gap", "sum_sq_gap", "excess_moves", "seconds"))]


def _compare_rows() -> list[dict]:
    return [{"assignor": n, "status": "heuristic", "valid": True, "copartition_violations": 0, "max_load": 4.0,
             "sum_sq_load": 42.0, "weighted_max_load": 9.5, "moved": 7, "moved_cost": 124.0, "cross_rack": 3,
             "max_load_gap": 1.0, "sum_sq_gap": 20.0, "excess_moves": 3, "seconds": 0.0012} for n in NAMES]


@pytest.mark.parametrize("width", [60, 80, 100, 120])
def test_a_wide_table_fits_the_width_and_keeps_every_name_and_value_whole(width: int) -> None:
    text = render(_compare_rows(), COMPARE_COLS, width=width, title="orders-group: assignors vs the optimum")
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines), max(lines, key=len)
    for n in NAMES:  # every block repeats the key column, with the whole name
        assert sum(line.startswith(n + " ") for line in lines) >= 2
    for c in COMPARE_COLS:
        assert any(c.key in line.split() for line in lines), c.key
    assert "…" not in text
    assert "124" in text and "0.0012" in text


def test_free_text_wraps_at_spaces_and_names_do_not() -> None:
    rows = [{"name": "cooperative-sticky", "summary": "Kafka CooperativeStickyAssignor: sticky, moving partitions "
             "withheld one round"}]
    text = render(rows, [Column("name", align="left"), Column("summary", align="left", wrap=True)], width=50)
    assert all(len(line) <= 50 for line in text.splitlines())
    assert text.splitlines()[2].startswith("cooperative-sticky  Kafka")
    words = " ".join(line[20:].strip() for line in text.splitlines()[2:])
    assert words == rows[0]["summary"]


def test_off_a_terminal_the_width_is_unlimited(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setenv("COLUMNS", "80")
    assert terminal_width(Tty()) == 80
    assert terminal_width(io.StringIO()) is None


def test_tsv_md_json() -> None:
    rows = [{"name": "a|b", "x": 1.25, "ok": True, "none": None}]
    cols = [Column("name", align="left"), Column("x"), Column("ok"), Column("none")]
    assert render(rows, cols, "tsv") == "name\tx\tok\tnone\na|b\t1.25\ttrue\t\n"
    assert render(rows, cols, "md").splitlines() == ["| name | x | ok | none |", "|:---|---:|---:|---:|",
                                                     "| a\\|b | 1.25 | yes | - |"]
    assert json.loads(render(rows, cols, "json")) == rows
    assert choose_format(None, True) == "json" and choose_format(None, False) == "table"
    with pytest.raises(ValueError):
        choose_format("csv", False)
    with pytest.raises(ValueError):
        choose_format("tsv", True)


def test_list_piped_is_plain_text_with_whole_names() -> None:
    r = kassign("list")
    assert r.returncode == 0, r.stderr
    assert not set("┃│━─┏┓").intersection(r.stdout) and "…" not in r.stdout
    names = [line.split()[0] for line in r.stdout.splitlines()[3:] if line.strip()]
    for name in ("cooperative-sticky", "stream-join-sticky", "state-store-weighted", "high-availability"):
        assert name in names
    tsv = kassign("list", "--format", "tsv").stdout.splitlines()
    assert tsv[0] == "name\tkind\tprotocol\tkafka\tsummary\tsource"
    listed = {d["name"] for d in json.loads(kassign("list", "--json").stdout)}
    assert {line.split("\t")[0] for line in tsv[1:]} == listed


def test_compare_formats() -> None:
    inst = str(EXAMPLES / "orders-group.json")
    table = kassign("compare", inst, "--assignors", "cooperative-sticky,stream-join-sticky")
    assert table.returncode == 0, table.stderr
    assert "…" not in table.stdout and "cooperative-sticky " in table.stdout and "stream-join-sticky " in table.stdout
    md = kassign("compare", inst, "--assignors", "cooperative-sticky", "--format", "md").stdout.splitlines()
    assert md[0] == ("| assignor | outcome | busiest weight | x opt | +opt weight | moved | moved state | wasted | "
                     "cross-rack | rounds |") and md[2].startswith("| optimal |")
    tsv = kassign("compare", inst, "--assignors", "cooperative-sticky", "--format", "tsv").stdout.splitlines()
    # a weighted group: the 1% tolerance row follows the strict optimum
    assert [line.split("\t")[0] for line in tsv] == ["assignor", "optimal", "optimal~0.01", "cooperative-sticky"]
    bad = kassign("compare", inst, "--format", "xml")
    assert bad.returncode == 2 and "--format must be one of table, tsv, md, json" in bad.stderr
