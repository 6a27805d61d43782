"""KIP-1071 members: the format (validation with paths, round trip), the optimum's sharing, the member metrics."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.errors import InstanceError
from solver.io import instance_to_dict, parse_instance
from solver.streams.format import parse_streams_assignment
from solver.streams.members import share
from solver.streams.model import StreamsAssignment, StreamsMember
from solver.streams.scoring import score_streams

P1, P2 = "00000000-0000-0000-0000-000000000001", "00000000-0000-0000-0000-000000000002"


def doc(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "format": "kassign/v1", "protocol": "streams",
        "tasks": [{"id": "0_0"}, {"id": "0_1"}, {"id": "0_2"}, {"id": "1_0", "stateful": False}],
        "clients": [{"id": "a", "process_id": P1,
                     "members": [{"id": "m1", "active": ["0_0"], "standby": ["0_1"]},
                                 {"id": "m2", "active": ["1_0"], "current_active": [],
                                  "task_offsets": {"0_2": 77}}]},
                    {"id": "b", "process_id": P2, "members": [{"id": "m3", "active": ["0_1"]}]}],
        "config": {"num_standby_replicas": 1}}
    base.update(kw)
    return base


def problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(InstanceError) as ei:
        parse_instance(data, "f.json")
    return [str(p) for p in ei.value.problems]


def test_members_make_the_process_view_and_round_trip() -> None:
    inst = parse_instance(doc())
    a = inst.streams.clients[0]
    assert a.capacity == 2 and a.active == ("0_0", "1_0") and a.standby == ("0_1",)
    m2 = a.members[1]
    assert m2.current_active == () and m2.owned_active == () and m2.active == ("1_0",)
    assert dict(m2.task_offsets) == {"0_2": 77} and m2.owned_standby == ()
    assert inst.streams.has_members
    again = parse_instance(instance_to_dict(inst))
    assert again == inst and again.streams.clients[0].members == a.members


def test_member_problems_are_reported_with_their_paths() -> None:
    bad = doc()
    bad["clients"][0]["members"][0]["standby"] = ["0_0", "1_0", "9_9"]
    bad["clients"][0]["members"][1]["task_offsets"] = {"1_0": 5}
    bad["clients"][1]["members"][0]["id"] = "m1"
    bad["clients"][1]["capacity"] = 3
    assert problems(bad) == [
        "clients[0].members[0].standby[0]: task '0_0' already listed in active",
        "clients[0].members[0].standby[1]: task '1_0' is stateless and cannot have a standby",
        "clients[0].members[0].standby[2]: task '9_9' not in tasks",
        "clients[0].members[1].task_offsets.1_0: a stateless task has no state to report an offset for",
        "clients[1].members[0].id: duplicate member id 'm1' (also clients[0].members[0])",
        "clients[1].capacity: is 3, the process has 1 members (one per stream thread)",
    ]
    empty = doc()
    empty["clients"][1]["members"] = []
    assert problems(empty) == ["clients[1].members: a process has at least one member (one per stream thread)"]
    stated = doc()
    stated["clients"][0]["active"] = ["0_0"]
    assert problems(stated) == [
        "clients[0].active: differs from the union of the members' active tasks (['0_0', '1_0']); give both alike "
        "or only the members"]


def test_standby_task_order_is_checked() -> None:
    assert parse_instance(doc(standby_task_order=["0_2", "0_0", "0_1"])).streams.standby_task_order == (
        "0_2", "0_0", "0_1")
    assert problems(doc(standby_task_order=["0_2", "1_0", "0_2", "7_0"])) == [
        "standby_task_order[1]: task '1_0' is stateless: only stateful tasks get standbys",
        "standby_task_order[2]: task '0_2' listed twice (also standby_task_order[0])",
        "standby_task_order[3]: task '7_0' not in tasks",
        "standby_task_order: must list every stateful task once; missing '0_0', '0_1'",
    ]


def test_assignment_documents_with_members() -> None:
    inst = parse_instance(doc())
    asg = parse_streams_assignment({"assignment": {"a": {"active": ["0_0"]}}, "members": {"m1": {"active": ["0_0"]}}},
                                   inst)
    assert asg.members is not None and asg.members["m1"].active == ("0_0",)
    with pytest.raises(InstanceError) as ei:
        parse_streams_assignment({"assignment": {}, "members": {"zz": {"active": ["4_4"]}}}, inst, "x.json")
    assert [str(p) for p in ei.value.problems] == ["members.zz: member not in the instance",
                                                   "members.zz.active[0]: task '4_4' not in tasks"]


def test_member_metrics() -> None:
    inst = parse_instance(doc())
    clients = {"a": {"active": ["0_0", "0_2", "1_0"], "standby": ["0_1"]}, "b": {"active": ["0_1"], "standby": []}}
    members = {"m1": {"active": ["0_2"], "standby": ["0_1"]}, "m2": {"active": ["0_0", "1_0"]},
               "m3": {"active": ["0_1"]}}
    s = score_streams(inst, StreamsAssignment.from_lists(clients, False, members))
    # m1 ran 0_0 and now m2 does; m2's 1_0 counts as not running now (current_active is empty)
    assert (s["max_member_tasks"], s["member_spread"], s["moved_member_actives"]) == (2, 0, 1)
    assert s["standby_shortfall"] == 2  # 0_0 and 0_2 have no standby although b could hold them
    plain = score_streams(inst, StreamsAssignment.from_lists(clients))
    assert plain["max_member_tasks"] is None and plain["moved_member_actives"] is None
    wrong = {**members, "m3": {"active": ["0_1", "0_0"]}, "ghost": {}}
    s = score_streams(inst, StreamsAssignment.from_lists(clients, False, wrong))
    assert "member m3: holds task 0_0, which its process b is not given" in s["violations"]
    assert "member ghost: not a member of the instance" in s["violations"]


def test_the_optimum_answers_per_member(registry_loaded: None) -> None:
    from solver.registry import get

    inst = parse_instance(doc())
    res = get("optimal-streams").run(inst)
    out = res.assignment.to_json_dict()
    assert set(out["members"]) == {"m1", "m2", "m3"}
    for c, members in (("a", ("m1", "m2")), ("b", ("m3",))):
        union = sorted(t for m in members for k in ("active", "standby") for t in out["members"][m][k])
        assert union == sorted(out["assignment"][c]["active"] + out["assignment"][c]["standby"])
    s = score_streams(inst, res.assignment)
    assert s["member_spread"] <= 1 and s["valid"]


# --- share(): balanced, and the most tasks kept (checked against every balanced sharing) ----------------------

def _brute(members: list[StreamsMember], active: list[str], standby: list[str]) -> int:
    n = len(members)
    a, total = len(active), len(active) + len(standby)
    best = -1
    tasks = [(t, 0) for t in active] + [(t, 1) for t in standby]
    for pick in itertools.product(range(n), repeat=len(tasks)):
        acts = [sum(1 for (t, r), k in zip(tasks, pick, strict=True) if k == m and r == 0) for m in range(n)]
        tots = [pick.count(m) for m in range(n)]
        if max(acts) - min(acts) > 1 or max(tots) - min(tots) > 1:
            continue
        if sorted(acts) != sorted(acts) or sum(acts) != a or sum(tots) != total:
            continue
        kept = sum(1 for (t, r), k in zip(tasks, pick, strict=True)
                   if t in (members[k].owned_active if r == 0 else members[k].owned_standby))
        best = max(best, kept)
    return best


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3), st.integers(0, 4), st.integers(0, 3), st.data())
def test_share_is_balanced_and_keeps_the_most(n: int, a: int, s: int, data: st.DataObject) -> None:
    active = [f"0_{k}" for k in range(a)]
    standby = [f"1_{k}" for k in range(s)]
    members = []
    for m in range(n):
        own_a = data.draw(st.lists(st.sampled_from([*active, "9_9"]), unique=True, max_size=2)) if active else []
        own_s = data.draw(st.lists(st.sampled_from(standby + active), unique=True, max_size=2)) if standby else []
        members.append(StreamsMember(f"m{m}", tuple(own_a), tuple(t for t in own_s if t not in own_a)))
    out = share(members, active, standby)
    acts = [len(out[m.id]["active"]) for m in members]
    tots = [len(out[m.id]["active"]) + len(out[m.id]["standby"]) for m in members]
    assert sorted(t for v in out.values() for t in v["active"]) == sorted(active)
    assert sorted(t for v in out.values() for t in v["standby"]) == sorted(standby)
    assert max(acts) - min(acts) <= 1 and max(tots) - min(tots) <= 1
    kept = sum(1 for m in members for r, owned in (("active", m.owned_active), ("standby", m.owned_standby))
               for t in out[m.id][r] if t in owned)
    assert kept == _brute(members, active, standby)
