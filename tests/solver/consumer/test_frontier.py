"""The balance-movement frontier: which heuristics are on it (not dominated by a frontier point)."""

from __future__ import annotations

import itertools
from pathlib import Path

from solver.consumer.frontier import compute_frontier, dominating, place
from solver.io import read_instance
from solver.result import Params

REPO = Path(__file__).resolve().parents[3]


def _specs():
    from spark_runner.assignors import load_all

    return [s for s in load_all() if s.protocol == "consumer" and s.kind == "heuristic"]


def test_dominating_needs_no_worse_everywhere_and_better_somewhere():
    pts = [{"moved": 0, "max_load": 4.0, "sum_sq": 16.0}, {"moved": 2, "max_load": 2.0, "sum_sq": 8.0}]
    assert dominating({"moved": 5, "max_load": 2.0, "sum_sq": 8.0}, pts) == pts[1]  # moved 3 more for nothing
    assert dominating({"moved": 4, "max_load": 4.0, "sum_sq": 16.0}, pts) == pts[0]
    assert dominating({"moved": 2, "max_load": 2.0, "sum_sq": 8.0}, pts) is None  # equal is not dominated
    assert dominating({"moved": 1, "max_load": 3.0, "sum_sq": 10.0}, pts) is None  # between two points


def test_moving_partitions_for_nothing_is_off_the_frontier():
    # join-d-leaves: the frontier is one point (0 moves, max load 8, sum of squares 136).  range and
    # server-range move 4 topic-partitions to reach exactly that balance: dominated, not on the frontier
    # (they were marked on it, because only the sum of squares at their budget was compared).  The sticky
    # assignors look more balanced only by splitting join units: outside the feasible set, not on it either.
    inst = read_instance(REPO / "examples" / "join-d-leaves.json")
    doc = compute_frontier(inst, Params())
    placed = {h["assignor"]: h for h in place(inst, doc, _specs(), Params())}
    for name in ("range", "server-range"):
        h = placed[name]
        assert h["moved"] > 0 and (h["max_load"], h["sum_sq"]) == (doc["points"][0]["max_load"],
                                                                   doc["points"][0]["sum_sq"])
        assert h["on_frontier"] is False, name
    assert placed["stream-join-sticky"]["on_frontier"] is True  # 0 moves at the frontier's balance
    for h in placed.values():
        if h["on_frontier"]:
            assert h["valid"] and dominating(h, doc["points"]) is None
        if h["sum_sq"] < doc["points"][-1]["sum_sq"] - 1e-9:
            assert not h["on_frontier"], h["assignor"]  # better than the optimum: it broke a constraint


def test_frontier_labels_do_not_overlap():
    from solver.consumer.frontier import label_positions

    inst = read_instance(REPO / "examples" / "join-d-leaves.json")
    doc = compute_frontier(inst, Params())
    heur = place(inst, doc, _specs(), Params())
    for key in ("max_load", "sum_sq"):
        labels = label_positions(heur, key)
        # one label per distinct point, every assignor named once
        assert len({pt for pt, _, _ in labels}) == len(labels)
        names = sorted(n.split(" (")[0] for _, text, _ in labels for n in text.split(", "))
        assert names == sorted(h["assignor"] for h in heur)
        ys = [h[key] for h in heur]
        step = 0.06 * (max(ys) - min(ys))
        heights = sorted(ty for _, _, ty in labels)
        assert all(b - a >= step - 1e-9 for a, b in itertools.pairwise(heights)), heights


def test_assignments_that_split_units_are_marked_not_comparable_on_the_plot(tmp_path):
    """Placed with ``outcome`` ``split`` and labelled as not comparable, never as a point below the frontier."""
    from solver.consumer.frontier import label_positions, plot_frontier

    inst = read_instance(REPO / "examples" / "join-d-leaves.json")
    doc = compute_frontier(inst, Params())
    heur = place(inst, doc, _specs(), Params())
    kinds = {h["assignor"]: h["outcome"] for h in heur}
    assert kinds["sticky"] == kinds["uniform"] == "split" and kinds["range"] == "valid"
    texts = " | ".join(t for _, t, _ in label_positions(heur, "sum_sq"))
    assert "sticky (split)" in texts
    assert "range (" not in texts
    doc["heuristics"] = heur
    plot_frontier(doc, tmp_path / "f.png")
    assert (tmp_path / "f.png").stat().st_size > 10_000


def test_a_group_without_members_or_partitions_gets_its_one_point_frontier(tmp_path):
    """Was exit 1: the heuristics' max load over zero members (numpy's max of an empty array)."""
    from solver.consumer.frontier import plot_frontier
    from solver.io import parse_instance

    for doc in ({"format": "kassign/v1", "topics": {"T": 0}},
                {"format": "kassign/v1", "topics": {"T": 0}, "members": [{"id": "a", "topics": ["T"]}]}):
        inst = parse_instance(doc)
        front = compute_frontier(inst, Params(time_limit=1.0))
        front["heuristics"] = place(inst, front, _specs(), Params())
        assert [p["max_load"] for p in front["points"]] == [0.0]
        assert front["heuristics"] and all(h["max_load"] == 0.0 for h in front["heuristics"])
        plot_frontier(front, tmp_path / "f.png")


def test_each_frontier_point_on_the_plot_says_whether_it_is_proven(tmp_path, monkeypatch):
    """Filled markers at proven points, hollow ones at the others, with "point not proven" in the legend."""
    import solver.consumer.frontier as fr

    seen = {}

    def keep(fig, path, dpi):
        seen["fig"] = fig
        return b"png"

    monkeypatch.setattr(fr, "figure_bytes", keep)
    monkeypatch.setattr(fr, "write_atomic", lambda path, data: None)
    doc = {"engine": "exact", "points": [
        {"budget": 0.0, "max_load": 9.0, "sum_sq": 90.0, "moved": 0, "proven": True},
        {"budget": 2.0, "max_load": 7.0, "sum_sq": 70.0, "moved": 2, "proven": False},
        {"budget": 4.0, "max_load": 5.0, "sum_sq": 50.0, "moved": 4, "proven": True}]}
    fr.plot_frontier(doc, tmp_path / "f.png")
    ax = seen["fig"].axes[0]
    marks = {c.get_label(): c.get_offsets().tolist() for c in ax.collections}
    assert marks["point not proven"] == [[2.0, 7.0]]
    assert marks["point proven optimal"] == [[0.0, 9.0], [4.0, 5.0]]
    assert "point not proven" in [t.get_text() for t in ax.get_legend().get_texts()]
