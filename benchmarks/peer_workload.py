"""One workload of the peers benchmark (``bench_peers.py``): the same
computation written once against an array namespace, so that pytato, numpy,
jax.jit and torch run exactly the same thing.

A workload's :attr:`Workload.build` takes the namespace ``xp`` (``numpy``,
``jax.numpy``, ``torch`` or ``pytato``) and a dict of the inputs (as arrays of
that namespace: placeholders for pytato) and returns a dict of named outputs.
Where a namespace spells an operation differently (``torch.sum(x, dim=...)``),
the build function branches on ``xp.__name__``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Workload:
    """A benchmark workload.

    :attr name: the row's name in the table.
    :attr inputs: ``inputs(rng, gpu)`` returns the named host inputs; ``gpu``
        asks for the sizes of a GPU run (bigger).
    :attr build: ``build(xp, arrays)`` returns the named outputs.
    :attr min_bytes: the fewest bytes a run must move (inputs read once,
        outputs written once), for the percentage of copy bandwidth.
    :attr rtol: the tolerance of the check against numpy.
    """

    name: str
    inputs: Callable[[np.random.Generator, bool], dict[str, np.ndarray]]
    build: Callable[[Any, dict[str, Any]], dict[str, Any]]
    rtol: float = 1e-10

    def min_bytes(self, inputs: dict[str, np.ndarray],
                  outputs: dict[str, np.ndarray]) -> int:
        return (sum(a.nbytes for a in inputs.values())
                + sum(np.asarray(o).nbytes for o in outputs.values()))
