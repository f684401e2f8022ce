"""Load the human responses of Cao, Yamada, Teufel and Tokunaga to semantic-relation probes.

The file (``human_responses.json.gz``) is ``{target_word: {relation: {prompt: [answers of
annotator 1, ..., annotator 4]}}}``, each annotator's answers a list of strings. Each
(target, relation, prompt) becomes a ``kgp:HumanProbe`` named ``probe-<h>`` where ``h`` is the
first 16 hex digits of the MD5 of ``target|relation|prompt``; each answer string becomes a
``kgp:HumanAnswer`` named ``answer-<h>-<annotator>-<position>`` with the raw text and a
normalised (lower-cased, stripped) text. What counts as one word is left to the metrics.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyoxigraph as ox

from kg.build import LoadContext, Triple
from kg.errors import SourceError
from kg.relations import RELATIONS
from kg.vocab import KGP, RDF, data_ns

NS = data_ns("responses")
RELATION_CODES = dict(zip(("hyp", "rhyp", "holo", "mero", "ant", "syn"), RELATIONS, strict=True))
"""The file's relation names -> the paper's codes (kg.relations: HPO = hyponymy, the reverse of
HYP)."""
ANNOTATORS = 4

Responses = dict[str, dict[str, dict[str, list[list[str]]]]]


def probe_hash(target: str, relation: str, prompt: str) -> str:
    """The 16-hex-digit id of a probe: MD5 of ``target|relation|prompt``.

    >>> probe_hash("belief", "ant", "[DET] [W] is the opposite of [V]")
    '5ab20b60733a9850'
    """
    key = f"{target}|{relation}|{prompt}".encode()
    return hashlib.md5(key, usedforsecurity=False).hexdigest()[:16]


def normalise(text: str) -> str:
    """The normalised form of an answer: stripped and lower-cased, nothing dropped.

    >>> normalise("  Golden Retriever ")
    'golden retriever'
    """
    return text.strip().lower()


def read(path: Path) -> Responses:
    """Read and check the response file (gzipped or plain JSON)."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SourceError(
            f"{path}: cannot read it as {'gzipped ' if path.suffix == '.gz' else ''}JSON: {e}. "
            "The file is damaged; download it again."
        ) from e
    check(data, path)
    return data


def _fail(path: Path, where: str, what: str) -> SourceError:
    return SourceError(
        f"{path}: at {where}: {what}. Expected {{target_word: {{relation: {{prompt: "
        f"[{ANNOTATORS} lists of answer strings]}}}}}}; fix the entry or restore the file."
    )


def check(data: Any, path: Path) -> None:
    """Check the nesting, relation names, 4 annotator lists per probe and string answers.

    >>> check({"dog": {"hyp": {"[DET] [W] is a kind of [V]": [["animal"], [], ["pet"], ["a"]]}}},
    ...       Path("r.json"))
    >>> check({"dog": {"hyper": {}}}, Path("r.json"))
    Traceback (most recent call last):
    ...
    kg.errors.SourceError: r.json: at ['dog']['hyper']: unknown relation 'hyper' ...
    """
    if not isinstance(data, dict):
        raise _fail(path, "the top level", f"a {type(data).__name__}, not an object")
    for target, relations in data.items():
        if not isinstance(relations, dict):
            raise _fail(path, f"[{target!r}]", "not an object of relations")
        for rel, prompts in relations.items():
            where = f"[{target!r}][{rel!r}]"
            if rel not in RELATION_CODES:
                raise _fail(path, where, f"unknown relation {rel!r} (known: "
                            f"{', '.join(RELATION_CODES)})")
            if not isinstance(prompts, dict):
                raise _fail(path, where, "not an object of prompts")
            for prompt, lists in prompts.items():
                w = f"{where}[{prompt!r}]"
                if not isinstance(lists, list) or len(lists) != ANNOTATORS:
                    n = len(lists) if isinstance(lists, list) else type(lists).__name__
                    raise _fail(path, w, f"{ANNOTATORS} annotator lists needed, got {n}")
                for i, answers in enumerate(lists, start=1):
                    if not isinstance(answers, list) or not all(
                            isinstance(a, str) for a in answers):
                        raise _fail(path, f"{w}[{i - 1}]",
                                    f"annotator {i}'s answers are not a list of strings")


def triples(data: Responses) -> Iterator[Triple]:
    """The RDF triples of probes and answers (``data`` already checked)."""
    for target, relations in data.items():
        target_lit = ox.Literal(target)
        for rel, prompts in relations.items():
            rel_lit, code_lit = ox.Literal(rel), ox.Literal(RELATION_CODES[rel])
            for prompt, lists in prompts.items():
                h = probe_hash(target, rel, prompt)
                probe = NS[f"probe-{h}"]
                yield probe, RDF.type, KGP.HumanProbe
                yield probe, KGP.targetWord, target_lit
                yield probe, KGP.relation, rel_lit
                yield probe, KGP.relationCode, code_lit
                yield probe, KGP.prompt, ox.Literal(prompt)
                for annotator, answers in enumerate(lists, start=1):
                    ann_lit = ox.Literal(annotator)
                    for i, text in enumerate(answers):
                        a = NS[f"answer-{h}-{annotator}-{i}"]
                        yield a, RDF.type, KGP.HumanAnswer
                        yield a, KGP.answerOf, probe
                        yield a, KGP.annotator, ann_lit
                        yield a, KGP.position, ox.Literal(i)
                        yield a, KGP.responseText, ox.Literal(text)
                        yield a, KGP.normalisedText, ox.Literal(normalise(text))


def load(ctx: LoadContext) -> None:
    """Write the human probes and answers into ``ctx.graph`` (file: human_responses.json.gz)."""
    (path,) = ctx.files
    data = read(path)
    probes = [lists for rels in data.values() for ps in rels.values() for lists in ps.values()]
    empty = sum(1 for lists in probes for answers in lists if not answers)
    if empty:
        ctx.warn(f"{empty} annotator answer lists are empty (no answer resources for them)")
    ctx.add(triples(data))
    ctx.stats.update(targets=len(data), probes=len(probes),
                     answers=sum(len(a) for lists in probes for a in lists), empty_lists=empty)
