"""The declared model list of the semrel probes (``queries/semrel/shared_vocab.yaml``) and the
``model_vocab`` rows of its models, from their tokenizers alone."""

from __future__ import annotations

from pathlib import Path

import duckdb

from probes.engine.errors import ProbeError
from probes.results import transaction
from probes.results.shared import write_model_vocab

SHARED_VOCAB = Path(__file__).resolve().parents[3] / "queries" / "semrel" / "shared_vocab.yaml"


def shared_vocab_models(path: Path = SHARED_VOCAB) -> tuple[str, list[str]]:
    """The declared model list: (``name vN``, models); a ProbeError names a bad file."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        models = [str(m) for m in data["models"]]
        label = f"{data['name']} v{data['version']}"
    except (OSError, yaml.YAMLError, KeyError, TypeError) as e:
        raise ProbeError(f"{path}: cannot read the declared model list ({e}); it needs name, "
                         "version and models: [...]") from e
    if not models:
        raise ProbeError(f"{path}: models is empty")
    return label, models


def write_vocab(con: duckdb.DuckDBPyConnection, models: list[str]) -> dict[str, int]:
    """model_vocab rows (vocab 'lowercase') of each model from its tokenizer alone."""
    from probes.engine.models import load_tokenizer, resolve
    from probes.engine.wordvocab import WholeWordVocab

    sizes = {}
    for model in models:
        words = WholeWordVocab.from_tokenizer(load_tokenizer(resolve(model)),
                                              lowercase=True).words
        with transaction(con):
            write_model_vocab(con, model, "lowercase", list(words), replace=True)
        sizes[model] = len(words)
    return sizes
