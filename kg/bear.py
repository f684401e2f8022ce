"""Load BEAR or BEAR-big (Wiland, Ploner and Akbik 2024; lm-pub-quiz's format) into a graph.

The files (``kg/sources.toml``, sources ``bear`` and ``bear-big``): the dataset folder's
``metadata_relations.json`` (each relation's ``templates`` and, in BEAR, its ordered answer space
``answer_space_ids`` / ``answer_space_labels``), one ``P<n>.jsonl`` per relation (instances:
``sub_id``, ``sub_label``, ``sub_aliases``, ``obj_id``, ``obj_label``, in BEAR also
``answer_idx``) and ``relation_info.json`` (each relation's ``domains``); for BEAR-big also
``bear_lite_indices.json``: per relation, the positions in BEAR-big's file of BEAR's instances
(BEAR is this subset of BEAR-big: instance ``i`` of ``BEAR/P6.jsonl`` is instance
``indices["P6"][i]`` of ``BEAR-big/P6.jsonl``, same subject and object, for all 7,731).

What lm-pub-quiz 0.3.3 does, done the same way here (``data/dataset.py``, ``data/base.py``):

- The relations are the ``P<n>.jsonl`` files (a metadata entry without a file, BEAR-big's
  P414, is no relation); a file whose code has no metadata entry is an error.
- The answer space: the metadata's ``answer_space_ids``/``answer_space_labels`` in their order;
  without them (BEAR-big) it is derived from the instances: each ``obj_id`` once, in the order
  of its first instance, labelled by its first instance's ``obj_label``
  (``instance_table.groupby("obj_id", sort=False).obj_label.first()``).
- The gold answer: ``answer_idx`` when the file has it, else the position of ``obj_id`` in the
  answer space. An instance whose gold answer is not the answer at that position is an error.
- An instance's position in its file is its index (``instance_index``; bear_lite_indices.json and
  ``Relation.subsample`` refer to it). The subject is ``sub_label`` (aliases are kept, not used).

Triples (``NS`` = ``https://w3id.org/kgprobe/data/<source>/``), all in the source's graph:

- ``NS:P19 a kgp:BearRelation``: ``kgp:code "P19"``, ``kgp:domain "Biographical"`` (one each),
  ``kgp:template NS:P19/template-0`` (``kgp:templateIndex 0``, ``kgp:text "[X] was born in
  [Y]."``), ``kgp:answer NS:P19/answer-3`` (``kgp:answerIndex 3``, ``kgp:entity wd:Q90``,
  ``rdfs:label "Paris"``), ``kgp:answerCount``, ``kgp:instanceCount``.
- ``NS:P19/instance-0 a kgp:BearInstance``: ``kgp:relation``, ``kgp:instanceIndex``,
  ``kgp:subject wd:Q..``, ``kgp:subjectLabel``, ``kgp:subjectAlias`` (each), ``kgp:gold`` (the
  answer node), and in BEAR-big ``kgp:inBear true`` for the instances that BEAR holds too.

>>> answer_space_from_instances([{"obj_id": "Q2", "obj_label": "b"},
...     {"obj_id": "Q1", "obj_label": "a"}, {"obj_id": "Q2", "obj_label": "B"}])
[('Q2', 'b'), ('Q1', 'a')]
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from kg.build import LoadContext, Triple
from kg.errors import SourceError
from kg.vocab import KGP, RDF, RDFS, WD, XSD, data_ns

_CODE = re.compile(r"^P\d+$")
_FIELDS = ("sub_id", "sub_label", "obj_id", "obj_label")


@dataclass
class BearRelation:
    """One relation as lm-pub-quiz reads it."""

    code: str
    templates: list[str]
    answers: list[tuple[str, str]]          # (obj_id, label), in answer-space order
    instances: list[dict[str, Any]]         # rows of the jsonl file, in file order
    gold: list[int] = field(default_factory=list)  # answer index per instance
    domains: list[str] = field(default_factory=list)


def natural_key(code: str) -> tuple[int, str]:
    """lm-pub-quiz's relation order (natural sort: P6 before P19).

    >>> sorted(["P19", "P6", "P101"], key=natural_key)
    ['P6', 'P19', 'P101']
    """
    digits = code[1:]
    return (int(digits), code) if digits.isdigit() else (10**9, code)


def answer_space_from_instances(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """BEAR-big's answer space: each ``obj_id`` once, in order of first appearance, with the
    label of its first instance (lm-pub-quiz's ``answer_space_from_instance_table``)."""
    seen: dict[str, str] = {}
    for r in rows:
        seen.setdefault(str(r["obj_id"]), str(r["obj_label"]))
    return list(seen.items())


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SourceError(f"{path}: not readable JSON ({e}); copy the file again from "
                          "lm-pub-quiz/BEAR.") from e


def read_instances(path: Path) -> list[dict[str, Any]]:
    """The rows of one relation file; a line that is not a JSON object with the BEAR fields is
    an error naming the line."""
    rows = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise SourceError(f"{path}:{lineno}: not a JSON object ({e.msg}); fix the "
                                  "line or copy the file again.") from e
            missing = [f for f in _FIELDS if not isinstance(row, dict) or row.get(f) is None]
            if missing:
                raise SourceError(f"{path}:{lineno}: missing field(s) {', '.join(missing)}; a "
                                  "BEAR instance needs sub_id, sub_label, obj_id, obj_label.")
            rows.append(row)
    return rows


def read_relation(path: Path, metadata: dict[str, Any], domains: dict[str, Any]) -> BearRelation:
    """One ``P<n>.jsonl`` file with its metadata entry, checked."""
    code = path.name.removesuffix(".jsonl")
    if code not in metadata:
        raise SourceError(f"{path}: relation {code} has no entry in metadata_relations.json "
                          "beside it; add its templates there or remove the file.")
    meta = metadata[code]
    templates = [str(t) for t in meta.get("templates", [])]
    for t in templates:
        if t.count("[Y]") < 1:
            raise SourceError(f"metadata_relations.json: relation {code} template {t!r} has no "
                              "answer placeholder [Y]; add it.")
    rows = read_instances(path)
    if "answer_space_ids" in meta and "answer_space_labels" in meta:
        ids, labels = meta["answer_space_ids"], meta["answer_space_labels"]
        if len(ids) != len(labels):
            raise SourceError(f"metadata_relations.json: relation {code} has {len(ids)} "
                              f"answer_space_ids but {len(labels)} answer_space_labels; make "
                              "them the same length.")
        answers = [(str(i), str(lab)) for i, lab in zip(ids, labels, strict=True)]
    else:
        answers = answer_space_from_instances(rows)
    position = {a[0]: i for i, a in enumerate(answers)}
    gold = []
    for n, row in enumerate(rows, start=1):
        idx = row.get("answer_idx")
        if idx is None:
            idx = position.get(str(row["obj_id"]))
        if not isinstance(idx, int) or not 0 <= idx < len(answers) or \
                answers[idx][0] != str(row["obj_id"]):
            raise SourceError(f"{path}:{n}: the gold answer {row['obj_id']} is not answer "
                              f"{idx} of relation {code}'s answer space; fix answer_idx or the "
                              "answer space in metadata_relations.json.")
        gold.append(idx)
    info = domains.get(code, {})
    return BearRelation(code, templates, answers, rows, gold,
                        [str(d) for d in info.get("domains", [])])


def _int(n: int) -> ox.Literal:
    return ox.Literal(str(n), datatype=XSD.integer)


def relation_triples(rel: BearRelation, ns: Any, lite: set[int] | None) -> Iterator[Triple]:
    """The triples of one relation (see the module docstring); ``lite``: the positions of the
    instances that BEAR holds too (BEAR-big only)."""
    r = ns[rel.code]
    yield r, RDF.type, KGP.BearRelation
    yield r, KGP.code, ox.Literal(rel.code)
    yield r, KGP.answerCount, _int(len(rel.answers))
    yield r, KGP.instanceCount, _int(len(rel.instances))
    for d in rel.domains:
        yield r, KGP.domain, ox.Literal(d)
    for i, text in enumerate(rel.templates):
        t = ns[f"{rel.code}/template-{i}"]
        yield r, KGP.template, t
        yield t, KGP.templateIndex, _int(i)
        yield t, KGP.text, ox.Literal(text)
    answer_nodes = []
    for i, (qid, label) in enumerate(rel.answers):
        a = ns[f"{rel.code}/answer-{i}"]
        answer_nodes.append(a)
        yield r, KGP.answer, a
        yield a, KGP.answerIndex, _int(i)
        yield a, KGP.entity, WD[qid]
        yield a, RDFS.label, ox.Literal(label)
    for i, (row, g) in enumerate(zip(rel.instances, rel.gold, strict=True)):
        s = ns[f"{rel.code}/instance-{i}"]
        yield s, RDF.type, KGP.BearInstance
        yield s, KGP.relation, r
        yield s, KGP.instanceIndex, _int(i)
        yield s, KGP.subject, WD[str(row["sub_id"])]
        yield s, KGP.subjectLabel, ox.Literal(str(row["sub_label"]))
        for alias in row.get("sub_aliases") or []:
            yield s, KGP.subjectAlias, ox.Literal(str(alias))
        yield s, KGP.gold, answer_nodes[g]
        if lite is not None and i in lite:
            yield s, KGP.inBear, ox.Literal("true", datatype=XSD.boolean)


def read_dataset(files: list[Path]) -> tuple[list[BearRelation], dict[str, list[int]] | None]:
    """The relations (natural order) and, when the files include it, bear_lite_indices.json
    (BEAR's instances as positions in BEAR-big's files)."""
    by_name: dict[str, list[Path]] = {}
    for p in files:
        by_name.setdefault(p.name, []).append(p)
    need = ("metadata_relations.json", "relation_info.json")
    for name in need:
        if name not in by_name:
            raise SourceError(f"the BEAR source lists no {name} in kg/sources.toml; add it to "
                              "the source's files.")
    metadata = _json(by_name["metadata_relations.json"][0])
    domains = _json(by_name["relation_info.json"][0])
    lite = (_json(by_name["bear_lite_indices.json"][0])
            if "bear_lite_indices.json" in by_name else None)
    rel_files = sorted((p for p in files if p.suffix == ".jsonl"),
                       key=lambda p: natural_key(p.name.removesuffix(".jsonl")))
    for p in rel_files:
        if not _CODE.match(p.name.removesuffix(".jsonl")):
            raise SourceError(f"{p}: a BEAR relation file is named P<number>.jsonl.")
    return [read_relation(p, metadata, domains) for p in rel_files], lite


def load(ctx: LoadContext) -> None:
    """Write one BEAR dataset (BEAR or BEAR-big) into ``ctx.graph``."""
    relations, lite = read_dataset(ctx.files)
    ns = data_ns(ctx.source.name)

    def all_triples() -> Iterator[Triple]:
        for rel in relations:
            keep = set(lite.get(rel.code, [])) if lite is not None else None
            yield from relation_triples(rel, ns, keep)

    ctx.add(all_triples())
    ctx.stats.update(relations=len(relations),
                     instances=sum(len(r.instances) for r in relations))
