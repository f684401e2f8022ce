"""Which of a probe's named graphs (``graphs:`` in its header) the store holds: a probe that
reads a source the store lacks is refused before its query runs (:func:`check_graphs`), and an
export of every probe leaves out those of optional sources not built
(:func:`skip_unbuilt_optional`)."""

from __future__ import annotations

from kg.manifest import load_manifest
from kg.store import KnowledgeStore
from kg.vocab import graph
from probes.engine.errors import ProbeFileError
from probes.engine.spec import Probe


def skip_unbuilt_optional(probes: list[Probe], store: KnowledgeStore
                          ) -> tuple[list[Probe], list[tuple[str, list[str]]]]:
    """The probes to export when none were named: all but those that read an optional source
    (kg/sources.toml ``optional = true``, e.g. bear-big) which the store does not hold; those
    are returned apart as (probe name, missing optional sources).

    >>> from kg.store import LocalStore
    >>> from probes.engine.spec import parse_probe
    >>> head = ["# name: t/x", "# task: records", "# split: test", "# graphs: [bear-big]"]
    >>> probe = parse_probe("\\n".join([*head, "SELECT ?a WHERE { }"]), "x.rq")
    >>> skip_unbuilt_optional([probe], LocalStore.in_memory())
    ([], [('t/x', ['bear-big'])])
    """
    optional = {s.name for s in load_manifest().values() if s.optional}
    have = set(store.graphs())
    keep, skipped = [], []
    for probe in probes:
        missing = [g for g in probe.spec.graphs if g in optional and graph(g).value not in have]
        if missing:
            skipped.append((probe.spec.name, missing))
        else:
            keep.append(probe)
    return keep, skipped


def check_graphs(probes: list[Probe], store: KnowledgeStore) -> None:
    """Raise ProbeFileError for the first probe whose ``graphs:`` names a source not in store.

    >>> from kg.store import LocalStore
    >>> from probes.engine.spec import parse_probe
    >>> head = ["# name: t/x", "# task: records", "# split: test", "# graphs: [wordnet]"]
    >>> probe = parse_probe("\\n".join([*head, "SELECT ?a WHERE { }"]), "x.rq")
    >>> check_graphs([probe], LocalStore.in_memory())
    Traceback (most recent call last):
    ...
    probes.engine.errors.ProbeFileError: x.rq:4: probe 't/x' reads source(s) wordnet which ...
    """
    have = set(store.graphs())
    for probe in probes:
        missing = [g for g in probe.spec.graphs if graph(g).value not in have]
        if missing:
            raise ProbeFileError(
                probe.path, probe.header_lines.get("graphs"),
                f"probe {probe.spec.name!r} reads source(s) {', '.join(missing)} which are not "
                f"in the store; build them with `python -m kg.build "
                f"{' '.join('-s ' + m for m in missing)}`. Nothing was exported.")
