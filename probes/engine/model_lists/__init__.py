"""The papers' model lists: ``probes/engine/model_lists/<benchmark>.toml``, one per benchmark.

Each file is versioned with the code (``format = 1``) and holds the models its paper evaluated,
in the paper's order, as ``[[model]]`` tables: ``label`` (the paper's name for it: B1, R2, O8 in
Cao et al.; BERT_BASE in COPEN), ``hub`` (its Hugging Face hub name; empty when the paper's
model is not on the hub), ``kind`` (masked | causal | seq2seq), and optional ``name``,
``params``, ``role``, ``download``. ``--models paper:<benchmark>`` runs the whole list, one
``probes.engine.run`` per model; ``--models FILE.toml`` runs a list of your own.

Before any model work every entry is checked: a hub model must be reachable (the hub answers) or
already in the local Hugging Face cache, an entry without a hub name needs a local folder
(``--model-dir LABEL=PATH``). Offline, the list therefore fails at once, naming every model it
lacks. Runs are resumable across models: a model whose runs of the chosen probes are all done
(with the same splits and limit, after the probes' last export) is skipped, and within a model
the score cache resumes where a killed run stopped.

>>> [m.label for m in load_list("paper:semrel").models][:3]
['B1', 'B2', 'A1']
>>> load_list("paper:copen").models[2].hub
'bert-base-uncased'
"""

from __future__ import annotations

import json
import sys
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kg.options import error_line
from probes.backends.protocol import FAMILIES as KINDS
from probes.engine.errors import ProbeError

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class ListedModel:
    """One model of a paper's list."""

    label: str
    hub: str
    kind: str
    name: str = ""
    params: str = ""
    role: str = ""
    download: str = ""


@dataclass(frozen=True)
class ModelList:
    """A paper's model list as declared in its TOML file."""

    path: Path
    paper: str
    table: str
    models: list[ListedModel] = field(default_factory=list)


def available() -> list[str]:
    """The shipped lists, as ``paper:<name>``."""
    return sorted(f"paper:{p.stem}" for p in HERE.glob("*.toml"))


def load_list(ref: str) -> ModelList:
    """``paper:<benchmark>`` (a shipped list) or the path of a TOML file in the same format."""
    if ref.startswith("paper:"):
        path = HERE / f"{ref.removeprefix('paper:')}.toml"
        if not path.is_file():
            raise ProbeError(f"no model list {ref!r}; the papers' lists are "
                             f"{', '.join(available())} (or give a .toml file)")
    else:
        path = Path(ref).expanduser()
        if not path.is_file():
            raise ProbeError(f"--models {ref!r}: no such file; use one of "
                             f"{', '.join(available())} or a .toml model list")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ProbeError(f"{path}: cannot read the model list ({e})") from e
    if data.get("format") != 1:
        raise ProbeError(f"{path}: unknown model list format {data.get('format')!r} (want 1)")
    models = []
    for n, entry in enumerate(data.get("model", []), start=1):
        unknown = set(entry) - set(ListedModel.__dataclass_fields__)
        if unknown or not entry.get("label") or "hub" not in entry:
            raise ProbeError(f"{path}: model #{n} needs label and hub (unknown keys: "
                             f"{', '.join(sorted(unknown)) or 'none'})")
        if entry.get("kind") not in KINDS:
            raise ProbeError(f"{path}: model {entry['label']!r} has kind "
                             f"{entry.get('kind')!r}; use one of {', '.join(KINDS)}")
        models.append(ListedModel(**{k: str(v) for k, v in entry.items()}))
    labels = [m.label for m in models]
    if not models or len(set(labels)) != len(labels):
        raise ProbeError(f"{path}: a model list needs at least one model and unique labels")
    return ModelList(path, str(data.get("paper", "")), str(data.get("table", "")), models)


def parse_model_dirs(values: Sequence[str] | None) -> dict[str, str]:
    """``["B1=/models/bert"]`` -> ``{"B1": "/models/bert"}``."""
    out: dict[str, str] = {}
    for value in values or ():
        label, sep, path = value.partition("=")
        if not sep or not label.strip() or not path.strip():
            raise ProbeError(f"--model-dir {value!r}: write LABEL=FOLDER, e.g. B1=/models/bert")
        out[label.strip()] = path.strip()
    return out


def in_hf_cache(name: str) -> bool:
    """Whether the local Hugging Face cache holds the hub model's config."""
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(name, "config.json"), str)
    except Exception:
        return False


def locate(models: ModelList, dirs: dict[str, str],
           reachable: Callable[[], bool]) -> list[tuple[ListedModel, str]]:
    """(entry, the name or folder to load) for every model, or one error naming all that
    cannot be had here."""
    unknown = sorted(set(dirs) - {m.label for m in models.models})
    if unknown:
        raise ProbeError(f"--model-dir names {', '.join(unknown)}, which {models.path.name} "
                         f"does not list; its labels: {', '.join(m.label for m in models.models)}")
    out, missing = [], []
    hub_ok: bool | None = None
    for m in models.models:
        if m.label in dirs:
            if not Path(dirs[m.label]).expanduser().is_dir():
                missing.append(f"{m.label}: folder {dirs[m.label]} does not exist")
            out.append((m, dirs[m.label]))
            continue
        if not m.hub:
            missing.append(f"{m.label}: not on the hub ({m.download or 'see the list file'}); "
                           f"pass --model-dir {m.label}=FOLDER")
            continue
        if hub_ok is None:
            hub_ok = reachable()
        if not hub_ok and not in_hf_cache(m.hub):
            missing.append(f"{m.label}: {m.hub}")
        out.append((m, m.hub))
    if missing:
        why = ("the Hugging Face hub is not reachable from here (offline, or HF_HUB_OFFLINE=1) "
               "and these are not in the local HF cache" if hub_ok is False
               else "these cannot be loaded")
        raise ProbeError(f"{models.path.name} ({models.paper}, {models.table}): {why}: "
                         + "; ".join(missing) + ". Nothing was run. Run with hub access, fill "
                         "the HF cache (hf download NAME), or map a label to a local folder "
                         "with --model-dir LABEL=FOLDER")
    return out


def done_already(results: str | None, model: str, probes: Sequence[str],
                 splits: list[str] | None, limit: int | None) -> bool:
    """True when ``model`` has a finished run of every probe with these splits and limit, newer
    than the probe's last export (so running it again would only read the cache)."""
    from kg import config
    from probes.results import connect

    path = Path(results or config.results_path())
    if not path.exists() or not probes:
        return False
    con = connect(path, read_only=True)
    try:
        for probe in probes:
            rows = con.execute("""SELECT r.config->>'$.splits', r.config->>'$.limit' FROM runs r
                WHERE r.model = ? AND r.probe = ? AND r.status = 'done' AND r.finished_at >=
                (SELECT max(exported_at) FROM instances WHERE probe = ?)""",
                [model, probe, probe]).fetchall()
            want = (json.dumps(sorted(splits)) if splits else None,
                    str(limit) if limit is not None else None)
            got = {(json.dumps(json.loads(s)) if s not in (None, "null") else None,
                    lim if lim not in (None, "null") else None) for s, lim in rows}
            if want not in got:
                return False
        return True
    finally:
        con.close()


def run_list(args: Any, argv: Sequence[str], main: Callable[..., int], factory: Any) -> int:
    """Run ``main`` once per listed model (``--models`` replaced by ``--model``)."""
    from probes.engine.models import hub_reachable
    from probes.engine.spec import discover

    models = load_list(args.models)
    entries = locate(models, parse_model_dirs(args.model_dir), hub_reachable)
    base = _without(argv, ("--models", "--model-dir"))
    probes = [p.spec.name for p in discover(args.queries, args.probe,
                                           include_default=not args.only_extra)
              if p.spec.task != "records"]
    print(f"{models.path.name}: {len(entries)} models ({models.paper}, {models.table})",
          file=sys.stderr)
    for n, (entry, name) in enumerate(entries, start=1):
        head = f"[{n}/{len(entries)}] {entry.label} ({name})"
        if not args.no_cache and done_already(args.results and str(args.results), name,
                                              probes, args.split, args.limit):
            print(f"{head}: done already, skipped", file=sys.stderr)
            continue
        print(f"{head}", file=sys.stderr)
        code = main([*base, "--model", name], factory)
        if code != 0:
            error_line(f"{entry.label} ({name}) failed (exit {code}); the models before it are "
                       "saved: run the same command again to resume from it")
            return code
    return 0


def _without(argv: Sequence[str], options: tuple[str, ...]) -> list[str]:
    """``argv`` without the given options and their values (``--opt V`` or ``--opt=V``).

    >>> _without(["--models", "paper:x", "-p", "a", "--model-dir=B1=/m"], ("--models",
    ...          "--model-dir"))
    ['-p', 'a']
    """
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in options:
            skip = True
            continue
        if any(arg.startswith(o + "=") for o in options):
            continue
        out.append(arg)
    return out
