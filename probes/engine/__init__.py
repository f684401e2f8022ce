"""The engine: what every probe goes through, whatever its benchmark or model.

Probe files and their header schema (:mod:`~probes.engine.spec`), rendering
(:mod:`~probes.engine.render`), the export of instances (:mod:`~probes.engine.export`,
:mod:`~probes.engine.preview`), the task kinds (:mod:`probes.engine.tasks`), runs
(:mod:`~probes.engine.run`, :mod:`probes.engine.runner`), the score cache
(:mod:`~probes.engine.cache`), model names, files and options (:mod:`~probes.engine.models`,
:mod:`~probes.engine.model_args`, :mod:`~probes.engine.options`), the training loop
(:mod:`probes.engine.train`) and the papers' model lists (:mod:`probes.engine.model_lists`).

Others may import: :mod:`probes.backends`, :mod:`probes.benchmarks` and :mod:`probes.app`
import its modules by name (this ``__init__`` re-exports nothing, so that importing a light
module such as :mod:`~probes.engine.errors` loads no torch). The engine imports
:mod:`probes.backends`, :mod:`probes.results` and ``kg``; never :mod:`probes.app` or ``eval``.
"""
