"""``-`` as FILE reads the instance from stdin, for every command that reads one (``capture ... | kassign X -``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.spark_runner.cli.test_cli import EXAMPLES, kassign

ORDERS = (EXAMPLES / "orders-group.json").read_text()


@pytest.mark.parametrize(("args", "needle"), [
    (["validate", "-"], "-: valid (consumer, 4 members, 3 topics, 12 partitions)"),
    (["assign", "-", "-a", "range"], '"assignor":"range"'),
    (["compare", "-", "--json", "--assignors", "range"], '"assignor":"range"'),
    (["frontier", "-"], '"optimum_moves"'),
    (["plan", "-", "--capacity", "100", "--json"], '"min_instances"'),
])
def test_commands_read_the_instance_from_stdin(args: list[str], needle: str) -> None:
    piped = kassign(*args, stdin=ORDERS)
    assert piped.returncode == 0, piped.stderr
    from_file = kassign(*[str(EXAMPLES / "orders-group.json") if a == "-" else a for a in args])
    assert needle in piped.stdout
    if args[0] != "validate":  # the same result as from the file (timings aside)
        def strip(text: str) -> object:
            try:
                doc = json.loads(text)
            except json.JSONDecodeError:
                return text
            return _drop_seconds(doc)
        assert strip(piped.stdout) == strip(from_file.stdout)


def _drop_seconds(doc: object) -> object:
    if isinstance(doc, dict):
        return {k: _drop_seconds(v) for k, v in doc.items() if not k.endswith("seconds")}
    if isinstance(doc, list):
        return [_drop_seconds(v) for v in doc]
    return doc


def test_score_reads_either_file_from_stdin_but_not_both(tmp_path: Path) -> None:
    asg = tmp_path / "a.json"
    assert kassign("assign", str(EXAMPLES / "orders-group.json"), "-a", "range", "-o", str(asg)).returncode == 0
    r1 = kassign("score", "-", str(asg), "--json", stdin=ORDERS)
    r2 = kassign("score", str(EXAMPLES / "orders-group.json"), "-", "--json", stdin=asg.read_text())
    assert r1.returncode == r2.returncode == 0 and json.loads(r1.stdout) == json.loads(r2.stdout)
    both = kassign("score", "-", "-", stdin=ORDERS)
    assert both.returncode == 2 and "not both" in both.stderr


def test_invalid_stdin_names_stdin_and_the_path() -> None:
    r = kassign("validate", "-", stdin=(EXAMPLES / "bad-instance.json").read_text())
    assert r.returncode == 65 and "-: topics.T2.weights[1]" in r.stderr
