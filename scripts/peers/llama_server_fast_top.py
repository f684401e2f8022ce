"""llama-cpp-python's server with its top-log-probability sort done by numpy, for
``scripts/bench_server.py --fast-top``. Usage: the arguments of ``python -m llama_cpp.server``.

llama-cpp-python 0.3.36 answers a request with ``logprobs`` by sorting the whole vocabulary in
Python for every returned token (``Llama._create_completion``:
``sorted(zip(row, range(len(row))), reverse=True)`` and then the first ``logprobs`` items);
for SmolLM2's 49,152 tokens that is most of the server's time, the same for every client.
Here that expression becomes the ``logprobs`` largest (value, index) pairs from
``numpy.argpartition``, sorted the same way, so the answers are the same (token
log-probabilities bit for bit; a top list can differ only among tokens tied at its last place)
and the benchmark measures the clients rather than that sort. The rest of the server is
unchanged.
"""

from __future__ import annotations

import inspect
import re
import sys
import textwrap
from typing import Any


def top_pairs(row: Any, k: int | None) -> list[tuple[float, int]]:
    """The ``k`` largest (value, index) pairs of ``row``, largest first, as ``sorted(zip(row,
    range(len(row))), reverse=True)[:k]`` gives them.

    >>> import numpy as np
    >>> row = np.random.default_rng(0).normal(size=5000).astype(np.float32)
    >>> row[[7, 70, 700]] = 9.0  # a tie at the top: the larger index comes first
    >>> top_pairs(row, 10) == sorted(zip(row, range(len(row))), reverse=True)[:10]
    True
    >>> [i for _, i in top_pairs(row, 3)]
    [700, 70, 7]
    """
    import numpy as np

    n = len(row)
    k = n if not k or k >= n else int(k)
    idx = np.argpartition(-np.asarray(row), k - 1)[:k] if k < n else np.arange(n)
    return sorted(((row[i], int(i)) for i in idx), reverse=True)


def patch() -> None:
    import llama_cpp.llama as module

    source = textwrap.dedent(inspect.getsource(module.Llama._create_completion))
    pattern = re.compile(r"sorted\(\s*zip\(logprobs_token, range\(len\(logprobs_token\)\)\),"
                         r"\s*reverse=True,?\s*\)")
    if len(pattern.findall(source)) != 1:
        raise SystemExit("llama_cpp.Llama._create_completion is not the 0.3.36 code this patch "
                         "expects; run the benchmark without --fast-top")
    source = pattern.sub("_kgp_top_pairs(logprobs_token, logprobs)", source)
    namespace = dict(vars(module), _kgp_top_pairs=top_pairs)
    exec(compile(source, module.__file__ or "llama.py", "exec"), namespace)
    module.Llama._create_completion = namespace["_create_completion"]  # type: ignore[method-assign]


if __name__ == "__main__":
    patch()
    from llama_cpp.server.__main__ import main

    sys.argv[0] = "llama_cpp.server"
    main()
