"""ParaRel (Elazar et al. 2021) beyond export, run and report: ``kgprobe pararel``
(``python -m probes.benchmarks.pararel``): ``stats`` (relations, facts, patterns, edges and the
statements a run scores, from the store) and ``subset`` (a probe file for chosen relations and
their first N facts). The probes are the files of ``queries/pararel/``, the metrics those of
``eval/pararel/`` (``kgprobe pararel report``), the source ``kg/pararel.py``; its record is
``benchmark.toml`` beside this file (docs/pararel.md)."""

PROBES = ("pararel/pararel", "pararel/pararel-masked", "pararel/pararel-sample")
