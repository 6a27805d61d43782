"""The sweep report's cells and tables as text: numbers a person reads, Markdown and HTML tables."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from spark_runner.sweep.report.tables import label
from spark_runner.units import number


def _int_fmt(n: int) -> str:
    # the same grouping as large floats, so that one column reads alike
    return f"{n:,}" if abs(n) >= 1000 else str(n)


#: Values closer to zero than this print as 0: sums of floats leave noise (-5.114e-17) where the exact value
#: is 0, and no load, gap or move in a sweep is meaningful at that size.
ZERO_NOISE = 1e-9


def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return _int_fmt(int(v))
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if abs(v) < ZERO_NOISE:  # float noise around zero (-5.114e-17, 7.105e-15) is 0
            return "0"
        if v.is_integer() and abs(v) < 1e12:
            return _int_fmt(int(v))
        return number(v)  # 4 significant digits, thousands separated, never an exponent (1.2e-05)
    return str(v)


def _share_fmt(v: Any) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{100 * float(v):.1f}%"


def _md_header(raw: str) -> str:
    words, unit = label(raw)
    if raw in ("assignor", "event") or words == raw:
        return raw
    return f"{words} (`{raw}`{', ' + unit if unit else ''})"


def markdown_table(df: pd.DataFrame, share_cols: Sequence[str] = ()) -> str:
    """A GitHub Markdown table; headers in words with the raw column name and unit beside."""
    cols = list(df.columns)
    rule = "|".join("---" if i == 0 else "---:" for i in range(len(cols)))
    lines = ["| " + " | ".join(_md_header(str(c)) for c in cols) + " |", f"|{rule}|"]
    for _, r in df.iterrows():
        lines.append("| " + " | ".join(_share_fmt(r[c]) if c in share_cols else _fmt(r[c]) for c in cols) + " |")
    return "\n".join(lines)


#: Text columns of a table: left-aligned, and their long tokens may wrap (a config key=value is one token).
_TEXT_COLUMNS = ("setting", "what", "point")


def breakable(text: str) -> str:
    """``text`` escaped for HTML, with a line-break opportunity (``<wbr>``) after each ``.``, ``=``, ``_``, ``/``
    and ``,`` of a long token, so that a config key=value or a raw column name wraps inside its cell instead of
    pushing the table past the page; numbers (``1,234,567``) and short words are left whole.

    Examples
    --------
    >>> breakable("partition.assignment.strategy=a.B")
    'partition.<wbr>assignment.<wbr>strategy=<wbr>a.<wbr>B'
    >>> breakable("balance_optimal_share"), breakable("1,234,567"), breakable("x<y")
    ('balance_<wbr>optimal_<wbr>share', '1,234,567', 'x&lt;y')
    """
    out = []
    for token in re.split(r"(\s+)", text):
        esc = html.escape(token)
        if len(token) > 12 and re.search(r"[A-Za-z]", token):
            esc = re.sub(r"([.=_/,])(?!$)", r"\1<wbr>", esc)
        out.append(esc)
    return "".join(out)


def html_table(df: pd.DataFrame, share_cols: Sequence[str] = ()) -> str:
    """An HTML table (numbers right-aligned) that fits the page: headers and text cells wrap (long tokens at
    their dots, underscores and equals signs, :func:`breakable`); its box scrolls sideways only as a last
    resort."""
    def th(raw: str) -> str:
        words, unit = label(raw)
        if raw in ("assignor", "event") or words == raw:
            return f"<th>{html.escape(raw)}</th>"
        return (f"<th{' class=t' if raw in _TEXT_COLUMNS else ''}>{html.escape(words)}<br><code>{breakable(raw)}</code>"
                f"{'<br><small>' + html.escape(unit) + '</small>' if unit else ''}</th>")

    head = "".join(th(str(c)) for c in df.columns)
    body = []
    for _, r in df.iterrows():
        cells = []
        for i, c in enumerate(df.columns):
            text = _share_fmt(r[c]) if c in share_cols else _fmt(r[c])
            if c in _TEXT_COLUMNS:
                cells.append(f"<td class=t>{breakable(text)}</td>")
            elif i == 0:
                cells.append(f"<td class=l>{html.escape(text)}</td>")
            else:
                cells.append(f"<td>{html.escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f"<div class=scroll><table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
            "</div>")


def md_inline_html(text: str) -> str:
    """Escape ``text`` for HTML and render its Markdown ``*emphasis*`` and ```code``` (no literal asterisks).

    Examples
    --------
    >>> md_inline_html("*balance optimal* = `max_load_gap` < 1")
    '<em>balance optimal</em> = <code>max_load_gap</code> &lt; 1'
    >>> md_inline_html("**Run `uniform`.** Then *this*.")
    '<strong>Run <code>uniform</code>.</strong> Then <em>this</em>.'
    """
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    out = re.sub(r"\*\*([^*]+?)\*\*", r"<strong>\1</strong>", out)
    return re.sub(r"\*([^*\s][^*]*?)\*", r"<em>\1</em>", out)
