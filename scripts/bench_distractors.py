"""Distractors at scale (issue 30 point 7): the SPARQL idiom of
queries/examples/choice-distractors.rq against the header option ``distractors:``.

    PYTHONPATH=$PWD python scripts/bench_distractors.py --store S [--targets 200] [--pool 230]

On a store with WordNet (python -m kg.build -s wordnet): ``--targets`` noun words (a seeded
hash order) with one direct hypernym's label as gold, and a pool of ``--pool`` hypernym labels
(seven letters, alphabetical). Both are written into two probe files as VALUES, so that only
the draw differs: the idiom's self-join of the hashed (target, word) pairs, and the header
option (probes/engine/distractors.py). Prints the seconds of each ``build_instances`` (query and
instances) and whether the two give the same instances.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from kg.store import LocalStore
from probes.engine.export import QueryLimits, build_instances
from probes.engine.spec import load_probe

PREFIX = """PREFIX wn: <http://www.w3.org/2006/03/wn/wn20/schema/>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
"""
HEAD = """# task: choice
# split: test
# target: ?w
# gold: ?g
# candidates: ?c
# group_by: ?w
# prompts: ["[W] is a kind of [V]."]
"""
IDIOM = """SELECT ?w ?g ?c WHERE {{
  {t}
  {{ {gold} }}
  UNION
  {{ SELECT ?w ?c WHERE {{
      {{ SELECT ?w ?c ?hash WHERE {{ {t} {p}
          FILTER(?pool != ?g) BIND(?pool AS ?c)
          BIND(MD5(CONCAT(?w, "|", ?pool, "|", "42")) AS ?hash) }} }}
      OPTIONAL {{
        {{ SELECT ?w ?smaller WHERE {{ {t} {p}
            FILTER(?pool != ?g)
            BIND(MD5(CONCAT(?w, "|", ?pool, "|", "42")) AS ?smaller) }} }}
        FILTER(?smaller < ?hash) }}
    }} GROUP BY ?w ?c HAVING (COUNT(?smaller) < 4) }}
}}
ORDER BY ?w ?c
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--targets", type=int, default=200)
    parser.add_argument("--pool", type=int, default=230)
    args = parser.parse_args(argv)
    store = LocalStore.open(args.store)
    targets = store.query(PREFIX + f"""SELECT ?w (MIN(?gl) AS ?g) WHERE {{
        ?s a wn:NounSynset ; wn:hyponymOf ?h ; wn:containsWordSense/rdfs:label ?w .
        ?h wn:containsWordSense/rdfs:label ?gl }}
        GROUP BY ?w ORDER BY MD5(CONCAT(?w, "42")) LIMIT {args.targets}""",
                          timeout=None, max_rows=None)
    pool = store.query(PREFIX + f"""SELECT DISTINCT ?pool WHERE {{
        ?x wn:hyponymOf ?h . ?h a wn:NounSynset ; wn:containsWordSense/rdfs:label ?pool .
        FILTER(STRLEN(?pool) = 7) }} ORDER BY ?pool LIMIT {args.pool}""",
                       timeout=None, max_rows=None)

    def lit(x: object) -> str:
        return json.dumps(str(x), ensure_ascii=False)

    pairs = " ".join(f"({lit(r['w'])} {lit(r['g'])})" for r in targets)
    t = f"{{ VALUES (?w ?g) {{ {pairs} }} }}"
    p = f"{{ VALUES ?pool {{ {' '.join(lit(r['pool']) for r in pool)} }} }}"
    gold = f"VALUES (?w ?c) {{ {pairs} }}"
    with tempfile.TemporaryDirectory(prefix="kgprobe-bench-") as tmp:
        idiom, sampled = Path(tmp) / "idiom.rq", Path(tmp) / "sampled.rq"
        idiom.write_text("# name: bench/idiom\n" + HEAD + IDIOM.format(t=t, p=p, gold=gold))
        sampled.write_text("# name: bench/sampled\n" + HEAD
                           + '# distractors: {pool: "?pool", n: 4, seed: 42}\n'
                           + f"SELECT ?w ?g ?pool WHERE {{ {t} UNION {p} }}\n")
        out = {}
        for name, path in (("header option distractors:", sampled), ("SPARQL idiom", idiom)):
            t0 = time.perf_counter()
            out[name] = build_instances(load_probe(path), store, QueryLimits(timeout_s=3600))
            print(f"{name}: {out[name].height} instances in {time.perf_counter() - t0:.2f} s")
    key = ["instance_id", "target", "gold", "candidates"]
    a, b = (df.select(key).sort("target") for df in out.values())
    print(f"{len(targets)} targets x {len(pool)} pool words; same instances: {a.equals(b)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
