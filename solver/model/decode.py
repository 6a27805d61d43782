"""Decoding JSON and YAML text into plain values, safely.

``json.loads`` and ``yaml.safe_load`` accept documents that later crash or
mislead the program: nesting deep enough to exhaust the interpreter's stack,
integer literals too long to convert, duplicate keys (the last one silently
wins), YAML aliases that expand exponentially or refer to themselves, and
YAML values JSON has no type for.  :func:`decode` turns every one of them
into a :class:`~solver.errors.Problem` that names where it is (a JSON path,
or a line and column when the text cannot be parsed at all).

The limits are documented in ``docs/format.md`` (section *Limits*).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

import yaml

from solver.errors import Problem, json_path

#: Deepest nesting of arrays and objects a document may have (kassign/v1 needs 4; notes get the rest).
MAX_DEPTH = 64
#: Most values (array elements and object members, YAML aliases expanded) in one YAML document: YAML is read
#: value by value in Python (about 25 microseconds each even with libyaml), so a million take half a minute;
#: documents larger than that are JSON, which has no such limit.
MAX_VALUES = 1_000_000
#: Longest integer literal Python converts (``sys.get_int_max_str_digits``).
MAX_INT_DIGITS = 4300

_JSON_SCALARS = (str, int, float, bool, type(None))
_SCALAR_TYPES = frozenset(_JSON_SCALARS)
_PATH_SHOWN = 12  # components of a very deep path shown before '...'


class DecodeError(ValueError):
    """The text is not an acceptable document; ``problems`` say where and why."""

    def __init__(self, problems: list[Problem], syntax: bool = False,
                 error: json.JSONDecodeError | None = None) -> None:
        self.problems = problems
        #: True when the text does not parse at all (a JSON reader may then try YAML).
        self.syntax = syntax
        #: The JSON syntax error, when that is the problem (its line and column).
        self.error = error
        super().__init__("; ".join(map(str, problems)))


class _Object(dict):  # type: ignore[type-arg]
    """A decoded object that had duplicate keys (their names in ``duplicates``)."""

    __slots__ = ("duplicates",)

    def __init__(self, pairs: list[tuple[Any, Any]], duplicates: list[Any]) -> None:
        super().__init__(pairs)
        self.duplicates = duplicates


class _NonFinite:
    """JSON's non-standard ``NaN`` / ``Infinity`` literals, reported with their path."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d = dict(pairs)
    if len(d) == len(pairs):
        return d
    seen: set[str] = set()
    dups = [k for k, _ in pairs if k in seen or seen.add(k)]  # type: ignore[func-returns-value]
    return _Object(pairs, list(dict.fromkeys(dups)))


def _where(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f"line {line}, column {col}"


def _long_int(text: str, kind: str) -> Problem:
    hit = re.search(r"\d{" + str(MAX_INT_DIGITS + 1) + ",}", text)
    if hit is None:  # pragma: no cover - Python raised for a literal the regex cannot see
        return Problem("", f"malformed {kind}: an integer literal is too long (at most {MAX_INT_DIGITS} digits)")
    return Problem("", f"malformed {kind} at {_where(text, hit.start())}: integer literal with "
                       f"{hit.end() - hit.start()} digits (at most {MAX_INT_DIGITS})")


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)


def _too_deep(text: str, kind: str) -> Problem:
    """Locate the first bracket nested deeper than :data:`MAX_DEPTH` (text the parser gave up on)."""
    depth = 0
    for m in _TOKENS.finditer(text):
        tok = m.group()
        if tok in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return Problem("", f"malformed {kind} at {_where(text, m.start())}: nested deeper than "
                                   f"{MAX_DEPTH} levels")
        elif tok in "]}":
            depth -= 1
    return Problem("", f"malformed {kind}: nested deeper than {MAX_DEPTH} levels")


# --------------------------------------------------------------------------- JSON


def decode_json(text: str, kind: str = "JSON") -> Any:
    """Decode JSON text; raise :class:`DecodeError` for anything :func:`check_value` rejects.

    Raises
    ------
    DecodeError
        Also for syntax errors (``malformed JSON at line L, column C: ...``).

    Examples
    --------
    >>> decode_json('{"a": [1, 2]}')
    {'a': [1, 2]}
    >>> decode_json('{"a": 1, "a": 2}')
    Traceback (most recent call last):
    ...
    solver.model.decode.DecodeError: a: duplicate key (an object's keys must be unique)
    """
    try:
        value = json.loads(text, object_pairs_hook=_pairs_hook, parse_constant=_NonFinite)
    except json.JSONDecodeError as e:
        raise DecodeError([Problem("", f"malformed {kind} at line {e.lineno}, column {e.colno}: {e.msg}")],
                          syntax=True, error=e) from None
    except RecursionError:
        raise DecodeError([_too_deep(text, kind)]) from None
    except ValueError as e:  # Python's limit on integer literals
        if "digits" not in str(e):
            raise
        raise DecodeError([_long_int(text, kind)]) from None
    _check_tree(value)
    if _SURROGATE_ESCAPE.search(text):
        _check_unicode(value)
    return value


#: A ``\\uD800``-``\\uDFFF`` escape: half of a surrogate pair, which alone is not a character.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _valid_text(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_unicode(value: Any) -> None:
    """Strings (keys included) must be Unicode text: a lone surrogate escape (``"\\ud800"``) decodes to a string no
    output can be written in (UTF-8 has no encoding for it)."""
    problems: list[Problem] = []
    stack: list[tuple[Any, Any]] = [(value, None)]
    while stack and len(problems) < 20:
        node, link = stack.pop()
        pairs: Any = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in pairs:
            if isinstance(k, str) and not _valid_text(k):
                problems.append(Problem(_show((*_path(link), k.encode("utf-8", "backslashreplace").decode())),
                                        "the key is not Unicode text (a lone surrogate escape such as \\ud800)"))
            if isinstance(v, (dict, list)):
                stack.append((v, (link, k)))
            elif isinstance(v, str) and not _valid_text(v):
                problems.append(Problem(_show((*_path(link), k)), "not Unicode text (a lone surrogate escape such "
                                                                  "as \\ud800)"))
    if isinstance(value, str) and not _valid_text(value):
        problems.append(Problem("", "not Unicode text (a lone surrogate escape such as \\ud800)"))
    if problems:
        raise DecodeError(problems[:20])


def _path(link: Any) -> tuple[str | int, ...]:
    out: list[str | int] = []
    while link is not None:
        link, key = link
        out.append(key)
    return tuple(reversed(out))


def _check_tree(value: Any) -> None:
    """:func:`check_value` for a value from ``json.loads`` (a tree: no shared or foreign values), faster.

    Paths are kept as parent links and rendered only for a problem.
    """
    problems: list[Problem] = []
    containers = (dict, list, _Object)
    stack: list[tuple[Any, int, Any]] = [(value, 0, None)]
    while stack:
        node, depth, link = stack.pop()
        if type(node) not in containers:
            continue
        if depth >= MAX_DEPTH:
            raise DecodeError([Problem(_show(_path(link)), f"nested deeper than {MAX_DEPTH} levels")])
        if type(node) is _Object:
            problems.extend(Problem(_show((*_path(link), k)), "duplicate key (an object's keys must be unique)")
                            for k in node.duplicates)
        if isinstance(node, dict):
            pairs: Any = node.items()
        elif set(map(type, node)) <= _SCALAR_TYPES:
            continue  # the common case: a list of numbers or strings
        else:
            pairs = enumerate(node)
        for k, v in pairs:
            t = type(v)
            if t in containers:
                stack.append((v, depth + 1, (link, k)))
            elif t is _NonFinite:
                problems.append(Problem(_show((*_path(link), k)), f"{v.text} is not a JSON number"))
        if len(problems) >= 20:
            break
    if problems:
        raise DecodeError(problems[:20])


# --------------------------------------------------------------------------- YAML


#: libyaml's parser and composer when PyYAML was built with them (about ten times faster), else PyYAML's own.
_BASE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BASE_LOADER):  # type: ignore[misc,valid-type]
    """``yaml.SafeLoader`` (libyaml's when available) whose mappings remember duplicate keys (merge keys ``<<``
    excepted).  :func:`_precheck` runs over the document's events first: nesting, aliases and values are
    bounded before anything is composed (an alias bomb or a million nested ``[`` fails before it is built)."""


class _Limit(Exception):
    def __init__(self, mark: Any, message: str) -> None:
        super().__init__(message)
        self.mark = mark
        self.message = message


def _precheck(text: str, max_aliases: int | None, max_values: int) -> None:
    """One pass over the parser's events (no document is built): nesting deeper than :data:`MAX_DEPTH`, more
    than ``max_aliases`` aliases (``*name``, merge keys included) or more than ``max_values`` values raise
    :class:`_Limit` with the place.  Values are counted as :func:`check_value` counts them (array elements and
    object members, not keys or the document itself), aliases as one: expanded they can only be more."""
    aliases = values = 0
    stack: list[list[bool]] = []  # per open collection: [is a mapping, its next node is a key]
    start = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
    end = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
    for ev in yaml.parse(text, Loader=_BASE_LOADER):
        if isinstance(ev, end):
            stack.pop()
            continue
        if not isinstance(ev, (*start, yaml.ScalarEvent, yaml.AliasEvent)):
            continue
        if stack:
            top = stack[-1]
            if top[0] and top[1]:
                top[1] = False  # a key
            else:
                top[1] = top[0]
                values += 1
                if values > max_values:
                    raise _Limit(ev.start_mark, f"more than {max_values:,} values, the limit of a YAML document "
                                                f"(write larger documents as JSON)")
        if isinstance(ev, yaml.AliasEvent):
            aliases += 1
            if max_aliases is not None and aliases > max_aliases:
                raise _Limit(ev.start_mark, f"more than {max_aliases} aliases (*name, merge keys included)")
        elif isinstance(ev, start):
            stack.append([isinstance(ev, yaml.MappingStartEvent), True])
            if len(stack) > MAX_DEPTH:
                raise _Limit(ev.start_mark, f"nested deeper than {MAX_DEPTH} levels")


def _construct_map(loader: _Loader, node: yaml.MappingNode) -> Iterator[dict[Any, Any]]:
    explicit = [k for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge"]
    keys = [loader.construct_object(k) for k in explicit]
    try:
        dups = [k for k, n in _counts(keys).items() if n > 1]
    except TypeError:  # an unhashable key: construct_mapping reports it with its mark
        dups = []
    data: dict[Any, Any] = _Object([], dups) if dups else {}
    yield data
    data.update(loader.construct_mapping(node))


def _counts(keys: list[Any]) -> dict[Any, int]:
    out: dict[Any, int] = {}
    for k in keys:
        out[k] = out.get(k, 0) + 1
    return out


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_map)  # type: ignore[arg-type]


def decode_yaml(text: str, *, max_aliases: int | None = None, max_values: int = MAX_VALUES) -> Any:
    """Decode YAML text (one document); raise :class:`DecodeError` as :func:`decode_json` does.

    ``max_aliases``: at most this many aliases (``None``: no bound besides ``max_values``, the values
    counted with aliases expanded).
    """
    max_values = min(max_values, MAX_VALUES)
    try:
        _precheck(text, max_aliases, max_values)
        loader = _Loader(text)
        try:
            value = loader.get_single_data()
        finally:
            loader.dispose()
    except _Limit as e:
        raise DecodeError([Problem("", f"malformed YAML at line {e.mark.line + 1}, column {e.mark.column + 1}: "
                                       f"{e.message}")]) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        if "maximum nesting depth" in problem:  # libyaml's own bound (1,000), met while scanning ahead
            raise DecodeError([Problem("", f"malformed YAML: nested deeper than {MAX_DEPTH} levels")]) from None
        raise DecodeError([Problem("", f"malformed YAML{where}: {problem}")], syntax=True) from None
    except RecursionError:
        raise DecodeError([Problem("", f"malformed YAML: nested deeper than {MAX_DEPTH} levels")]) from None
    except ValueError as e:
        if "digits" not in str(e):
            raise
        raise DecodeError([_long_int(text, "YAML")]) from None
    check_value(value, max_values)
    return value


# --------------------------------------------------------------------------- checks


def _show(loc: tuple[str | int, ...]) -> str:
    if len(loc) > _PATH_SHOWN:
        return json_path(loc[:_PATH_SHOWN]) + "..."
    return json_path(loc)


def check_value(value: Any, max_values: int = MAX_VALUES) -> None:
    """Check a decoded value: depth, size, duplicate keys, key and value types, no cycles.

    Walks the value without recursion, each distinct container once (YAML
    aliases share containers), so a hostile document costs time linear in its
    text.  Raises :class:`DecodeError` with up to 20 problems, each with its
    JSON path.
    """
    if type(value) in _SCALAR_TYPES:
        return
    problems: list[Problem] = []

    def bad(loc: tuple[str | int, ...], msg: str) -> None:
        if len(problems) < 20:
            problems.append(Problem(_show(loc), msg))

    # Iterative DFS; state per container id: 1 = on the stack, 2 = done (size and height known).
    state: dict[int, int] = {}
    size: dict[int, int] = {}
    height: dict[int, int] = {}
    stack: list[tuple[Any, tuple[str | int, ...], bool]] = [(value, (), False)]
    while stack:
        node, loc, leaving = stack.pop()
        key = id(node)
        if leaving:
            kids = _children(node)
            size[key] = len(node) + sum(size[id(c)] for _, c in kids)
            height[key] = 1 + max((height[id(c)] for _, c in kids), default=0)
            state[key] = 2
            continue
        st = state.get(key)
        if st == 2:
            continue
        if st == 1:
            bad(loc, "a YAML alias refers to a value that contains it (a cycle)")
            raise DecodeError(problems)
        state[key] = 1
        if len(loc) > MAX_DEPTH:
            bad(loc, f"nested deeper than {MAX_DEPTH} levels")
            raise DecodeError(problems)
        stack.append((node, loc, True))
        if isinstance(node, _Object):
            for k in node.duplicates:
                bad((*loc, str(k)), "duplicate key (an object's keys must be unique)")
        if isinstance(node, dict):
            for k, v in node.items():
                if not isinstance(k, str):
                    bad((*loc, str(k)), f"key {k!r} is not a string (write it in quotes)")
                _visit(v, (*loc, str(k)), stack, bad)
        else:
            types = set(map(type, node))
            if types <= _SCALAR_TYPES:
                continue  # the common case: a list of numbers or strings
            for i, v in enumerate(node):
                _visit(v, (*loc, i), stack, bad)
    if problems:
        raise DecodeError(problems)
    total = size.get(id(value), 0)
    if height.get(id(value), 0) > MAX_DEPTH:
        raise DecodeError([Problem("", f"nested deeper than {MAX_DEPTH} levels (through YAML aliases)")])
    if total > max_values:
        raise DecodeError([Problem("", f"{total:,} values (YAML aliases expanded), more than the limit "
                                       f"{max_values:,}")])


def _children(node: Any) -> list[tuple[Any, Any]]:
    items = node.items() if isinstance(node, dict) else enumerate(node)
    return [(k, v) for k, v in items if isinstance(v, (dict, list))]


def _visit(v: Any, loc: tuple[str | int, ...], stack: list[Any], bad: Any) -> None:
    if isinstance(v, (dict, list)):
        stack.append((v, loc, False))
    elif type(v) in _SCALAR_TYPES:
        if type(v) is float and not math.isfinite(v):
            return  # YAML .nan / .inf: the schema rejects them where a number is expected
        return
    elif isinstance(v, _NonFinite):
        bad(loc, f"{v.text} is not a JSON number")
    else:
        bad(loc, f"a YAML {type(v).__name__} value is not JSON data (write it in quotes)")
