"""The HTML report's agreement of the formats (issue 44 point 3): per model, probe and split
whose instances were read both ranked and generated (a probe header's ``formats``,
docs/generate.md), the 2 x 2 table of right and wrong, Cohen's kappa with its interval and n
(eval/metrics/format_agreement.sql), and the instances "ranked first but not said" and "said
but not ranked first" (format_disagreements.sql). Each instance opens, in place, the instance
browser's own view (eval/html/page.js ``show``): its prompt and candidates' scores under the
ranked run, its triples, and its generated answers (:func:`generation_data`, packed with the
browser's data). The block of a model, probe and split carries its ranked run, probe, split
and model as data attributes, each instance row its kind and id (the page stays small: about
200 bytes a row).

>>> rows = [{"model": "m", "probe": "p", "split": "test", "choice_run": "c", "n": 3,
...          "generate_run": "g", "both_right": 1, "ranked_not_said": 1, "said_not_ranked": 1,
...          "both_wrong": 0, "value": -0.5, "ci_low": -1.7, "ci_high": 0.7}]
>>> body = agreement_body(rows, [], {}, {"c", "g"})
>>> "kappa = −0.500" in body and "n = 3" in body and "95% CI −1.700 to 0.700" in body
True
>>> agreement_body(rows, [], {}, {"c"}) is None  # the generate run is not in the report
True
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb

from eval.html_page import Html, Section, join, note, tag
from eval.report_model import Report
from eval.sqlfile import default_metric_dir, metric_cursor, run_support

MATCHES = default_metric_dir() / "_generate_matches.sql"
KINDS = {"ranked first but not said": "ranked-not-said",
         "said but not ranked first": "said-not-ranked"}
"""format_disagreements' kinds, and the ``data-kind`` of their rows on the page."""
LIMIT = 100
"""The most instances one list shows (the page stays small; the count says how many)."""
NOTE = ("Ranked: the gold candidate ranks first under the mean of its scores over the prompts "
        "(choice), or the slot's top-1 answer is gold under at least half the prompts "
        "(relatum). Said: an accepted form is contained in the generated answer under at least "
        "half the prompts (docs/generate.md). Cohen's kappa with its 95% interval (the Wilson "
        "interval of the observed agreement, taken through kappa's line for the chance "
        "agreement); n: instances read both ways. Click an instance: "
        "its prompt, candidates' scores, generated answers and triples.")


def _f(v: Any) -> str:
    return "–" if v is None else f"{float(v):.3f}".replace("-", "−")


def _kappa(row: Mapping[str, Any]) -> Html:
    if row.get("value") is None:
        return tag("p", f"Cohen's kappa: undefined (chance agreement is 1), n = {row['n']:,}")
    ci = ("" if row.get("ci_low") is None
          else f", 95% CI {_f(row['ci_low'])} to {_f(row['ci_high'])}")
    return tag("p", f"Cohen's kappa = {_f(row['value'])}{ci}, n = {row['n']:,}")


def _two_by_two(row: Mapping[str, Any]) -> Html:
    cells = [[row["both_right"], row["ranked_not_said"]],
             [row["said_not_ranked"], row["both_wrong"]]]
    body = [tag("tr", tag("th", head), *(tag("td", f"{v:,}", cls="num") for v in r),
                tag("td", f"{sum(r):,}", cls="num"))
            for head, r in zip(("ranked first", "not ranked first"), cells, strict=True)]
    cols = [cells[0][0] + cells[1][0], cells[0][1] + cells[1][1]]
    body.append(tag("tr", tag("th", "total"), *(tag("td", f"{v:,}", cls="num") for v in cols),
                    tag("td", f"{sum(cols):,}", cls="num")))
    return tag("table", tag("thead", tag("tr", tag("th", ""), tag("th", "said"),
                                         tag("th", "not said"), tag("th", "total"))),
               tag("tbody", *body), cls="agree2x2")


def _instances(row: Mapping[str, Any], kind: str, found: Sequence[Mapping[str, Any]],
               targets: Mapping[tuple[str, str, str], Any]) -> Html:
    mine = [d for d in found if d["kind"] == kind]
    head = tag("h4", f"{kind[0].upper()}{kind[1:]}: {len(mine):,}"
               + (f" (the first {LIMIT:,} shown)" if len(mine) > LIMIT else ""))
    if not mine:
        return head
    rows = [tag("tr", tag("td", d["instance_id"]),
                tag("td", targets.get((d["probe"], d["split"], d["instance_id"]))),
                tag("td", d.get("prompt"), cls="prompt"), tag("td", d.get("generation")),
                tag("td", ", ".join(str(a) for a in d.get("answers") or [])),
                cls="agree-row", **{"data-kind": KINDS[kind], "data-inst": d["instance_id"]})
            for d in mine[:LIMIT]]
    return head + tag("table", tag("thead", tag("tr", *(tag("th", h) for h in (
        "instance", "target", "first prompt", "generated answer", "accepted forms")))),
        tag("tbody", *rows), cls="agree-list")


def agreement_body(agreement: Sequence[Mapping[str, Any]],
                   disagreements: Sequence[Mapping[str, Any]],
                   targets: Mapping[tuple[str, str, str], Any], runs: Collection[str]
                   ) -> Html | None:
    """One block per row of format_agreement whose two runs are in ``runs``; None without."""
    parts = []
    for row in sorted(agreement, key=lambda r: (str(r["model"]), str(r["probe"]),
                                                str(r["split"]))):
        if row["choice_run"] not in runs or row["generate_run"] not in runs:
            continue
        found = [d for d in disagreements if (d["model"], d["probe"], d["split"], d["choice_run"])
                 == (row["model"], row["probe"], row["split"], row["choice_run"])]
        parts.append(tag(
            "div", tag("h3", f"{row['model']} on {row['probe']} ({row['split']})"),
            _two_by_two(row), _kappa(row),
            *(_instances(row, kind, found, targets) for kind in KINDS),
            tag("div", "", cls="agree-detail", hidden=True), cls="agree",
            **{"data-run": row["choice_run"], "data-probe": row["probe"],
               "data-split": row["split"], "data-model": row["model"]}))
    return join(parts) if parts else None


def _rows(report: Report, name: str) -> list[dict[str, Any]]:
    for r in report.results:
        if r.metric.name == name:
            return list(r.rows)
    return []


def agreement_sections(report: Report, con: duckdb.DuckDBPyConnection,
                       runs: Collection[str]) -> list[Section]:
    """The section "Agreement of the formats" (eval.report.Report's format_agreement and
    format_disagreements rows), or none where no instance was read both ways."""
    agreement = _rows(report, "format_agreement")
    if not agreement:
        return []
    disagreements = _rows(report, "format_disagreements")
    targets = {(p, s, i): t for p, s, i, t in con.execute(
        "SELECT probe, split, instance_id, target FROM instances WHERE probe IN "
        "(SELECT unnest(?))", [sorted({str(r["probe"]) for r in agreement})]).fetchall()}
    body = agreement_body(agreement, disagreements, targets, runs)
    return [] if body is None else [Section("agreement", "Agreement of the formats",
                                            note(NOTE) + body)]


def generation_data(con: duckdb.DuckDBPyConnection, run_at: Mapping[str, int],
                    inst_at: Mapping[tuple[str, str, str], int], strings: Any
                    ) -> dict[str, list[Any]]:
    """The generated answers of the browser's generate runs (``run_at``: run id -> its index)
    on its instances (``inst_at``), column-wise: run, instance, prompt id, prompt, answer, why
    it ended, accepted forms and ``said`` (an accepted form is contained in it: the rule of
    eval/metrics/_generate_matches.sql, run here)."""
    cols: dict[str, list[Any]] = {k: [] for k in ("run", "inst", "prompt", "text", "answer",
                                                  "finish", "forms", "said")}
    has = con.execute("SELECT count(*) FROM information_schema.tables "
                      "WHERE table_name = 'generations'").fetchone()
    if not run_at or not inst_at or not (has and has[0]):  # none, or a file before generate
        return cols
    with metric_cursor(con) as cur:
        run_support(cur, [Path(MATCHES)])
        found = cur.execute(
            "SELECT g.run_id, g.probe, g.split, g.instance_id, g.prompt_id, g.prompt, "
            "g.generation, g.finish, g.answers, m.contains FROM generations g "
            "LEFT JOIN generate_item_matches m USING (run_id, probe, split, instance_id, "
            "prompt_id) WHERE g.run_id IN (SELECT unnest(?)) ORDER BY ALL",
            [sorted(run_at)]).fetchall()
    for run_id, probe, split, iid, pid, prompt, text, finish, forms, said in found:
        inst = inst_at.get((probe, split, iid))
        if inst is None:
            continue
        cols["run"].append(run_at[run_id])
        cols["inst"].append(inst)
        cols["prompt"].append(pid)
        cols["text"].append(strings(prompt))
        cols["answer"].append(strings(text))
        cols["finish"].append(strings(finish))
        cols["forms"].append([strings(f) for f in forms or []])
        cols["said"].append(None if said is None else int(bool(said)))
    return cols
