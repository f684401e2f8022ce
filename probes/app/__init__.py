"""The application layer: the modules that use both the engine (``probes``) and the metrics
(``eval``). ``probes.app.cli`` is the ``kgprobe`` console script, ``probes.app.api`` the
notebook API, ``probes.app.outputs`` the ``--output-path`` files, ``probes.app.run`` the run
command and ``probes.app.ontolama`` the OntoLAMA commands (``stats`` adds the shortcut
ceiling). Nothing outside this package imports it, except the ``if __name__ == "__main__":``
block of a ``python -m`` entry (docs/architecture.md).

Others may import: nothing (it is the top of the import graph); ``tests/`` and ``scripts/``
use its commands and the notebook API (:mod:`probes.app.api`)."""
