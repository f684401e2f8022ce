"""``python -m probes.finetune``: COPEN fine-tuning, which lives in :mod:`probes.copen.finetune`
(this module keeps the documented command working)."""

from probes.copen.finetune import main

if __name__ == "__main__":
    raise SystemExit(main())
