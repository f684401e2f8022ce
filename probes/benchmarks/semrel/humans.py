"""The human agent of the semantic-relation benchmark (Cao, Yamada, Teufel and Tokunaga).

The human responses (``kgp:HumanProbe`` / ``kgp:HumanAnswer`` in the ``responses`` graph, from
``cao-probe-responses``) become one "run" per relation probe (``semrel/hyp`` ... ``semrel/syn``)
with ``model = 'human'`` and ``backend = 'human'``: per probe (target word x prompt) a ranked
list of answers by pooled normalised frequency, written to ``responses`` exactly like a model's
top-k, so the metric SQL in ``eval/semrel/`` treats people and models alike. The raw answers go
to ``human_responses``.

Pooled normalised frequency (Cao et al. section 5): the answer tokens of all annotators are
pooled and each distinct answer gets its count divided by the number of tokens. Ties are broken
by the best (lowest) position at which an annotator gave the answer, then alphabetically.

>>> human_distribution([["pet", "animal"], ["animal"], ["pet"], ["canine", "animal", "pet"]])
[('animal', 0.428...), ('pet', 0.428...), ('canine', 0.142...)]

Prompts: the models get the 40 prompts of the paper's Appendix A (the probe files); the
response file's prompt strings are only keys for the human answers. A human prompt is matched
to the probe file's prompt that is equal once every ``[DET]`` is removed (the file writes
"[DET] [W] is a kind of [V]" for Appendix A's "[DET] [W] is a kind of [DET] [V]"); the three
hyponymy prompts of the file that Appendix A does not list are left out and counted.

Answers are normalised (stripped, lower-cased, inner spaces collapsed, a leading article "a",
"an" or "the" dropped); answers that are several words, or not a single-word WordNet lemma
(typos such as "obidient"), are kept in the list (a model can never match them) and counted.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from kg.relations import RELATIONS, relation_probe
from kg.store import KnowledgeStore
from kg.vocab import KGP, graph
from probes.engine.errors import ProbeError
from probes.engine.spec import Probe, discover
from probes.results import transaction
from probes.results.shared import HumanResponseRow, replace_human_responses
from probes.results.writers import Run, delete_run, insert_run, write_responses

HUMAN = "human"
ARTICLE = re.compile(r"^(?:a|an|the)\s+")


def normalise_answer(text: str) -> str:
    """One answer as compared with model words.

    >>> normalise_answer("  The  Golden Retriever ")
    'golden retriever'
    >>> normalise_answer("an")
    'an'
    """
    t = " ".join(text.strip().lower().split())
    stripped = ARTICLE.sub("", t)
    return stripped or t


def human_distribution(annotators: Sequence[Sequence[str]]) -> list[tuple[str, float]]:
    """Pooled normalised frequencies of the annotators' answers, best first (see the module)."""
    counts: Counter[str] = Counter()
    best: dict[str, int] = {}
    for answers in annotators:
        for position, a in enumerate(x for x in answers if x):
            counts[a] += 1
            best[a] = min(best.get(a, position), position)
    total = sum(counts.values())
    ranked = sorted(counts, key=lambda a: (-counts[a], best[a], a))
    return [(a, counts[a] / total) for a in ranked]


def prompt_key(template: str) -> str:
    """A prompt with every ``[DET]`` removed, to match the response file to Appendix A.

    >>> prompt_key("[DET] [W] is a kind of [V]") == prompt_key("[DET] [W] is a kind of [DET] [V]")
    True
    """
    return " ".join(re.sub(r"\[DET\]", " ", template, flags=re.IGNORECASE).lower().split())


@dataclass
class HumanLoad:
    """What ``load_humans`` wrote and what it had to count."""

    runs: int = 0
    probes: int = 0
    answers: int = 0
    unmatched_targets: Counter[str] = field(default_factory=Counter)
    unmatched_prompts: Counter[str] = field(default_factory=Counter)
    multi_word: int = 0
    not_a_lemma: int = 0
    empty: int = 0

    def summary(self) -> str:
        lines = [f"human agent: {self.runs} runs, {self.probes} probes, {self.answers} answers",
                 f"  answers of several words: {self.multi_word}",
                 f"  single words that are not WordNet lemmas (typos?): {self.not_a_lemma}",
                 f"  empty answers dropped: {self.empty}"]
        if self.unmatched_targets:
            per = ", ".join(f"{k}: {v}" for k, v in sorted(self.unmatched_targets.items()))
            lines.append("  probes whose target word is not an instance of the relation probe "
                         f"(left out): {sum(self.unmatched_targets.values())} ({per})")
        if self.unmatched_prompts:
            lines.append(f"  probes whose prompt is not in Appendix A (left out): "
                         f"{sum(self.unmatched_prompts.values())}")
        return "\n".join(lines)


HUMAN_QUERY = f"""PREFIX kgp: <{KGP}>
SELECT ?word ?relation ?prompt ?annotator ?position ?text WHERE {{
  GRAPH {graph("responses")} {{
    ?p a kgp:HumanProbe ; kgp:targetWord ?word ; kgp:relationCode ?relation ; kgp:prompt ?prompt .
    ?a kgp:answerOf ?p ; kgp:annotator ?annotator ; kgp:position ?position ;
       kgp:normalisedText ?text .
  }}
}}"""

LEMMA_QUERY = f"""PREFIX wn: <http://www.w3.org/2006/03/wn/wn20/schema/>
SELECT DISTINCT ?form WHERE {{ GRAPH {graph("wordnet")} {{ ?w wn:lexicalForm ?form }} }}"""


def relation_probes(queries: Iterable[Path] = (), include_default: bool = True) -> dict[str, Probe]:
    """The six relation probes by relation code; a ProbeError names any that is missing."""
    found = {p.spec.name: p for p in discover(list(queries), [relation_probe(r) for r in RELATIONS],
                                               include_default=include_default)}
    missing = [relation_probe(r) for r in RELATIONS if relation_probe(r) not in found]
    if missing:
        raise ProbeError(f"probe files {', '.join(missing)} not found in queries/ (or --queries)")
    return {r: found[relation_probe(r)] for r in RELATIONS}


def _targets(con: duckdb.DuckDBPyConnection, probe: str) -> dict[str, tuple[str, str]]:
    rows = con.execute("SELECT target, split, instance_id FROM instances WHERE probe = ?",
                       [probe]).fetchall()
    return {t: (s, i) for t, s, i in rows}


def load_humans(con: duckdb.DuckDBPyConnection, store: KnowledgeStore,
                probes: dict[str, Probe]) -> HumanLoad:
    """Write the human agent's runs, ranked responses and raw answers (one transaction per
    relation; re-loading replaces the human rows of that probe and nothing else)."""
    names = [p.spec.name for p in probes.values()]
    exported = con.execute(f"SELECT count(*) FROM instances WHERE probe IN "
                           f"({', '.join('?' for _ in names)})", names).fetchall()[0][0]
    if not exported:
        raise ProbeError("no instances of the semrel probes in the results file: run `python "
                         "-m probes.engine.export -p 'semrel/*'` first")
    rows = store.query(HUMAN_QUERY)
    if not rows:
        raise ProbeError("the store has no human responses (graph 'responses'): build it with "
                         "`python -m kg.build --source responses`")
    lemmas = {r["form"] for r in store.query(LEMMA_QUERY)}
    answers: dict[tuple[str, str, str], dict[int, list[tuple[int, str]]]] = defaultdict(
        lambda: defaultdict(list))
    for r in rows:
        key = (r["relation"], r["word"], r["prompt"])
        answers[key][int(r["annotator"])].append((int(r["position"]), str(r["text"])))
    report = HumanLoad()
    now = datetime.now(UTC).replace(tzinfo=None)
    for relation, probe in probes.items():
        name = probe.spec.name
        targets = _targets(con, name)
        prompt_ids = {prompt_key(t): i for i, t in enumerate(probe.spec.prompts)}
        raw: list[tuple[Any, ...]] = []
        ranked: list[tuple[Any, ...]] = []
        run_id = f"human-{name}"
        for (rel, word, prompt), by_annotator in sorted(answers.items()):
            if rel != relation:
                continue
            if word not in targets:
                report.unmatched_targets[relation] += 1
                continue
            if prompt_key(prompt) not in prompt_ids:
                report.unmatched_prompts[relation] += 1
                continue
            split, iid = targets[word]
            pid = prompt_ids[prompt_key(prompt)]
            lists = []
            for annotator in sorted(by_annotator):
                words = []
                for position, text in sorted(by_annotator[annotator]):
                    a = normalise_answer(text)
                    if not a:
                        report.empty += 1
                        continue
                    report.answers += 1
                    if " " in a:
                        report.multi_word += 1
                    elif a not in lemmas:
                        report.not_a_lemma += 1
                    raw.append((name, iid, pid, annotator, position, a))
                    words.append(a)
                lists.append(words)
            report.probes += 1
            for rank, (a, p) in enumerate(human_distribution(lists), start=1):
                ranked.append((run_id, name, split, iid, pid, rank, a, p))
        _write(con, name, run_id, relation, raw, ranked, now)
        report.runs += 1
    return report


def _write(con: duckdb.DuckDBPyConnection, probe: str, run_id: str, relation: str,
           raw: list[tuple[Any, ...]], ranked: list[tuple[Any, ...]], now: datetime) -> None:
    cfg = {"source": "cao-probe-responses", "relation": relation,
           "ranking": "pooled normalised frequency",
           "prompts": "Appendix A (response-file prompts matched without [DET])"}
    run = Run(run_id=run_id, model=HUMAN, backend="human", family="human", task="relatum",
              probe=probe,
              config=cfg, started_at=now, finished_at=now, wall_s=0, status="done",
              requests=len({(r[3], r[4]) for r in ranked}))
    with transaction(con):
        replace_human_responses(con, probe, [HumanResponseRow(*r) for r in raw])
        delete_run(con, run_id, ("responses", "runs"))
        write_responses(con, ranked)
        insert_run(con, run)
