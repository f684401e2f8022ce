"""``python -m probes.ontolama``: the command is :func:`probes.app.ontolama.main` (its
``stats`` adds a metric of ``eval``, so it lives in the application layer)."""

if __name__ == "__main__":
    from probes.app.ontolama import main

    raise SystemExit(main())
