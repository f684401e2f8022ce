"""The hand-worked semrel results file (Cao et al.) shared by tests/test_semrel_metrics.py,
tests/test_stats.py and tests/test_semrel_report.py: :func:`build` writes it.

The file holds two relation probes, semrel/hyp (targets dog, animal) and semrel/syn (big, large,
huge), two prompts (0, 1), two models mA, mB and the humans.

Vocabularies: mA = S + {beast, huge}, mB = S + {tiny}, with the shared vocabulary
S = {dog, cat, animal, pet, big, large, small, little, puppy, thing}. A failed run of mC (whose
vocabulary is only {dog}) and an older run of mA must be ignored; mD has a done run without a
vocabulary (no restriction, only counted).

Limited sets (semrel/relata and the probes' gold; beast, creature, tail are outside S):
dog: HYP {animal, pet} (raw + beast), HPO {puppy}, MER {} (raw {tail});
animal: HYP {} (raw {creature}); big: SYN {large}, ANT {small}; large: SYN {big},
ANT {little}; huge: SYN {} (raw {}).

Ranked lists after filtering to S and re-ranking (raw lists in ``LISTS``):

======== ============== ================= ============== =================
probe    mA             mB                human          raw notes
======== ============== ================= ============== =================
dog p0   animal cat     animal pet dog    animal beast   mA raw beast,animal,cat
                                          pet
dog p1   cat pet animal pet               mammal animal  mB raw tiny,pet,huge
animal0  dog thing      thing cat         creature thing
animal1  thing cat dog  cat thing pet     creature
big p0   large small    small large       large huge     mB raw tiny,small,large
big p1   small large    large big         large,
         big                              "large big"
large p0 big little     little big        big bigg
large p1 thing cat      big small         great big      mA raw huge,thing,cat;
                                                         mB raw Big,big,small
======== ============== ================= ============== =================
"""

from __future__ import annotations

import json
from pathlib import Path

from probes.results import connect

SHARED = ["dog", "cat", "animal", "pet", "big", "large", "small", "little", "puppy", "thing"]
VOCAB = {"mA": [*SHARED, "beast", "huge"], "mB": [*SHARED, "tiny"], "mC": ["dog"]}

# (probe, instance id, target, gold)
INSTANCES = [
    ("semrel/hyp", "i_dog", "dog", ["animal", "pet", "beast"]),
    ("semrel/hyp", "i_animal", "animal", ["creature"]),
    ("semrel/syn", "s_big", "big", ["large"]),
    ("semrel/syn", "s_large", "large", ["big"]),
    ("semrel/syn", "s_huge", "huge", []),
]
RELATA = [("dog", "HYP", ["animal", "pet", "beast"]), ("dog", "HPO", ["puppy"]),
          ("dog", "MER", ["tail"]), ("animal", "HYP", ["creature"]),
          ("big", "SYN", ["large"]), ("big", "ANT", ["small"]),
          ("large", "SYN", ["big"]), ("large", "ANT", ["little"])]
TUPLES = [("dog", "HYP", "animal"), ("dog", "HYP", "pet"), ("dog", "HYP", "beast"),
          ("animal", "HYP", "creature"), ("big", "SYN", "large"), ("large", "SYN", "big"),
          ("beast", "SYN", "big")]
# run id -> (model, backend, probe, status, finished day)
RUNS = {
    "A_hyp": ("mA", "masked", "semrel/hyp", "done", 2), "A_syn": ("mA", "masked", "semrel/syn",
                                                                   "done", 2),
    "A_hyp_old": ("mA", "masked", "semrel/hyp", "done", 1),
    "B_hyp": ("mB", "causal", "semrel/hyp", "done", 2), "B_syn": ("mB", "causal", "semrel/syn",
                                                                  "done", 2),
    "H_hyp": ("human", "human", "semrel/hyp", "done", 2),
    "H_syn": ("human", "human", "semrel/syn", "done", 2),
    "C_hyp": ("mC", "masked", "semrel/hyp", "failed", 2),
    "D_syn": ("mD", "seq2seq", "semrel/syn", "done", 2),
}
# run id -> instance id -> [list at prompt 0, list at prompt 1] (raw, before filtering)
LISTS = {
    "A_hyp": {"i_dog": [["beast", "animal", "cat"], ["cat", "pet", "animal"]],
              "i_animal": [["dog", "thing", "huge"], ["thing", "cat", "dog"]]},
    "A_syn": {"s_big": [["large", "huge", "small"], ["small", "large", "big"]],
              "s_large": [["big", "huge", "little"], ["huge", "thing", "cat"]]},
    "A_hyp_old": {"i_dog": [["pet"], ["pet"]]},
    "B_hyp": {"i_dog": [["animal", "pet", "dog"], ["tiny", "pet", "huge"]],
              "i_animal": [["thing", "tiny", "cat"], ["cat", "thing", "pet"]]},
    "B_syn": {"s_big": [["tiny", "small", "large"], ["large", "big", "tiny"]],
              "s_large": [["little", "big", "tiny"], ["Big", "big", "small"]]},
    "H_hyp": {"i_dog": [["animal", "beast", "pet"], ["mammal", "animal"]],
              "i_animal": [["creature", "thing"], ["creature"]]},
    "H_syn": {"s_big": [["large", "huge"], ["large", "large big"]],
              "s_large": [["big", "bigg"], ["great", "big"]]},
    "C_hyp": {"i_dog": [["dog"], ["dog"]]},
}
# (probe, instance, prompt) -> answers of each annotator, in order
HUMAN = {
    ("semrel/hyp", "i_dog", 0): [["animal", "pet"], ["animal"], ["beast"]],
    ("semrel/hyp", "i_dog", 1): [["animal"], ["mammal"]],
    ("semrel/hyp", "i_animal", 0): [["creature", "thing"], ["creature", "creature"]],
    ("semrel/syn", "s_big", 0): [["large"], ["large"], ["huge"]],
    ("semrel/syn", "s_big", 1): [["large big"], ["large"]],
    ("semrel/syn", "s_large", 0): [["big"], ["bigg"]],
}


def build(path: Path) -> None:
    con = connect(path)
    rel = {"semrel/hyp": "HYP", "semrel/syn": "SYN"}
    add = """INSERT INTO instances (probe, split, instance_id, target, gold, fields, exported_at)
             VALUES (?, ?, ?, ?, ?, ?::JSON, now())"""
    for probe, iid, target, gold in INSTANCES:
        con.execute(add, [probe, "test", iid, target, gold,
                          json.dumps({"relation": rel[probe], "word": target})])
    for n, (word, r, relata) in enumerate(RELATA):
        con.execute(add, ["semrel/relata", "test", f"r{n}", word, relata,
                          json.dumps({"relation": r, "word": word})])
    for n, (word, r, relatum) in enumerate(TUPLES):
        con.execute(add, ["semrel/tuples", "test", f"t{n}", word, [relatum],
                          json.dumps({"relation": r, "word": word, "relatum": relatum})])
    for rid, (model, backend, probe, status, day) in RUNS.items():
        con.execute("""INSERT INTO runs (run_id, model, backend, probe, task, status, finished_at)
                       VALUES (?, ?, ?, ?, 'relatum', ?, ?::TIMESTAMP)""",
                    [rid, model, backend, probe, status, f"2024-01-0{day}"])
    for rid, per_instance in LISTS.items():
        for iid, prompts in per_instance.items():
            for pid, words in enumerate(prompts):
                for rank, word in enumerate(words, start=1):
                    con.execute("INSERT INTO responses VALUES (?, ?, 'test', ?, ?, ?, ?, ?)",
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
