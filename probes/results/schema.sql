-- kgprobe results file (DuckDB). One file holds every run, so comparing models is one query.
-- Created by probes.results.connect(); every statement is idempotent. An older file gains the
-- columns and tables it lacks on its next writable connect (probes.results.upgrade).
-- The contract (tables, columns, grain) is described in docs/results.md.

-- One row per probe instance, written by `python -m probes.engine.export`.
CREATE TABLE IF NOT EXISTS instances (
    probe        VARCHAR NOT NULL,   -- probe name from the file header
    split        VARCHAR NOT NULL,   -- train / dev / test / ...
    instance_id  VARCHAR NOT NULL,   -- stable hash of the instance's id variables
    target       VARCHAR,            -- value of the header's `target` variable
    gold         VARCHAR[],          -- values of the header's `gold` variable(s)
    candidates   VARCHAR[],          -- values of the header's `candidates` variable
    fields       JSON,               -- every selected variable (lists when grouped)
    exported_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (probe, split, instance_id)
);

-- Where each instance came from (probes.engine.provenance), written by `python -m probes.engine.export` with
-- the instances: the SPARQL bindings of its fields (per variable and value: IRI or literal, the
-- IRI's label, the named graphs holding it) and the triples, with their named graph, that link
-- its values. A file from before this table gains it (empty) on its next connect; export again
-- to fill it. The HTML report shows it beside each prediction.
CREATE TABLE IF NOT EXISTS instance_provenance (
    probe        VARCHAR NOT NULL,
    split        VARCHAR NOT NULL,
    instance_id  VARCHAR NOT NULL,
    bindings     JSON,               -- [{var, value, iri, label, graphs}]
    triples      JSON,               -- [[subject, predicate, object, graph]]
    PRIMARY KEY (probe, split, instance_id)
);

-- Inflected forms that count as a gold answer of an instance (relatum probes with params
-- inflections: WordNet's morphy, kg.morphology): "fingers" for gold "finger". Written by
-- `python -m probes.engine.export` with the instances; no rows: responses must match a gold exactly.
CREATE TABLE IF NOT EXISTS gold_forms (
    probe        VARCHAR NOT NULL,
    split        VARCHAR NOT NULL,
    instance_id  VARCHAR NOT NULL,
    form         VARCHAR NOT NULL,   -- the inflected form ("fingers", "feet")
    gold         VARCHAR NOT NULL,   -- the gold answer it is a form of ("finger", "foot")
    PRIMARY KEY (probe, split, instance_id, form, gold)
);

-- One row per (model, probe) run of `python -m probes.engine.run`.
CREATE TABLE IF NOT EXISTS runs (
    run_id       VARCHAR PRIMARY KEY,
    model        VARCHAR NOT NULL,   -- name as given (hub id, local path or alias); 'human' for people
    revision     VARCHAR,            -- commit or weights checksum
    backend      VARCHAR,            -- the name its backend is registered under (a label:
                                     -- masked | causal | seq2seq | a user's own | human)
    probe        VARCHAR NOT NULL,
    config       JSON,               -- scoring options, templates, label words, ...
    dtype        VARCHAR,
    device       VARCHAR,
    batch_size   INTEGER,
    started_at   TIMESTAMP,
    finished_at  TIMESTAMP,
    wall_s       DOUBLE,             -- seconds the latest invocation took (a re-run answered
                                     -- from the cache: its own seconds)
    status       VARCHAR NOT NULL,   -- running | done | failed
    task         VARCHAR,            -- the probe's task (choice, binary, relatum, ...)
    requests     INTEGER,            -- distinct scoring requests of the run
    cache_hits   INTEGER,            -- how many of them the latest invocation found cached
    -- Settings that metrics select or group runs by (NULL where they do not apply):
    method       VARCHAR,            -- zero-shot | linear | finetune (COPEN) | kshot (OntoLAMA);
                                     -- NULL for probes.engine.run and human runs
    part         VARCHAR,            -- COPEN: the scored text part (query, concept, all, ...)
    context      BOOLEAN,            -- COPEN CiC zero-shot: with the context sentence
    k            INTEGER,            -- K-shot: examples per class (-1: fully supervised)
    seed         INTEGER,            -- K-shot / COPEN training: the seed
    scoring      VARCHAR,            -- K-shot: class scoring trained with (sum_prob, ...)
    family       VARCHAR             -- the model family it was scored as: masked | causal |
                                     -- seq2seq (from the scorer's declared capabilities,
                                     -- never its backend's name) | human
);
-- started_at / finished_at / wall_s / cache_hits describe the latest invocation of a run
-- (finished_at = started_at + wall_s); docs/results.md, "Times of a run".

-- What a run's prompt_id stands for, where it is more than an index into the probe's prompts
-- (subsumption: one prompt_id per template x label-word set). One row per (run, prompt_id).
CREATE TABLE IF NOT EXISTS prompts (
    run_id       VARCHAR NOT NULL,
    prompt_id    INTEGER NOT NULL,
    template     VARCHAR,            -- T1, T2, ... (position in the probe's prompts, from 1)
    text         VARCHAR,            -- the template as the probe file writes it
    label_set    VARCHAR,            -- the label-word set's name (L1, L2, ...)
    label_words  JSON,               -- that set: {class: [words]}
    PRIMARY KEY (run_id, prompt_id)
);

-- One row per scored (instance, prompt, candidate).
CREATE TABLE IF NOT EXISTS scores (
    run_id       VARCHAR NOT NULL,
    probe        VARCHAR NOT NULL,
    split        VARCHAR NOT NULL,
    instance_id  VARCHAR NOT NULL,
    prompt_id    INTEGER NOT NULL,   -- index into the probe's prompts (0 when there is one)
    candidate    VARCHAR NOT NULL,   -- the candidate / label word / filled answer
    prompt       VARCHAR,            -- the rendered text that was scored
    score        DOUBLE,             -- log-probability (or pseudo-log-likelihood)
    n_tokens     INTEGER,
    label        VARCHAR,            -- the answer the candidate stands for (the class of a
                                     -- binary label word; the candidate itself for choice)
    n_chars      INTEGER,            -- characters of the scored text, leading space left out
                                     -- (acc_norm); NULL in rows written before it was recorded
    baseline     DOUBLE,             -- log-probability of the same scored text after the
                                     -- probe's neutral context (params pmi_context); NULL
                                     -- when not scored
    PRIMARY KEY (run_id, probe, split, instance_id, prompt_id, candidate)
);

-- Ranked responses at a slot (relatum prediction), top-k per (instance, prompt).
CREATE TABLE IF NOT EXISTS responses (
    run_id       VARCHAR NOT NULL,
    probe        VARCHAR NOT NULL,
    split        VARCHAR NOT NULL,
    instance_id  VARCHAR NOT NULL,
    prompt_id    INTEGER NOT NULL,
    rank         INTEGER NOT NULL,   -- 1 = most probable
    token        VARCHAR NOT NULL,
    probability  DOUBLE,
    prompt       VARCHAR,            -- the rendered text whose slot was ranked ("a | an"
                                     -- renderings joined by ' | ' when mixed; NULL: humans)
    PRIMARY KEY (run_id, probe, split, instance_id, prompt_id, rank)
);

-- Generated answers (task generate, probes.engine.tasks.generate): one row per (instance,
-- prompt) with the text the model generated and every form that counts as right. A file from
-- before this table gains it (empty) on its next connect.
CREATE TABLE IF NOT EXISTS generations (
    run_id       VARCHAR NOT NULL,
    probe        VARCHAR NOT NULL,
    split        VARCHAR NOT NULL,
    instance_id  VARCHAR NOT NULL,
    prompt_id    INTEGER NOT NULL,   -- index into the probe's prompts
    prompt       VARCHAR,            -- the rendered prompt (before any chat template)
    generation   VARCHAR NOT NULL,   -- the answer, cut before the first stop string
    n_tokens     INTEGER,            -- tokens generated (the end-of-sequence token counted)
    finish       VARCHAR,            -- stop | eos | length: why the answer ended
    answers      VARCHAR[],          -- the accepted forms: the gold values, then the aliases
    PRIMARY KEY (run_id, probe, split, instance_id, prompt_id)
);

-- Raw human answers (Cao et al.), one row per answer word of one annotator.
CREATE TABLE IF NOT EXISTS human_responses (
    probe        VARCHAR NOT NULL,
    instance_id  VARCHAR NOT NULL,
    prompt_id    INTEGER NOT NULL,
    annotator    INTEGER NOT NULL,
    position     INTEGER NOT NULL,
    response     VARCHAR NOT NULL,
    PRIMARY KEY (probe, instance_id, prompt_id, annotator, position)
);

-- Score cache: key = hash(model, revision, prompt, scoring options). Makes re-runs free.
CREATE TABLE IF NOT EXISTS score_cache (
    key          VARCHAR PRIMARY KEY,
    score        DOUBLE,
    n_tokens     INTEGER,
    payload      JSON,               -- top-k lists and other non-scalar results
    model        VARCHAR,            -- which model and operation wrote the entry
    op           VARCHAR
);

-- Whole-word vocabulary of a model (written by probes.engine.run for relatum runs), so metrics can
-- limit relatum sets and ranked lists to the words that every compared model can produce.
-- vocab: lowercase | words (probes.engine.wordvocab).
CREATE TABLE IF NOT EXISTS model_vocab (
    model        VARCHAR NOT NULL,
    vocab        VARCHAR NOT NULL,
    word         VARCHAR NOT NULL,
    PRIMARY KEY (model, vocab, word)
);

-- One row per exported probe: the hash of what shaped its instances (the query and the header
-- fields other than prompts, probes.engine.spec.Probe.instances_hash), so probes.engine.run can tell that the
-- probe file was edited since the export. Written in the export's transaction.
CREATE TABLE IF NOT EXISTS probe_exports (
    probe        VARCHAR PRIMARY KEY,
    query_hash   VARCHAR NOT NULL,
    exported_at  TIMESTAMP NOT NULL
);

-- Hidden states (probes.engine.hidden_cache): one row per shard file of one extraction. The key
-- hashes (model, revision, scoring options, layers, positions, store dtype); the file (a .npy
-- beside the results file, in <results>.hidden/<key>/) holds [layers, positions, n_rows, dim].
CREATE TABLE IF NOT EXISTS hidden_shards (
    key          VARCHAR NOT NULL,
    shard        INTEGER NOT NULL,   -- 0, 1, ... in the order written
    path         VARCHAR NOT NULL,   -- relative to the hidden-state folder
    n_rows       INTEGER NOT NULL,
    layers       INTEGER[] NOT NULL, -- 0 = embeddings, i = block i
    positions    VARCHAR[] NOT NULL, -- slot | last | mean | first | cls
    dim          INTEGER NOT NULL,
    dtype        VARCHAR NOT NULL,   -- float16 (float32 when a value would overflow float16)
    model        VARCHAR,
    written_at   TIMESTAMP,
    PRIMARY KEY (key, shard)
);

-- Which row of which shard holds a text's states: item = hash of the text and its slot span.
-- A resumed extraction skips the items already here (written in the shard's transaction).
CREATE TABLE IF NOT EXISTS hidden_items (
    key          VARCHAR NOT NULL,
    item         VARCHAR NOT NULL,
    shard        INTEGER NOT NULL,
    row          INTEGER NOT NULL,
    PRIMARY KEY (key, item)
);

-- Linear probes per layer (probes.engine.probing, `kgprobe layers`): one row per (run, layer,
-- position, task), task = probe (the instances' gold) or control (Hewitt and Liang 2019: a
-- seeded random function of the item). c: the inverse L2 strength chosen on dev.
CREATE TABLE IF NOT EXISTS layer_probes (
    run_id         VARCHAR NOT NULL,
    probe          VARCHAR NOT NULL,
    layer          INTEGER NOT NULL,
    position       VARCHAR NOT NULL,
    control        BOOLEAN NOT NULL,
    c              DOUBLE,
    dev_accuracy   DOUBLE,
    train_accuracy DOUBLE,
    n_train        INTEGER,
    n_dev          INTEGER,
    PRIMARY KEY (run_id, layer, position, control)
);

-- The test predictions of each layer probe, one row per test instance: eval/layers reads them
-- for accuracy with intervals over instances.
CREATE TABLE IF NOT EXISTS layer_predictions (
    run_id       VARCHAR NOT NULL,
    probe        VARCHAR NOT NULL,
    split        VARCHAR NOT NULL,
    instance_id  VARCHAR NOT NULL,
    layer        INTEGER NOT NULL,
    position     VARCHAR NOT NULL,
    control      BOOLEAN NOT NULL,
    gold         VARCHAR NOT NULL,   -- the instance's label (control: its control label)
    predicted    VARCHAR NOT NULL,
    PRIMARY KEY (run_id, instance_id, layer, position, control)
);
