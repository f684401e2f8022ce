"""A long ``VALUES`` block reaches rdflib's parser as its first row (issue 46: 4.6 s of a
1,000-row ``VALUES`` probe's export went to rdflib's algebra): what kg.sparql.analyse reads off
the query is the same as when rdflib reads every row.

The oracle is rdflib itself on the whole text (kg.sparql.ELIDE_CHARS raised past the text's
length), at a size it reads in a second or two."""

from __future__ import annotations

import pytest

import kg.sparql as sparql
from kg.sparql import analyse, elide_values
from probes.engine.errors import ProbeFileError
from probes.engine.spec import parse_probe

ROWS = 300


ODD = (" { VALUES ?k { ex:a ex:b } } UNION { SERVICE <http://e.org/sparql> { ?iri ?p ?k } }\n"
       " BIND(RAND() AS ?r)\n")


def query(rows: int = ROWS, odd: bool = True) -> str:
    values = "\n".join(f'  ("word {i}"@en {i} <http://e.org/w{i}> "x\\"{i}")' for i in range(rows))
    return ("PREFIX ex: <http://e.org/>\n"
            "SELECT ?w ?n ?iri (MD5(CONCAT(?w, \"7\")) AS ?h) WHERE {\n"
            f" VALUES (?w ?n ?iri ?q) {{\n{values}\n }}\n{ODD if odd else ''}}}\n"
            "ORDER BY MD5(CONCAT(STR(?w), \"42\"))\n")


def test_the_shape_is_the_one_rdflib_reads_from_every_row(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    text = query()
    short, _ = elide_values(text)
    assert len(short) < 600 and '"word 0"@en' in short and '"word 1"' not in short
    got = analyse(text)
    analyse.cache_clear()
    monkeypatch.setattr(sparql, "ELIDE_CHARS", len(text) + 1)
    assert elide_values(text) == (text, frozenset())
    whole = analyse(text)
    analyse.cache_clear()
    assert got == whole
    assert {"word 299", "299", 'x"299', "42"} <= got.literals
    assert got.services == ("http://e.org/sparql",) and got.nondeterministic == ("RAND",)


def test_a_long_values_probe_parses_and_keeps_its_seed_check() -> None:
    head = ("# name: t/values\n# task: relatum\n# split: test\n# target: ?w\n# gold: ?n\n"
            "# seed: 42\n")
    probe = parse_probe(head + query(2000, odd=False), "values.rq")
    assert probe.variables == ["w", "n", "iri", "h"]
    assert "1999" in analyse(probe.query).literals  # a cut row's literal still counts
    with pytest.raises(ProbeFileError, match="seed"):  # a seed no literal of the query holds
        parse_probe(head.replace("seed: 42", "seed: 4242") + query(2000, odd=False), "values.rq")


def test_rows_with_tags_datatypes_and_one_variable() -> None:
    rows = " ".join(f'"{i}"^^<http://www.w3.org/2001/XMLSchema#integer>' for i in range(400))
    short, cut = elide_values(f"SELECT ?x {{ VALUES ?x {{ {rows} }} }}")
    assert short == 'SELECT ?x { VALUES ?x { "0"^^<http://www.w3.org/2001/XMLSchema#integer> } }'
    assert cut == {str(i) for i in range(1, 400)}
    tagged = " ".join(f"'w{i}'@en-GB" for i in range(400))
    short, cut = elide_values(f"SELECT ?x {{ VALUES ?x {{ {tagged} }} }} # {{ }}")
    assert short == "SELECT ?x { VALUES ?x { 'w0'@en-GB } } # { }"
