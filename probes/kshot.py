"""``python -m probes.kshot``: OntoLAMA's K-shot prompt-based fine-tuning, which lives in
:mod:`probes.ontolama.kshot` (this module keeps the documented command working)."""

from probes.ontolama.kshot import main

if __name__ == "__main__":
    raise SystemExit(main())
