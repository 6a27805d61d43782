"""Safe decoding of JSON and YAML: hostile documents become located problems, never a crash or a silent win."""

from __future__ import annotations

import json
import time

import pytest

from solver.errors import InstanceError
from solver.io import read_instances
from solver.model.decode import MAX_DEPTH, DecodeError, decode_json, decode_yaml

HEAD = '{"format": "kassign/v1", "topics": {"T1": 1}, "members": [], "notes": '


def problems(fn, text: str) -> list[str]:
    with pytest.raises(DecodeError) as e:
        fn(text)
    return [str(p) for p in e.value.problems]


@pytest.mark.parametrize("opening, closing", [("[", "]"), ('{"a":', "}")])
def test_json_nested_100000_levels_is_refused_with_its_position(opening: str, closing: str) -> None:
    text = HEAD + opening * 100_000 + "1" * (opening == '{"a":') + closing * 100_000 + "}"
    [msg] = problems(decode_json, text)
    assert msg.startswith("malformed JSON at line 1, column ")
    assert msg.endswith(f"nested deeper than {MAX_DEPTH} levels")


def test_json_nesting_python_can_parse_but_too_deep_names_the_path() -> None:
    [msg] = problems(decode_json, HEAD + "[" * 500 + "]" * 500 + "}")
    assert msg.startswith("notes[0][0]") and msg.endswith(f"nested deeper than {MAX_DEPTH} levels")
    assert decode_json("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None  # the limit itself is accepted


def test_yaml_nested_100000_levels_is_refused() -> None:
    assert problems(decode_yaml, "notes: " + "[" * 100_000 + "]" * 100_000) == [
        f"malformed YAML: nested deeper than {MAX_DEPTH} levels"]


def test_integer_literal_with_100000_digits_is_located() -> None:
    assert problems(decode_json, '{"topics": {"T1": ' + "9" * 100_000 + "}}") == [
        "malformed JSON at line 1, column 19: integer literal with 100000 digits (at most 4300)"]
    assert problems(decode_yaml, "a: 1\ntopics: {T1: " + "9" * 100_000 + "}") == [
        "malformed YAML at line 2, column 14: integer literal with 100000 digits (at most 4300)"]


def test_duplicate_keys_are_errors_naming_the_path() -> None:
    assert problems(decode_json, '{"members": [{"id": "C1", "topics": ["T1"], "topics": []}]}') == [
        "members[0].topics: duplicate key (an object's keys must be unique)"]
    assert problems(decode_yaml, "members:\n- id: C1\n  topics: [T1]\n  topics: []\n") == [
        "members[0].topics: duplicate key (an object's keys must be unique)"]
    assert problems(decode_json, '{"a": 1, "a": 2, "b": {"c": 1, "c": 1}}') == [
        "a: duplicate key (an object's keys must be unique)", "b.c: duplicate key (an object's keys must be unique)"]


def test_yaml_merge_keys_and_aliases_stay_valid() -> None:
    doc = decode_yaml("base: &b {x: 1, y: 2}\nm: {<<: *b, x: 3}\nl: &l [1, 2]\nk: *l\n")
    assert doc == {"base": {"x": 1, "y": 2}, "m": {"x": 3, "y": 2}, "l": [1, 2], "k": [1, 2]}


def test_yaml_alias_bomb_and_cycle_are_refused_quickly() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    t0 = time.perf_counter()
    [msg] = problems(decode_yaml, "\n".join(lines))
    assert time.perf_counter() - t0 < 5
    assert "values (YAML aliases expanded), more than the limit" in msg
    assert problems(decode_yaml, "a: &a [1, *a]") == ["a[1]: a YAML alias refers to a value that contains it (a cycle)"]


def test_a_yaml_document_of_more_values_than_its_limit_is_refused_before_it_is_built() -> None:
    """Was: PyYAML's pure-Python composer built all of it first (a million-seed grid: 220 s, then refused)."""
    from solver.model.decode import MAX_VALUES

    text = "seeds: [" + ",".join(map(str, range(MAX_VALUES + 10))) + "]\n"
    t0 = time.perf_counter()
    [msg] = problems(decode_yaml, text)
    assert time.perf_counter() - t0 < 20
    assert msg.startswith("malformed YAML at line 1, column ") and msg.endswith(
        f"more than {MAX_VALUES:,} values, the limit of a YAML document (write larger documents as JSON)")
    [msg] = problems(lambda t: decode_yaml(t, max_values=1000), "seeds: [" + ",".join(["1"] * 1001) + "]")
    assert msg.endswith("more than 1,000 values, the limit of a YAML document (write larger documents as JSON)")
    assert len(decode_yaml("seeds: [" + ",".join(["1"] * 999) + "]", max_values=1000)["seeds"]) == 999
    [msg] = problems(lambda t: decode_yaml(t, max_aliases=2), "a: &a 1\nb: [*a, *a, *a]")
    assert msg.startswith("malformed YAML at line 2, column ") and msg.endswith(
        ": more than 2 aliases (*name, merge keys included)")


def test_values_json_cannot_hold_are_refused() -> None:
    assert problems(decode_yaml, "notes: 2024-01-01") == [
        "notes: a YAML date value is not JSON data (write it in quotes)"]
    assert problems(decode_yaml, "topics: {1: 3}") == ["topics.1: key 1 is not a string (write it in quotes)"]
    assert problems(decode_json, '{"weights": [1, NaN]}') == ["weights[1]: NaN is not a JSON number"]


def test_a_large_valid_document_decodes() -> None:
    doc = {"m": [{"id": f"C{i}", "topics": ["a"], "owned": {"a": [i]}} for i in range(20_000)],
           "w": [float(i) for i in range(200_000)]}
    assert decode_json(json.dumps(doc)) == doc


def test_json_lines_records_get_the_same_checks(tmp_path) -> None:
    f = tmp_path / "b.jsonl"
    good = json.dumps({"format": "kassign/v1", "topics": {"T": 1}, "members": []})
    f.write_text(good + "\n" + '{"format": "kassign/v1", "topics": {"T": 1}, "topics": {}}\n')
    with pytest.raises(InstanceError) as e:
        read_instances(f)
    assert [str(p) for p in e.value.problems] == ["line 2: topics: duplicate key (an object's keys must be unique)"]


def test_a_lone_surrogate_escape_is_not_text() -> None:
    """Was exit 1 (UnicodeEncodeError writing the assignment): ``{"\\ud800": 2}`` decodes to a topic name UTF-8
    cannot encode; a surrogate pair (an emoji) is text."""
    got = problems(decode_json, '{"topics": {"\\ud800": 2}, "m": [{"id": "a\\udfff"}], "ok": "\\ud83d\\ude00"}')
    assert sorted(got) == ["m[0].id: not Unicode text (a lone surrogate escape such as \\ud800)",
                           "topics.\\ud800: the key is not Unicode text (a lone surrogate escape such as \\ud800)"]
    assert decode_json('{"ok": "\\ud83d\\ude00"}') == {"ok": "\U0001f600"}
