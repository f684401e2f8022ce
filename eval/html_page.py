"""One self-contained HTML page: sections of tables and charts, and the instance browser.

Everything is inline: the style sheet and script (``eval/html/page.css``, ``page.js``), the
charts (PNG as ``data:`` URIs) and the browser's data (eval.html_data, gzip + base64 in a
``<script type="application/octet-stream">``). The page fetches nothing: it opens from disk,
offline, in any current browser.

Escaping happens at one place, :func:`esc`: markup is an :class:`Html` value, made only by
:func:`tag` (and :func:`esc` itself), and every other value that meets markup (a ``str`` from
the results file, a number, a heading, a section's body given as plain text) is escaped where
they meet: ``Html + str`` escapes the ``str``, and :func:`page` passes every heading and body
through :func:`esc`. So no value from a results file can become markup by being concatenated
into a page; the script builds its own elements with ``textContent``.

>>> text = page("T <1>", [Section("a", "A", table(["x", "n"], [["<b>", 3]]))], "")
>>> "<td>&lt;b&gt;</td>" in text and "<title>T &lt;1&gt;</title>" in text
True
>>> tag("p", "<i>") + "<b>", tag("a", "x", href='"><script>')
('<p>&lt;i&gt;</p>&lt;b&gt;', '<a href="&quot;&gt;&lt;script&gt;">x</a>')
>>> "http://" in text or "https://" in text  # nothing to fetch
False
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ASSETS = Path(__file__).with_name("html")
_BASE64 = re.compile(r"[A-Za-z0-9+/=]*")


@dataclass(frozen=True)
class Section:
    """One part of the page: its anchor, heading and HTML body."""

    anchor: str
    heading: str
    body: Html | str
    """Markup (:class:`Html`); a plain ``str`` is shown as text."""


class Html(str):
    """Markup that is safe to write as it is (made by :func:`tag` or :func:`esc`). Adding a
    plain value to it escapes that value."""

    __slots__ = ()

    def __add__(self, other: Any) -> Html:  # type: ignore[override]
        return Html(str.__add__(self, esc(other)))

    def __radd__(self, other: Any) -> Html:
        return Html(str.__add__(esc(other), self))


_NAME = re.compile(r"[a-z][a-z0-9-]*")


def esc(value: Any) -> Html:
    """``value`` as HTML text: markup (:class:`Html`) as it is, anything else escaped (quotes
    too, so the result is safe in an attribute); None is shown as "–"."""
    if isinstance(value, Html):
        return value
    return Html(html.escape("–" if value is None else str(value), quote=True))


def join(parts: Iterable[Any]) -> Html:
    """The parts one after the other, each through :func:`esc`."""
    return Html("".join(esc(p) for p in parts))


def tag(name: str, *children: Any, **attrs: Any) -> Html:
    """The element ``<name attrs>children</name>``: attribute values and children through
    :func:`esc` (``cls`` is written ``class``; True: an attribute without a value; None or
    False: left out). ``img`` has no end tag."""
    if not _NAME.fullmatch(name) or not all(_NAME.fullmatch(k.rstrip("_")) for k in attrs):
        raise ValueError(f"not an element or attribute name: {name} {sorted(attrs)}")
    names = {k: "class" if k == "cls" else k.rstrip("_") for k in attrs}
    head = "".join(f" {names[k]}" if v is True else f' {names[k]}="{esc(v)}"'
                   for k, v in attrs.items() if v is not None and v is not False)
    if name == "img":
        return Html(f"<{name}{head}>")
    return Html(f"<{name}{head}>{join(children)}</{name}>")


def _cell(value: Any) -> Html:
    if isinstance(value, float):
        return tag("td", f"{value:.3f}", cls="num")
    if isinstance(value, int) and not isinstance(value, bool):
        return tag("td", f"{value:,}", cls="num")
    return tag("td", value)


def table(head: Sequence[Any], rows: Sequence[Sequence[Any]], css: str = "") -> Html:
    """An HTML table (floats with three decimals, integers with separators, text escaped).

    >>> table(["a"], [[0.5], [1200]]).split("<tbody>")[1]
    '<tr><td class="num">0.500</td></tr><tr><td class="num">1,200</td></tr></tbody></table>'
    """
    return tag("table", tag("thead", tag("tr", *(tag("th", h) for h in head))),
               tag("tbody", *(tag("tr", *(_cell(v) for v in row)) for row in rows)),
               cls=css or None)


def note(text: Any) -> Html:
    return tag("p", text, cls="note")


def figure(path: Path, alt: str = "") -> Html:
    """A PNG inline, as a ``data:`` URI."""
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return tag("img", cls="chart", alt=alt or path.stem, src=f"data:image/png;base64,{data}")


BROWSER = Html("""<p id="kgp-status">Loading the instances…</p>
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
<div id="kgp-detail" hidden></div>""")


def browser_section(packed: str) -> Section:
    """The instance browser over ``packed`` data (eval.html_data.pack: base64, which the
    check below keeps to its alphabet, so the data cannot end the script element)."""
    if not _BASE64.fullmatch(packed):
        raise ValueError("the browser's data must be base64 (eval.html_data.pack)")
    body = (note("Every prediction of the runs in this report, one per run, instance and "
                 "prompt. Filter them, then click one: its rendered prompt, the candidates with "
                 "score and rank, the gold answer, the model's answer, and where the instance "
                 "came from: the SPARQL bindings (IRIs with their labels) and the triples "
                 "linking them, each with its named graph.")
            + BROWSER
            + Html(f'<script id="kgp-data" type="application/octet-stream">{packed}</script>'))
    return Section("browser", "Instance browser", tag("div", body, id="browser"))


def page(title: str, sections: Sequence[Section], subtitle: str) -> str:
    """The whole page: a header, a navigation bar, the sections and the inline script."""
    css = (ASSETS / "page.css").read_text(encoding="utf-8")
    js = (ASSETS / "page.js").read_text(encoding="utf-8")
    nav = join(tag("a", s.heading, href="#" + s.anchor) for s in sections)
    body = join(tag("section", tag("h2", s.heading), esc(s.body), id=s.anchor)
                for s in sections)
    if "</style" in css.lower() or "</script" in js.lower():
        raise ValueError("eval/html's page.css and page.js may not end their own element")
    return str(Html("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
               + tag("title", title) + Html(f"<style>{css}</style></head><body>")
               + tag("header", tag("h1", title), tag("p", subtitle))
               + tag("nav", nav) + tag("main", body)
               + Html(f"<script>{js}</script></body></html>\n"))
