"""Tables on stdout that fit the terminal and never cut a name.

One renderer for ``compare``, ``list``, ``plan`` and ``score`` (``--format``):

* ``table`` (default): plain aligned text, no box drawing.  On a terminal it
  fits the terminal's width: long free text (a ``wrap`` column, e.g. a
  summary) wraps at spaces, and when the columns still do not fit they are
  split into several blocks that each repeat the first (key) column.  When
  stdout is not a terminal the width is unlimited (one line per row, for
  ``grep``/``awk``).  A cell is never cut and never ends in an ellipsis.
* ``tsv``: a header line of the raw column names, then one line per row,
  tab separated (tabs and newlines inside a value become spaces).
* ``md``: a GitHub Markdown table (``|`` inside a value escaped).
* ``json``: the rows as a JSON list of objects with the raw column names
  (commands with a richer JSON document print that instead).
"""

from __future__ import annotations

import shutil
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TextIO

FORMATS = ("table", "tsv", "md", "json")

#: A wrapped column keeps at least this many characters per line (or its longest word).
WRAP_MIN = 16
#: Spaces between two columns of the ``table`` format.
GAP = 2


@dataclass(frozen=True)
class Column:
    """One column: the row key, the header shown, alignment, and whether its text may wrap.

    ``wrap`` is for free text only (summaries, notes); names and numbers never wrap.
    """

    key: str
    header: str | None = None
    align: Literal["left", "right"] = "right"
    wrap: bool = False

    @property
    def title(self) -> str:
        """The header text (the key unless set)."""
        return self.key if self.header is None else self.header


def plain(v: Any) -> str:
    """Default cell text: ``-`` for none, yes/no for booleans, 6 significant digits for floats."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, list | tuple):
        return ", ".join(map(str, v)) if v else "-"
    return str(v)


def terminal_width(stream: TextIO | None = None) -> int | None:
    """The terminal's width when ``stream`` (default stdout) is a terminal, else ``None`` (unlimited)."""
    stream = stream if stream is not None else sys.stdout
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return shutil.get_terminal_size((100, 24)).columns if tty else None


def check_format(fmt: str) -> str:
    """``fmt`` if it is one of :data:`FORMATS`, else a ``ValueError`` naming the choices."""
    if fmt not in FORMATS:
        raise ValueError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    return fmt


#: The ``--format`` help text shared by the commands that print tables.
FORMAT_HELP = ("Output: table (aligned text, fits the terminal, never cuts a name), tsv, md (Markdown) or json "
               "(--json is the same as --format json).")


def choose_format(fmt: str | None, as_json: bool) -> str:
    """The format a command prints: ``--format``, or ``json`` for ``--json``, else ``table``.

    Raises ``ValueError`` for an unknown format or ``--json`` with another ``--format``.
    """
    if fmt is not None:
        check_format(fmt)
        if as_json and fmt != "json":
            raise ValueError(f"--json and --format {fmt} contradict each other")
        return fmt
    return "json" if as_json else "table"


def render(rows: Sequence[Mapping[str, Any]], columns: Sequence[Column], fmt: str = "table", *,
           title: str | None = None, width: int | None = None,
           cell: Callable[[str, Any], str] | None = None) -> str:
    """The rows in ``fmt`` (see module docstring), ending with a newline.

    Parameters
    ----------
    rows
        One mapping per row; missing keys render as ``-``.
    columns
        The columns, in order; the first is the key column repeated when a wide table is split.
    fmt
        ``table``, ``tsv``, ``md`` or ``json``.
    title
        Printed above a ``table`` (not part of ``tsv``/``md``/``json``).
    width
        Line width of a ``table`` (``None``: unlimited).
    cell
        ``cell(key, value) -> text`` for ``table``/``md`` (default :func:`plain`).

    Examples
    --------
    >>> cols = [Column("name", align="left"), Column("moved")]
    >>> print(render([{"name": "cooperative-sticky", "moved": 3}], cols), end="")
    name                moved
    ------------------  -----
    cooperative-sticky      3
    >>> print(render([{"name": "a|b", "moved": 1.5}], cols, "md"), end="")
    | name | moved |
    |:---|---:|
    | a\\|b | 1.5 |
    """
    check_format(fmt)
    fmt_cell = cell or (lambda _k, v: plain(v))
    if fmt == "json":
        import json

        return json.dumps([{c.key: r.get(c.key) for c in columns} for r in rows], default=str) + "\n"
    if fmt == "tsv":
        def clean(s: str) -> str:
            return " ".join(s.replace("\t", " ").split())

        lines = ["\t".join(c.key for c in columns)]
        lines += ["\t".join(clean(_raw(r.get(c.key))) for c in columns) for r in rows]
        return "\n".join(lines) + "\n"
    texts = [[fmt_cell(c.key, r.get(c.key)) for c in columns] for r in rows]
    if fmt == "md":
        def esc(s: str) -> str:
            return s.replace("|", "\\|").replace("\n", "<br>")

        rule = "|".join(":---" if c.align == "left" else "---:" for c in columns)
        lines = ["| " + " | ".join(esc(c.title) for c in columns) + " |", f"|{rule}|"]
        lines += ["| " + " | ".join(esc(t) for t in row) + " |" for row in texts]
        return "\n".join(lines) + "\n"
    return _table(texts, list(columns), title, width)


def _raw(v: Any) -> str:
    """TSV cells: exact values (full float precision), booleans as true/false."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list | tuple):
        return ",".join(map(str, v))
    return str(v)


def _widths(texts: list[list[list[str]]], columns: list[Column]) -> list[int]:
    return [max([len(columns[j].title), *(len(line) for row in texts for line in row[j])]) for j in range(len(columns))]


def _table(texts: list[list[str]], columns: list[Column], title: str | None, width: int | None) -> str:
    # each cell as lines (a cell may hold several lines, e.g. a list of violations)
    cells = [[t.split("\n") for t in row] for row in texts]
    widths = _widths(cells, columns)
    total = sum(widths) + GAP * (len(columns) - 1)
    wrap = [j for j, c in enumerate(columns) if c.wrap]
    if width is not None and total > width and wrap:
        # free-text columns share what the others leave, each at least WRAP_MIN or its longest word
        avail = width - (total - sum(widths[j] for j in wrap))
        lows = {j: min(widths[j], max(WRAP_MIN, len(columns[j].title),
                                      *(len(w) for row in cells for line in row[j] for w in line.split())))
                for j in wrap}
        alloc = dict(lows)
        left = avail - sum(lows.values())
        while left > 0:
            grow = [j for j in wrap if alloc[j] < widths[j]]
            if not grow:
                break
            step = max(1, left // len(grow))
            for j in grow:
                add = min(step, widths[j] - alloc[j], left)
                alloc[j] += add
                left -= add
        for j in wrap:
            if alloc[j] < widths[j]:
                for row in cells:
                    row[j] = [w for line in row[j] for w in (textwrap.wrap(line, alloc[j]) or [""])]
                widths[j] = max([len(columns[j].title), *(len(line) for row in cells for line in row[j])])
    blocks = _blocks(widths, width)
    out: list[str] = []
    if title:
        out += textwrap.wrap(title, width) if width else [title]
    for b, idx in enumerate(blocks):
        if b:
            out.append("")
        out.append(_line([columns[j].title for j in idx], [widths[j] for j in idx], [columns[j] for j in idx]))
        out.append(_line(["-" * widths[j] for j in idx], [widths[j] for j in idx], [columns[j] for j in idx]))
        for row in cells:
            height = max(len(row[j]) for j in idx)
            for k in range(height):
                parts = [row[j][k] if k < len(row[j]) else "" for j in idx]
                out.append(_line(parts, [widths[j] for j in idx], [columns[j] for j in idx]))
    return "\n".join(out) + "\n"


def _blocks(widths: list[int], width: int | None) -> list[list[int]]:
    """Column index groups that fit ``width``, each starting with the key column 0."""
    if width is None or sum(widths) + GAP * (len(widths) - 1) <= width or len(widths) <= 2:
        return [list(range(len(widths)))]
    blocks: list[list[int]] = []
    cur = [0]
    used = widths[0]
    for j in range(1, len(widths)):
        if len(cur) > 1 and used + GAP + widths[j] > width:
            blocks.append(cur)
            cur, used = [0], widths[0]
        cur.append(j)
        used += GAP + widths[j]
    blocks.append(cur)
    return blocks


def _line(parts: list[str], widths: list[int], columns: list[Column]) -> str:
    cells = [p.ljust(w) if c.align == "left" else p.rjust(w) for p, w, c in zip(parts, widths, columns, strict=True)]
    return (" " * GAP).join(cells).rstrip()


def emit(text: str, out: TextIO | None = None) -> None:
    """Write ``text`` to stdout (or ``out``) and flush."""
    stream = out if out is not None else sys.stdout
    stream.write(text)
    stream.flush()


__all__ = ["FORMATS", "FORMAT_HELP", "Column", "check_format", "choose_format", "emit", "plain", "render",
           "terminal_width"]
