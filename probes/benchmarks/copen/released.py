"""Read the released COPEN files into the results file's ``instances`` table.

Layout (as in the COPEN data zip): ``<root>/task1/data/{train,dev,test}.json`` (CSJ),
``task2`` (CPJ), ``task3`` (CiC); ``<root>/taskN/{split}.json`` is accepted too. Each file is a
JSON list of items:

- CSJ: ``{"query": {"name", "id"?}, "candidates": [{"id", "name"}, ... 21], "label": <id>}``;
  the repository's older shape ``{"query", "y": <answer>, "n": [<distractors>]}`` is read too,
  its candidates in the order the authors' metric ranks them: the distractors, then the answer
  (a tie between them goes to the distractor, as in their stable sort).
  Optional: the item's ``id`` (32 hex digits in the released files; kept for submissions),
  the entities' ``concept`` (kept; with ``--taxonomy`` it gives each distractor its kind),
  a candidate's ``hard`` (true/false) or ``type`` (``hard``/``easy``) marking its kind.
- CPJ: ``{"text", "concept": {"pos": [start, end], "id"?}, "label": 1|0}`` (``pos`` counts
  whitespace tokens of ``text``; a top-level ``pos`` is read too); optional ``chain_id``.
- CiC: ``{"sentence", "entity": {"name", "pos"}, "concept_chains": [[label, ...], ...],
  "label": label}``, a label being ``<...>_<Concept>`` (the concept is the part after the last
  ``_``); optional ``candidates`` (concept names), ``id``. The older shape with the chains in
  ``label`` and the gold in ``my_label`` is read too.

Hidden labels (``-1`` or null: the public test files) keep their instance with an empty gold
list: zero-shot probing still scores them, metrics leave them out, and the load report counts
them. Everything else that does not fit the format is a :class:`kg.errors.SourceError` naming
the file, the item's index and what to fix (a CSJ candidate list that is not 21 long, a label
that is not among the candidates, a span outside the text); :func:`load` skips such an item and
lists it in its report, so one bad item does not stop a task.

Instances (probe ``copen/csj`` ...): ``target`` = query entity / statement / entity,
``candidates`` = candidate names / ``true``, ``false`` / concept words (``PeriodicalLiterature``
-> ``periodical literature``), ``gold`` = the answer among them; ``fields`` keep the rest
(ids, distractor kinds, the statement's parts, the concept chains by name and by words, the
options as one comma-separated string for the text-to-text forms).

>>> item = {"text": "bus companies are hose.", "concept": {"pos": [0, 2]}, "label": 0}
>>> row = cpj_row(item, "train.json", 0)
>>> row["target"], row["gold"], row["fields"]["concept"]
('bus companies are hose.', ['false'], 'bus companies')
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from kg.copen import camel_words, read_taxonomy, top_concepts
from kg.errors import SourceError
from probes.benchmarks.copen import CSJ_CANDIDATES, PROBES, task_name
from probes.engine.export import instance_id, write_instances
from probes.results import connect

SPLITS = ("train", "dev", "test")
TASK_DIRS = {"csj": "task1", "cpj": "task2", "cic": "task3"}
_SCHEMA: dict[str, pl.DataType] = {
    "split": pl.String(), "instance_id": pl.String(), "target": pl.String(),
    "gold": pl.List(pl.String), "candidates": pl.List(pl.String), "fields": pl.String()}


class ReleasedFormatError(SourceError):
    """A released COPEN file does not follow the format."""


def _err(path: str | Path, index: int | None, message: str) -> ReleasedFormatError:
    where = f"{path}: item {index}" if index is not None else str(path)
    return ReleasedFormatError(f"{where}: {message}")


def _hidden(label: Any) -> bool:
    return label is None or (isinstance(label, int | float) and not isinstance(label, bool)
                             and label == -1) or label == "-1"


def _name(value: Any, path: str | Path, index: int, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _err(path, index, f"{what} must be a non-empty string (got {value!r})")
    return value.strip()


def _item_id(item: dict[str, Any]) -> str | None:
    """The item's own ``id`` (32 hex digits in the released test files), as a string."""
    ident = item.get("id")
    return None if ident is None else str(ident)


def _concept(entity: Any) -> str | None:
    """An entity's ``concept`` (a name, or an object with ``name``/``id``), as a name."""
    if not isinstance(entity, dict):
        return None
    c = entity.get("concept")
    if isinstance(c, dict):
        c = c.get("name", c.get("id"))
    return None if c is None else concept_of(c)


# --- CSJ --------------------------------------------------------------------------------------


def csj_row(item: Any, path: str | Path, index: int, n_candidates: int = CSJ_CANDIDATES,
            top: dict[str, str] | None = None) -> dict[str, Any]:
    """One CSJ item as an instance row (without split and id).

    Distractor kinds (Table 3): a candidate's ``type``/``hard`` flag, else -- with the
    taxonomy's top-level concepts ``top`` and the entities' ``concept`` fields -- a distractor
    whose concept shares a superordinate (the top-level concept) with the query's concept is
    hard, any other distractor easy.

    >>> cands = [{"id": f"c{i}", "name": f"E{i}"} for i in range(3)]
    >>> row = csj_row({"query": {"name": "Q"}, "candidates": cands, "label": "c1"}, "f", 0, 3)
    >>> row["target"], row["gold"], row["candidates"]
    ('Q', ['E1'], ['E0', 'E1', 'E2'])
    >>> csj_row({"query": {"name": "Q"}, "candidates": cands, "label": "c7"}, "f", 4, 3)
    Traceback (most recent call last):
    ...
    probes.benchmarks.copen.released.ReleasedFormatError: f: item 4: label 'c7' is not the id ...
    """
    if not isinstance(item, dict):
        raise _err(path, index, f"expected a JSON object, got {type(item).__name__}")
    query = item.get("query")
    if not isinstance(query, dict):
        raise _err(path, index, "missing 'query': {\"name\": ..., \"id\": ...}")
    qname = _name(query.get("name"), path, index, "query.name")
    if "candidates" in item:
        cands, label = item["candidates"], item.get("label")
    elif "y" in item and "n" in item:  # the repository's older shape
        if not isinstance(item["n"], list):
            raise _err(path, index, "'n' (the distractors) must be a list")
        # The authors' metric for this shape (THU-KEG/COPEN, first commit,
        # code/probing/metric.py, computeAccuracyForCSJ) ranks `preds = item["n"] + [item["y"]]`
        # with a stable descending sort: the answer comes last, so it loses every tie.
        cands, label = [*item["n"], item["y"]], (item["y"] or {}).get("id")
    else:
        raise _err(path, index, "missing 'candidates' (a list of {\"id\", \"name\"}) and "
                   "'label' (the id of the answer)")
    if not isinstance(cands, list):
        raise _err(path, index, "'candidates' must be a list of {\"id\", \"name\"} objects")
    if len(cands) != n_candidates:
        raise _err(path, index, f"has {len(cands)} candidates; a CSJ instance has "
                   f"{n_candidates} (the answer and {n_candidates - 1} distractors). Fix or "
                   "drop the item")
    ids: list[str] = []
    names: list[str] = []
    hard: list[str] = []
    easy: list[str] = []
    concepts: dict[str, str] = {}
    qconcept = _concept(query)
    for j, c in enumerate(cands):
        if not isinstance(c, dict) or "id" not in c:
            raise _err(path, index, f"candidate {j} must be an object with 'id' and 'name'")
        cid = str(c["id"])
        if cid in ids:
            raise _err(path, index, f"candidate id {cid!r} occurs twice; ids must be unique")
        ids.append(cid)
        names.append(_name(c.get("name"), path, index, f"candidate {j} name"))
        flag = c.get("type", c.get("hard"))
        cconcept = _concept(c)
        if cconcept:
            concepts[names[-1]] = cconcept
        if flag is None and top and qconcept in top and cconcept in top \
                and cconcept != qconcept:
            flag = "hard" if top[cconcept] == top[qconcept] else "easy"
        if flag in (True, "hard"):
            hard.append(names[-1])
        elif flag in (False, "easy"):
            easy.append(names[-1])
    hidden = _hidden(label)
    gold: list[str] = []
    if not hidden:
        if str(label) not in ids:
            raise _err(path, index, f"label {label!r} is not the id of any of its candidates "
                       f"({', '.join(ids[:4])}, ...); use the answer's candidate id, or -1 for "
                       "a hidden label")
        gold = [names[ids.index(str(label))]]
    unique = list(dict.fromkeys(names))
    return {"target": qname, "gold": gold, "candidates": unique, "fields": {
        "id": _item_id(item), "query": qname, "query_id": query.get("id"),
        "query_concept": qconcept, "candidate_ids": ids, "candidate_names": names,
        "candidate_concepts": concepts,
        "options": ", ".join(unique),
        "hard": [h for h in dict.fromkeys(hard) if h not in gold],
        "easy": [e for e in dict.fromkeys(easy) if e not in gold],
        "hidden": hidden, "duplicates": len(names) - len(unique)}}


# --- CPJ --------------------------------------------------------------------------------------


def _span(pos: Any, n: int, path: str | Path, index: int, what: str) -> tuple[int, int]:
    if (not isinstance(pos, list | tuple) or len(pos) != 2
            or not all(isinstance(p, int) and not isinstance(p, bool) for p in pos)):
        raise _err(path, index, f"{what} must be [start, end] token positions (got {pos!r})")
    start, end = pos
    if not 0 <= start < end <= n:
        raise _err(path, index, f"{what} {list(pos)} is outside the text's {n} tokens; "
                   "positions count whitespace-separated tokens, end exclusive")
    return start, end


def cpj_row(item: Any, path: str | Path, index: int) -> dict[str, Any]:
    """One CPJ item as an instance row (without split and id)."""
    if not isinstance(item, dict):
        raise _err(path, index, f"expected a JSON object, got {type(item).__name__}")
    text = _name(item.get("text"), path, index, "text")
    tokens = text.split()
    concept = item["concept"] if isinstance(item.get("concept"), dict) else {}
    pos = concept.get("pos", item.get("pos"))
    if pos is None:
        raise _err(path, index, "missing 'concept': {\"pos\": [start, end]} (the concept's "
                   "tokens in 'text')")
    start, end = _span(pos, len(tokens), path, index, "concept.pos")
    label = item.get("label")
    hidden = _hidden(label)
    if not hidden and label not in (0, 1, True, False):
        raise _err(path, index, f"label {label!r} must be 1 (true), 0 (false) or -1 (hidden)")
    pre = " ".join(tokens[:start])
    post = " ".join(tokens[end:])
    statement = " ".join(tokens)
    gold = [] if hidden else ["true" if label in (1, True) else "false"]
    return {"target": statement, "gold": gold, "candidates": ["true", "false"], "fields": {
        "statement": statement, "pre": pre + " " if pre else "",
        "concept": " ".join(tokens[start:end]), "post": " " + post if post else "",
        "concept_id": concept.get("id"), "chain_id": item.get("chain_id"),
        "id": _item_id(item), "hidden": hidden}}


# --- CiC --------------------------------------------------------------------------------------


def concept_of(label: Any) -> str:
    """The concept of a CiC label: the part after the last ``_``.

    >>> concept_of("Q41298_Magazine"), concept_of("Magazine")
    ('Magazine', 'Magazine')
    """
    return str(label).rsplit("_", 1)[-1].strip()


def cic_row(item: Any, path: str | Path, index: int) -> dict[str, Any]:
    """One CiC item as an instance row (without split and id)."""
    if not isinstance(item, dict):
        raise _err(path, index, f"expected a JSON object, got {type(item).__name__}")
    sentence = _name(item.get("sentence"), path, index, "sentence")
    entity = item.get("entity")
    if not isinstance(entity, dict):
        raise _err(path, index, "missing 'entity': {\"name\": ..., \"pos\": [start, end]}")
    name = _name(entity.get("name"), path, index, "entity.name")
    mention, entity_pos = name, None
    if "pos" in entity:
        a, b = _span(entity["pos"], len(sentence.split()), path, index, "entity.pos")
        mention, entity_pos = " ".join(sentence.split()[a:b]), [a, b]
    if "concept_chains" in item:
        chains_raw, label = item["concept_chains"], item.get("label")
    elif isinstance(item.get("label"), list):  # the repository's older shape
        chains_raw, label = item["label"], item.get("my_label")
    else:
        raise _err(path, index, "missing 'concept_chains': a list of concept chains (lists of "
                   "labels such as 'Q41298_Magazine')")
    if not isinstance(chains_raw, list) or not chains_raw or not all(
            isinstance(c, list) and c for c in chains_raw):
        raise _err(path, index, "'concept_chains' must be a non-empty list of non-empty lists")
    chains = [[concept_of(x) for x in chain] for chain in chains_raw]
    concepts = list(dict.fromkeys(c for chain in chains for c in chain))
    if "candidates" in item:
        cands = item["candidates"]
        if not isinstance(cands, list) or set(map(concept_of, cands)) != set(concepts):
            have = set(map(concept_of, cands)) if isinstance(cands, list) else set()
            extra, missing = sorted(have - set(concepts)), sorted(set(concepts) - have)
            raise _err(path, index, "'candidates' must list exactly the concepts of "
                       f"'concept_chains' (extra: {extra or '-'}, missing: {missing or '-'})")
    hidden = _hidden(label)
    gold_concept = None
    if not hidden:
        gold_concept = concept_of(label)
        if gold_concept not in concepts:
            raise _err(path, index, f"label {label!r} is not among its candidate concepts "
                       f"({', '.join(concepts)}); the gold concept must be on a chain, or use "
                       "-1 for a hidden label")
    words = {c: camel_words(c) or c for c in concepts}
    if len(set(words.values())) != len(words):
        raise _err(path, index, "two candidate concepts read as the same words; rename one")
    return {"target": name, "gold": [words[gold_concept]] if gold_concept else [],
            "candidates": [words[c] for c in concepts], "fields": {
                "sentence": sentence, "entity": name, "chains": chains,
                "options": ", ".join(words[c] for c in concepts),
                "chain_words": [[words[c] for c in chain] for chain in chains],
                "names": {w: c for c, w in words.items()}, "gold_concept": gold_concept,
                "mention": mention, "entity_pos": entity_pos,
                "raw_candidates": _raw_candidates(item, words),
                "id": _item_id(item), "hidden": hidden}}


def _raw_candidates(item: dict[str, Any], words: dict[str, str]) -> dict[str, str]:
    """Concept words -> the candidate string as the file writes it (for submissions)."""
    raw = item["candidates"] if isinstance(item.get("candidates"), list) else list(words)
    return {words[concept_of(c)]: str(c) for c in raw if concept_of(c) in words}


ROWS = {"csj": csj_row, "cpj": cpj_row, "cic": cic_row}


# --- files ------------------------------------------------------------------------------------


def read_items(path: Path) -> list[Any]:
    """The JSON list in a released file (a JSON-lines file is read too)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise _err(path, None, f"cannot read the file: {e}") from e
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        try:
            data = [json.loads(ln) for ln in lines]
        except json.JSONDecodeError:
            raise _err(path, None, f"not valid JSON (line {e.lineno}, column {e.colno}: "
                       f"{e.msg}); the released files are JSON lists") from e
    if not isinstance(data, list):
        raise _err(path, None, "expected a JSON list of items")
    return data


def frame(task: str, split: str, items: Iterable[Any], path: str | Path,
          top: dict[str, str] | None = None, skipped: list[str] | None = None
          ) -> pl.DataFrame:
    """The instance rows of one file as the DataFrame ``probes.engine.export.write_instances``
    takes.

    A malformed item is reported in ``skipped`` (file, index, what to fix) and left out; with
    ``skipped=None`` it raises :class:`ReleasedFormatError`.
    """
    task = task_name(task)
    rows = []
    for index, item in enumerate(items):
        try:
            row = (csj_row(item, path, index, top=top) if task == "csj"
                   else ROWS[task](item, path, index))
        except ReleasedFormatError as e:
            if skipped is None:
                raise
            skipped.append(str(e))
            continue
        row["fields"]["source"] = f"{Path(path).name}:{index}"
        ident = instance_id([task, split, index, json.dumps(item, sort_keys=True,
                                                             ensure_ascii=False)])
        rows.append({"split": split, "instance_id": ident, "target": row["target"],
                     "gold": row["gold"], "candidates": row["candidates"],
                     "fields": json.dumps(row["fields"], ensure_ascii=False)})
    df = pl.DataFrame(rows, schema=_SCHEMA)
    return df.with_columns(pl.lit(PROBES[task]).alias("probe"))


def find_files(root: Path) -> dict[str, dict[str, Path]]:
    """task -> split -> file under ``root`` (``taskN/data/<split>.json`` or ``taskN/<split>.json``).
    """
    found: dict[str, dict[str, Path]] = {}
    for task, folder in TASK_DIRS.items():
        for split in SPLITS:
            for cand in (root / folder / "data" / f"{split}.json", root / folder / f"{split}.json"):
                if cand.is_file():
                    found.setdefault(task, {})[split] = cand
                    break
    if not found:
        raise _err(root, None, "no COPEN files found; expected task1/data/train.json, "
                   "task1/data/dev.json, task1/data/test.json (and task2, task3) as in the "
                   "released copen_data.zip")
    return found


@dataclass
class LoadReport:
    """What one task and split contributed."""

    probe: str
    split: str
    path: str
    instances: int
    hidden: int
    duplicate_names: int
    skipped: list[str] = field(default_factory=list)


def load(root: Path, results: str | Path | None = None, tasks: Iterable[str] | None = None,
         taxonomy: Path | None = None) -> list[LoadReport]:
    """Load every released file under ``root`` into the results file (each task's probe is
    replaced in one transaction). Malformed items are skipped and listed in the reports; a file
    that is not a JSON list stops the load before anything is written. ``taxonomy``:
    ``father.txt``, to mark CSJ distractors hard/easy from the entities' concepts."""
    files = find_files(Path(root))
    top = top_concepts(read_taxonomy(Path(taxonomy))[0]) if taxonomy else None
    wanted = [task_name(t) for t in tasks] if tasks else list(files)
    reports: list[LoadReport] = []
    frames: dict[str, list[pl.DataFrame]] = {}
    for task in wanted:
        for split, path in files.get(task, {}).items():
            skipped: list[str] = []
            df = frame(task, split, read_items(path), path, top=top, skipped=skipped)
            frames.setdefault(task, []).append(df)
            fields = [json.loads(f) for f in df["fields"]]
            reports.append(LoadReport(PROBES[task], split, str(path), df.height,
                                      sum(1 for f in fields if f.get("hidden")),
                                      sum(int(f.get("duplicates", 0)) for f in fields),
                                      skipped))
    con = connect(results)
    try:
        for task, parts in frames.items():
            write_instances(con, PROBES[task], pl.concat(parts))
    finally:
        con.close()
    return reports


def format_reports(reports: list[LoadReport]) -> str:
    """A markdown table of the load, with a line on hidden labels."""
    lines = ["| probe | split | instances | hidden labels | file |", "|---|---|---:|---:|---|"]
    lines += [f"| {r.probe} | {r.split} | {r.instances:,} | {r.hidden:,} | {r.path} |"
              for r in reports]
    hidden = sum(r.hidden for r in reports)
    if hidden:
        lines += ["", f"{hidden:,} instance(s) have hidden labels (-1, the public test files): "
                  "they are scored, but every metric leaves them out (metric 'n' counts only "
                  "labelled instances)."]
    skipped = [msg for r in reports for msg in r.skipped]
    if skipped:
        lines += ["", f"{len(skipped):,} malformed item(s) skipped:"]
        lines += [f"- {msg}" for msg in skipped]
    dups = sum(r.duplicate_names for r in reports)
    if dups:
        lines.append(f"{dups:,} CSJ candidate name(s) repeat within their instance; each name "
                     "is scored once.")
    return "\n".join(lines)
