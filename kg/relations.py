"""The semantic-relation codes of Cao, Yamada, Teufel and Tokunaga: the one definition.

The codes are the vocabulary the semrel sources are written in: the human responses
(kg.responses maps the file's relation names to them), the derived graphs
(``kgp:relationCode`` in ``queries/derived/semrel-*.rq``) and the probe files
(``queries/semrel/<code in lower case>.rq``, one per relation). Every Python user imports them
from here: kg.responses, probes.benchmarks.semrel (the human agent) and eval (the semrel report and
the profile; eval may import kg). SQL and SPARQL files, which cannot import, spell them out
(``eval/semrel/_views.sql``, ``queries/derived/semrel-tuples.rq``);
``tests/test_architecture.py`` fails on a second Python definition.

>>> RELATIONS
('HYP', 'HPO', 'HOL', 'MER', 'ANT', 'SYN')
>>> relation_probe("HPO"), RELATION_NAMES["HPO"]
('semrel/hpo', 'hyponymy')
"""

from __future__ import annotations

RELATIONS = ("HYP", "HPO", "HOL", "MER", "ANT", "SYN")
"""The paper's six relations, in its order (Table 1): HPO is hyponymy, the reverse of HYP;
HOL and MER (holonymy, meronymy) are each other's reverse; ANT and SYN are symmetric."""

RELATION_NAMES = dict(zip(RELATIONS, ("hypernymy", "hyponymy", "holonymy", "meronymy",
                                      "antonymy", "synonymy"), strict=True))
"""Each code's name, for reports."""


def relation_probe(relation: str) -> str:
    """The probe that holds relation ``relation``'s instances (``queries/semrel/<r>.rq``).

    >>> relation_probe("HYP")
    'semrel/hyp'
    """
    return f"semrel/{relation.lower()}"
