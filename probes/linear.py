"""``python -m probes.linear``: COPEN linear probing, which lives in :mod:`probes.copen.linear`
(this module keeps the documented command working)."""

from probes.copen.linear import main

if __name__ == "__main__":
    raise SystemExit(main())
