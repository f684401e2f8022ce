"""Generation runner for kgprobe: ``load_scorer(folder).generate(prompts, settings)``, greedy,
the stop strings and ``max_new_tokens`` of the workload, ``batch_size`` rows per batch; with
the workload's ``compare_plain`` each batch size again without prefix sharing
(``prefix_mode=None``), written as ``plain_runs``."""

from __future__ import annotations

import sys
from pathlib import Path

import generate_common as common

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main() -> int:
    args = common.parse_args(__doc__.splitlines()[0])
    common.set_threads(args.threads)
    from probes.backends.generation import GenerateSettings
    from probes.backends.registry import load_scorer

    def load() -> object:
        return load_scorer(str(args.model), device="cpu", dtype="float32")

    def generate(scorer: object, prompts: list[str], max_new: int, stop: list[str],
                 size: int) -> list[str]:
        scorer.set_batch_size(size)  # type: ignore[attr-defined]
        got = scorer.generate(prompts, GenerateSettings(  # type: ignore[attr-defined]
            max_new_tokens=max_new, stop=tuple(stop)))
        return [g.text for g in got]

    def plain(scorer: object, prompts: list[str], max_new: int, stop: list[str],
              size: int) -> list[str]:
        mode = scorer.prefix_mode  # type: ignore[attr-defined]
        scorer.prefix_mode = None  # type: ignore[attr-defined]
        try:
            return generate(scorer, prompts, max_new, stop, size)
        finally:
            scorer.prefix_mode = mode  # type: ignore[attr-defined]

    return common.run("kgprobe", args, common.version_of("torch", "transformers"), load,
                      generate, plain)


if __name__ == "__main__":
    sys.exit(main())
