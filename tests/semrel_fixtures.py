"""The hand-worked semrel results file (Cao et al.) shared by tests/test_semrel_metrics.py,
tests/test_stats.py and tests/test_semrel_report.py: :func:`build` writes it.

Declared models mA, mB (:data:`DECLARED`); shared vocabulary S = {dog, animal, pet, puppy, cat,
big, large, small, thing} (mA also has beast, which mB lacks; mC, not declared, only has dog
and must change nothing).

Tuples T^r: (dog, HYP, animal) and (dog, HYP, beast) (dropped: beast is outside S), their
reverses (animal, HPO, dog) and (beast, HPO, dog), (big, SYN, large) and (large, SYN, big).
W^HYP = {dog}, W^SYN = {big, large}; the HYP trick word is animal (semrel/hyp-trick).

Relatum sets (limited to S): dog HYP {animal, pet} (raw + beast), HPO {puppy};
big SYN {large}, ANT {small}; large SYN {big}; animal HYP {} (trick probe).

Ranked lists, two prompts (0, 1):

=============== ====================== ================= =====================
probe           mA                     mB                human (pooled lists)
=============== ====================== ================= =====================
hyp dog p0      animal cat pet         pet animal        animal pet
hyp dog p1      puppy animal thing     animal            mammal
hyp-trick an. 0 dog thing              thing             dog
hyp-trick an. 1 thing cat              dog               –
syn big p0      large small            small large       large
syn big p1      small large            large big         large huge
syn large p0    big                    big               –
syn large p1    thing big              small             –
=============== ====================== ================= =====================

Raw human answers (human_responses), per annotator: dog p0 [animal, pet] [animal] [pet,
animal]; dog p1 [mammal]; big p0 [large] [large]; big p1 [large] [huge].
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from probes.results import connect
from probes.results.writers import Run, insert_run

DECLARED = ["mA", "mB"]
SHARED = ["dog", "animal", "pet", "puppy", "cat", "big", "large", "small", "thing"]
VOCAB = {"mA": [*SHARED, "beast"], "mB": SHARED, "mC": ["dog"]}

# (probe, instance id, target, gold)
INSTANCES = [
    ("semrel/hyp", "i_dog", "dog", ["animal", "pet", "beast"]),
    ("semrel/hyp-trick", "t_animal", "animal", []),
    ("semrel/syn", "s_big", "big", ["large"]),
    ("semrel/syn", "s_large", "large", ["big"]),
]
RELATA = [("dog", "HYP", ["animal", "pet", "beast"]), ("dog", "HPO", ["puppy"]),
          ("big", "SYN", ["large"]), ("big", "ANT", ["small"]), ("large", "SYN", ["big"])]
# (word, relation, relatum, derivation)
TUPLES = [("dog", "HYP", "animal", ["source"]), ("dog", "HYP", "beast", ["source"]),
          ("animal", "HPO", "dog", ["reversed"]), ("beast", "HPO", "dog", ["reversed"]),
          ("big", "SYN", "large", ["source"]), ("large", "SYN", "big", ["reversed"])]
# run id -> (model, backend, probe)
RUNS = {
    "A_hyp": ("mA", "masked", "semrel/hyp"), "A_trick": ("mA", "masked", "semrel/hyp-trick"),
    "A_syn": ("mA", "masked", "semrel/syn"),
    "B_hyp": ("mB", "causal", "semrel/hyp"), "B_trick": ("mB", "causal", "semrel/hyp-trick"),
    "B_syn": ("mB", "causal", "semrel/syn"),
    "H_hyp": ("human", "human", "semrel/hyp"), "H_trick": ("human", "human", "semrel/hyp-trick"),
    "H_syn": ("human", "human", "semrel/syn"),
}
# run id -> instance id -> {prompt: list}
LISTS = {
    "A_hyp": {"i_dog": {0: ["animal", "cat", "pet"], 1: ["puppy", "animal", "thing"]}},
    "A_trick": {"t_animal": {0: ["dog", "thing"], 1: ["thing", "cat"]}},
    "A_syn": {"s_big": {0: ["large", "small"], 1: ["small", "large"]},
              "s_large": {0: ["big"], 1: ["thing", "big"]}},
    "B_hyp": {"i_dog": {0: ["pet", "animal"], 1: ["animal"]}},
    "B_trick": {"t_animal": {0: ["thing"], 1: ["dog"]}},
    "B_syn": {"s_big": {0: ["small", "large"], 1: ["large", "big"]},
              "s_large": {0: ["big"], 1: ["small"]}},
    "H_hyp": {"i_dog": {0: ["animal", "pet"], 1: ["mammal"]}},
    "H_trick": {"t_animal": {0: ["dog"]}},
    "H_syn": {"s_big": {0: ["large"], 1: ["large", "huge"]}},
}
# (probe, instance, prompt) -> answers of each annotator, in order
HUMAN = {
    ("semrel/hyp", "i_dog", 0): [["animal", "pet"], ["animal"], ["pet", "animal"]],
    ("semrel/hyp", "i_dog", 1): [["mammal"]],
    ("semrel/syn", "s_big", 0): [["large"], ["large"]],
    ("semrel/syn", "s_big", 1): [["large"], ["huge"]],
}


def build(path: Path) -> None:
    con = connect(path)
    rel = {"semrel/hyp": "HYP", "semrel/hyp-trick": "HYP", "semrel/syn": "SYN"}
    add = """INSERT INTO instances (probe, split, instance_id, target, gold, fields, exported_at)
             VALUES (?, ?, ?, ?, ?, ?::JSON, now())"""
    for probe, iid, target, gold in INSTANCES:
        con.execute(add, [probe, "test", iid, target, gold,
                          json.dumps({"relation": rel[probe], "word": target})])
    for n, (word, r, relata) in enumerate(RELATA):
        con.execute(add, ["semrel/relata", "test", f"r{n}", word, relata,
                          json.dumps({"relation": r, "word": word})])
    for n, (word, r, relatum, derivation) in enumerate(TUPLES):
        con.execute(add, ["semrel/tuples", "test", f"t{n}", word, [relatum],
                          json.dumps({"relation": r, "word": word, "relatum": relatum,
                                      "derivation": derivation})])
    for rid, (model, backend, probe) in RUNS.items():
        insert_run(con, Run(run_id=rid, model=model, backend=backend, probe=probe,
                            task="relatum", status="done", finished_at=datetime(2024, 1, 2)))
    for rid, per_instance in LISTS.items():
        for iid, prompts in per_instance.items():
            for pid, words in prompts.items():
                for rank, word in enumerate(words, start=1):
                    con.execute("INSERT INTO responses (run_id, probe, split, instance_id, "
                                "prompt_id, rank, token, probability) "
                                "VALUES (?, ?, 'test', ?, ?, ?, ?, ?)",
                                [rid, RUNS[rid][2], iid, pid, rank, word, 1 / (rank + 1)])
    for (probe, iid, pid), annotators in HUMAN.items():
        for a, answers in enumerate(annotators, start=1):
            for pos, answer in enumerate(answers, start=1):
                con.execute("INSERT INTO human_responses VALUES (?, ?, ?, ?, ?, ?)",
                            [probe, iid, pid, a, pos, answer])
    for model, words in VOCAB.items():
        con.executemany("INSERT INTO model_vocab VALUES (?, 'lowercase', ?)",
                        [[model, w] for w in words])
    con.close()
