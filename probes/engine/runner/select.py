"""Choosing the probes of a run: the probe files matching the patterns, exported and current."""

from __future__ import annotations

from pathlib import Path

import duckdb

from probes.engine.errors import ProbeError, ProbeFileError
from probes.engine.spec import Probe, discover


def select_probes(con: duckdb.DuckDBPyConnection, patterns: list[str], queries: list[Path],
                  include_default: bool, results: str,
                  skipped: list[ProbeFileError] | None = None) -> list[Probe]:
    """The probe files matching ``patterns`` (their headers hold the prompts and params).

    Every matching probe must have instances in the results file. Probes of task ``records``
    (data, nothing to score) and ``probing`` (``kgprobe layers`` runs them) are left out when
    a glob pattern matched them; a probing probe named exactly is an error saying so. A matched file
    that cannot be read stops the run (probes.engine.spec.UnreadableProbesError), unless ``skipped``
    is given (``--skip-bad-files``): then its error is appended there.
    """
    probes = discover(queries, patterns, include_default=include_default, problems=skipped)
    probes = [p for p in probes if p.spec.task != "records" or p.spec.name in patterns]
    named = [p for p in probes if p.spec.task == "probing" and p.spec.name in patterns]
    if named:
        from probes.engine.tasks.probing import not_scored

        raise not_scored(named[0].spec.name)
    probes = [p for p in probes if p.spec.task != "probing"]
    if not probes:
        raise ProbeError(f"{' '.join(patterns)} matches only 'records' probes: they hold data, "
                         "not prompts, so there is nothing to score")
    return check_exported(con, probes, results)


def check_exported(con: duckdb.DuckDBPyConnection, probes: list[Probe], results: str
                   ) -> list[Probe]:
    """``probes`` (already loaded: no probe file is read) if every one has instances in the
    results file, exported from the probe file as it is now; else a ProbeError with the fix."""
    exported = {r[0]: r[1] for r in con.execute(
        """SELECT DISTINCT i.probe, e.query_hash FROM instances i
           LEFT JOIN probe_exports e USING (probe)""").fetchall()}
    missing = [p.spec.name for p in probes if p.spec.name not in exported]
    if missing:
        raise ProbeError(f"no instances of {', '.join(missing)} in {results} (not exported, or "
                         f"the query returned no rows): run `python -m probes.engine.export "
                         f"{' '.join('-p ' + m for m in missing)}` first and check that it "
                         "reports rows")
    refuse_changed(probes, exported, results)
    return probes


def refuse_changed(probes: list[Probe], exported: dict[str, str | None], results: str) -> None:
    """Stop when a probe file changed since its export (``exported``: probe name -> the
    ``probe_exports.query_hash`` of its instances; None or absent: nothing to compare)."""
    changed = [p for p in probes if exported.get(p.spec.name) is not None
               and exported[p.spec.name] != p.instances_hash]
    if changed:
        raise ProbeError(f"{', '.join(str(p.path) for p in changed)} changed since its instances "
                         f"were exported to {results}, so a run would score the old instances; "
                         f"re-export first: python -m probes.engine.export "
                         f"{' '.join('-p ' + p.spec.name for p in changed)}. Nothing was run.")
