"""``python -m probes.benchmarks.ontolama``: the ``kgprobe ontolama`` branch of the command tree
(:mod:`probes.app.ontolama`: its ``stats`` adds a metric of ``eval``; ``report`` is
:mod:`eval.ontolama_report`), so it lives in the application layer."""

import sys

if __name__ == "__main__":
    from probes.app.cli import main

    raise SystemExit(main(["ontolama", *sys.argv[1:]], prog="python -m probes.benchmarks.ontolama"))
