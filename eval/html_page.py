"""One self-contained HTML page: sections of tables and charts, and the instance browser.

Everything is inline: the style sheet and script (``eval/html/page.css``, ``page.js``), the
charts (PNG as ``data:`` URIs) and the browser's data (eval.html_data, gzip + base64 in a
``<script type="application/octet-stream">``). The page fetches nothing: it opens from disk,
offline, in any current browser. Text from the results file is escaped everywhere (the
script builds its elements with ``textContent``).

>>> text = page("T <1>", [Section("a", "A", table(["x", "n"], [["<b>", 3]]))], "")
>>> "<td>&lt;b&gt;</td>" in text and "<title>T &lt;1&gt;</title>" in text
True
>>> "http://" in text or "https://" in text  # nothing to fetch
False
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ASSETS = Path(__file__).with_name("html")


@dataclass(frozen=True)
class Section:
    """One part of the page: its anchor, heading and HTML body."""

    anchor: str
    heading: str
    body: str


def esc(value: Any) -> str:
    return html.escape("–" if value is None else str(value))


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f'<td class="num">{value:.3f}</td>'
    if isinstance(value, int) and not isinstance(value, bool):
        return f'<td class="num">{value:,}</td>'
    return f"<td>{esc(value)}</td>"


def table(head: Sequence[str], rows: Sequence[Sequence[Any]], css: str = "") -> str:
    """An HTML table (floats with three decimals, integers with separators, text escaped).

    >>> table(["a"], [[0.5], [1200]]).split("<tbody>")[1]
    '<tr><td class="num">0.500</td></tr><tr><td class="num">1,200</td></tr></tbody></table>'
    """
    attr = f' class="{esc(css)}"' if css else ""
    return (f"<table{attr}><thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head)
            + "</tr></thead><tbody>"
            + "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in rows)
            + "</tbody></table>")


def note(text: str) -> str:
    return f'<p class="note">{esc(text)}</p>'


def figure(path: Path, alt: str = "") -> str:
    """A PNG inline, as a ``data:`` URI."""
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (f'<img class="chart" alt="{esc(alt or path.stem)}" '
            f'src="data:image/png;base64,{data}">')


BROWSER = """<p id="kgp-status">Loading the instances…</p>
<div class="filters">
<label>probe<select id="f-probe"><option value="">all</option></select></label>
<label>prompt<select id="f-prompt"><option value="">all</option></select></label>
<label>model<select id="f-model"><option value="">all</option></select></label>
<label>outcome<select id="f-outcome"><option value="">all</option>
<option value="right">right</option><option value="wrong">wrong</option></select></label>
<label>search (target, gold, answer, id)<input id="f-text" type="search"></label>
</div>
<div class="pager"><button id="kgp-prev">previous</button> <button id="kgp-next">next</button>
<span id="kgp-count"></span></div>
<table id="kgp-list"><thead><tr><th>probe</th><th>split</th><th>instance</th><th>model</th>
<th>prompt</th><th>answer</th><th>gold</th><th>outcome</th></tr></thead><tbody></tbody></table>
<div id="kgp-detail" hidden></div>"""


def browser_section(packed: str) -> Section:
    """The instance browser over ``packed`` data (eval.html_data.pack)."""
    body = (note("Every prediction of the runs in this report, one per run, instance and "
                 "prompt. Filter them, then click one: its rendered prompt, the candidates with "
                 "score and rank, the gold answer, the model's answer, and where the instance "
                 "came from: the SPARQL bindings (IRIs with their labels) and the triples "
                 "linking them, each with its named graph.")
            + BROWSER
            + f'<script id="kgp-data" type="application/octet-stream">{packed}</script>')
    return Section("browser", "Instance browser", f'<div id="browser">{body}</div>')


def page(title: str, sections: Sequence[Section], subtitle: str) -> str:
    """The whole page: a header, a navigation bar, the sections and the inline script."""
    css = (ASSETS / "page.css").read_text(encoding="utf-8")
    js = (ASSETS / "page.js").read_text(encoding="utf-8")
    nav = "".join(f'<a href="#{esc(s.anchor)}">{esc(s.heading)}</a>' for s in sections)
    body = "".join(f'<section id="{esc(s.anchor)}"><h2>{esc(s.heading)}</h2>{s.body}</section>'
                   for s in sections)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)}</title><style>{css}</style></head><body>"
            f"<header><h1>{esc(title)}</h1><p>{esc(subtitle)}</p></header>"
            f"<nav>{nav}</nav><main>{body}</main><script>{js}</script></body></html>\n")
