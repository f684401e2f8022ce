"""Write a synthetic results file for sizing the HTML report: N instances of a choice probe
(4 candidates each), scored under P prompts by M models, every instance with provenance (3
bindings, 2 linking triples). The numbers are random (seeded); the shape is a real export's.
With ``--generate`` each model also answers every instance under every prompt (a generate run
of the same probe, as a probe header's ``formats`` makes; right for about half the instances),
so the page has the agreement section and the generated answers.

    .venv/bin/python scripts/html_bench_data.py bench.duckdb --instances 10000 \\
        --prompts 3 --models 2 [--generate]

scripts/bench_html.py builds the report from it and measures it in Chromium.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from probes.results import connect

TEMPLATES = ["A [W] is a kind of [V].", "[W] is an example of [V].", "Every [W] is a [V]."]


def write(path: Path, instances: int, prompts: int, models: int, generate: bool = False
          ) -> None:
    path.unlink(missing_ok=True)
    con = connect(str(path))
    n, p = instances, prompts
    con.execute(f"""INSERT INTO instances
        SELECT 'bench/choice', 'test', printf('i%06d', i), printf('thing %d', i),
               [printf('kind %d', i % 97)],
               [printf('kind %d', i % 97), printf('kind %d', (i + 1) % 97),
                printf('kind %d', (i + 2) % 97), printf('kind %d', (i + 3) % 97)],
               json_object('w', printf('thing %d', i),
                           'c', printf('http://example.org/thing/%d', i),
                           'd', printf('http://example.org/kind/%d', i % 97)),
               now()
        FROM range({n}) t(i)""")
    con.execute(f"""INSERT INTO instance_provenance
        SELECT 'bench/choice', 'test', printf('i%06d', i),
          json_array(
            json_object('var', 'c', 'value', printf('http://example.org/thing/%d', i),
                        'iri', true, 'label', printf('thing %d', i),
                        'graphs', json_array('https://w3id.org/kgprobe/graph/wordnet')),
            json_object('var', 'd', 'value', printf('http://example.org/kind/%d', i % 97),
                        'iri', true, 'label', printf('kind %d', i % 97),
                        'graphs', json_array('https://w3id.org/kgprobe/graph/wordnet')),
            json_object('var', 'w', 'value', printf('thing %d', i), 'iri', false,
                        'label', NULL,
                        'graphs', json_array('https://w3id.org/kgprobe/graph/wordnet'))),
          json_array(
            json_array(printf('http://example.org/thing/%d', i),
                       'http://www.w3.org/2000/01/rdf-schema#subClassOf',
                       printf('http://example.org/kind/%d', i % 97),
                       'https://w3id.org/kgprobe/graph/wordnet-inferred'),
            json_array(printf('http://example.org/thing/%d', i),
                       'http://www.w3.org/2000/01/rdf-schema#label', printf('thing %d', i),
                       'https://w3id.org/kgprobe/graph/wordnet'))
        FROM range({n}) t(i)""")
    config = json.dumps({"prompts": TEMPLATES[:p] + [f"template {k}" for k in range(3, p)]})
    for m in range(models):
        run = f"run{m:04d}" + "0" * 24
        con.execute("INSERT INTO runs (run_id, model, probe, config, status, task, started_at, "
                    "finished_at) VALUES (?, ?, 'bench/choice', ?::JSON, 'done', 'choice', "
                    "now(), now())", [run, f"model-{chr(97 + m)}", config])
        con.execute(f"""INSERT INTO scores (run_id, probe, split, instance_id, prompt_id,
                candidate, prompt, score, n_tokens, label, n_chars)
            SELECT ?, 'bench/choice', 'test', printf('i%06d', i), p, cand,
                   printf('A thing %d is a kind of %s.', i, cand),
                   -1.0 - 8.0 * ((hash(i, p, c, {m}) % 100000) / 100000.0),
                   3, cand, length(cand)
            FROM range({n}) a(i), range({p}) b(p), range(4) d(c),
                 LATERAL (SELECT printf('kind %d', (i + c) % 97) AS cand)""", [run])
        if not generate:
            continue
        gen = f"gen{m:04d}" + "0" * 25
        con.execute("INSERT INTO runs (run_id, model, probe, config, status, task, started_at, "
                    "finished_at) VALUES (?, ?, 'bench/choice', ?::JSON, 'done', 'generate', "
                    "now(), now())", [gen, f"model-{chr(97 + m)}", config])
        con.execute(f"""INSERT INTO generations (run_id, probe, split, instance_id, prompt_id,
                prompt, generation, n_tokens, finish, answers)
            SELECT ?, 'bench/choice', 'test', printf('i%06d', i), p,
                   printf('A thing %d is a kind of', i),
                   printf(' kind %d, I think', CASE WHEN hash(i, {m}) % 2 = 0 THEN i % 97
                                                    ELSE (i + 1) % 97 END),
                   5, 'stop', [printf('kind %d', i % 97)]
            FROM range({n}) a(i), range({p}) b(p)""", [gen])
    con.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--instances", type=int, default=10_000)
    parser.add_argument("--prompts", type=int, default=3)
    parser.add_argument("--models", type=int, default=2)
    parser.add_argument("--generate", action="store_true",
                        help="also a generate run per model (the agreement section)")
    args = parser.parse_args()
    write(args.path, args.instances, args.prompts, args.models, args.generate)
    print(f"wrote {args.path}: {args.instances:,} instances x {args.prompts} prompts x "
          f"{args.models} models")


if __name__ == "__main__":
    main()
