"""What every OntoLAMA module shares: the paper's Table 2, split names, the seeded hash, the
probe files and their ``builder_params.ontolama`` settings."""

from __future__ import annotations

import dataclasses
import hashlib
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

from probes.engine.errors import ProbeFileError
from probes.engine.spec import Probe, discover


class PaperRow(NamedTuple):
    """One row of OntoLAMA's Table 2 (full ontologies, 2022 releases)."""

    title: str
    concepts: int
    equivalences: int | None
    atomic: tuple[int, int, int] | None
    complex: tuple[int, int, int] | None


#: OntoLAMA's Table 2 (He et al. 2023; also the dataset card of krr-oxford/OntoLAMA):
#: named concepts, equivalence axioms, train/dev/test sizes. FoodOn and GO are the full
#: ontologies there; the staged FoodOn and GO files here are subsets.
PAPER: dict[str, PaperRow] = {
    "schemaorg": PaperRow("Schema.org", 894, None, (808, 404, 2830), None),
    "doid": PaperRow("DOID", 11157, None, (90500, 11312, 11314), None),
    "foodon": PaperRow("FoodOn", 30995, 2383, (768486, 96060, 96062), (3754, 1850, 13080)),
    "go": PaperRow("GO", 43303, 11456, (772870, 96608, 96610), (72318, 9040, 9040)),
}
SPLITS = ("train", "dev", "test")
DEFAULT_SEED = 42


def seeded_hash(*parts: object) -> int:
    """A seeded, platform-independent hash of ``parts`` (md5, 64 bits)."""
    raw = "\x1f".join(str(p) for p in parts).encode("utf-8")
    return int(hashlib.md5(raw).hexdigest()[:16], 16)


def ontolama_probes(patterns: list[str] | None = None,
                    extra_dirs: list[Path] | None = None) -> list[Probe]:
    """The probe files with ``builder_params.ontolama`` (default: every one under ``queries/``)."""
    probes = discover(extra_dirs, patterns or ["ontolama/*"])
    return [p for p in probes if "ontolama" in p.spec.builder_params]


def _settings(probe: Probe) -> dict[str, Any]:
    cfg = probe.spec.builder_params.get("ontolama")
    if not isinstance(cfg, dict) or cfg.get("kind") not in ("atomic", "complex") \
            or not cfg.get("ontology"):
        raise ProbeFileError(probe.path, probe.header_lines.get("builder_params"),
                             "builder_params.ontolama must be a mapping with ontology: <source> "
                             "and kind: atomic or complex")
    return cfg


def split_proportions(probe: Probe) -> tuple[Fraction, Fraction, Fraction]:
    """``builder_params.ontolama.splits`` as exact fractions (train, dev, test) summing to 1.

    The paper's divisions are 8:1:1, and 2:1:7 for Schema.org's Atomic SI and FoodOn's
    Complex SI (L129)."""
    cfg = _settings(probe)
    raw = cfg.get("splits", {"train": 0.8, "dev": 0.1, "test": 0.1})
    try:
        parts = tuple(Fraction(str(raw[s])) for s in SPLITS)
    except (KeyError, TypeError, ValueError) as e:
        raise ProbeFileError(probe.path, probe.header_lines.get("builder_params"),
                             "builder_params.ontolama.splits must give train, dev and test as "
                             "numbers, e.g. {train: 0.8, dev: 0.1, test: 0.1}") from e
    if sum(parts) != 1 or min(parts) < 0:
        raise ProbeFileError(probe.path, probe.header_lines.get("builder_params"),
                             f"builder_params.ontolama.splits must be non-negative and sum to 1 "
                             f"(got {raw})")
    return parts  # type: ignore[return-value]


#: The control each kind of dataset takes (``builder_params.ontolama.control``): the field kept
#: disjoint between the splits (docs/shortcuts.md, "Shortcut-controlled splits").
CONTROLS = {"atomic": "super_class", "complex": "complex_concept"}


def control(probe: Probe, expected: str | None = None) -> str | None:
    """``builder_params.ontolama.control`` (None: the paper's random split); an error names the
    header line when the value is not the control of the probe's kind (``expected``)."""
    cfg = _settings(probe)
    value = cfg.get("control")
    if value is None:
        return None
    allowed = CONTROLS[cfg["kind"]]
    if value != allowed or (expected is not None and value != expected):
        raise ProbeFileError(probe.path, probe.header_lines.get("builder_params"),
                             f"builder_params.ontolama.control {value!r} is not a control of "
                             f"{cfg['kind']} datasets; use control: {allowed} (or leave it out "
                             "for the paper's random split)")
    return str(value)


def controlled(probe: Probe) -> Probe:
    """The probe's shortcut-controlled variant, ``<name>-controlled``, with the control of its
    kind set (``python -m probes.benchmarks.ontolama build --control``)."""
    cfg = _settings(probe)
    params = {**probe.spec.builder_params,
              "ontolama": {**cfg, "control": CONTROLS[cfg["kind"]]}}
    spec = probe.spec.model_copy(update={"name": f"{probe.spec.name}-controlled",
                                         "builder_params": params})
    return dataclasses.replace(probe, spec=spec)


def with_controlled(probes: list[Probe]) -> list[Probe]:
    """Each probe followed by its ``-controlled`` variant (``build --control``), unless it is
    controlled itself or a probe file of that name is among ``probes`` (e.g.
    ``queries/ontolama/schemaorg-atomic-controlled.rq``): each name is built once."""
    names = {p.spec.name for p in probes}
    return [v for p in probes
            for v in ([p] if control(p) or f"{p.spec.name}-controlled" in names
                      else [p, controlled(p)])]
