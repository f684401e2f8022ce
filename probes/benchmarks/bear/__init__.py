"""BEAR (Wiland, Ploner and Akbik 2024) beyond export, run and report: ``kgprobe bear``
(``python -m probes.benchmarks.bear``): ``stats`` (the sizes of the BEAR graphs in the store) and
``subset`` (a probe file for chosen relations and instances). The probes themselves are the
files of ``queries/bear/``; the metrics those of ``eval/bear/`` (``kgprobe bear report``)."""

PROBES = ("bear/bear", "bear/bear-conditional", "bear/bear-big", "bear/bear-big-conditional",
          "bear/bear-sample")
