"""Phases of code generation: timed and logged, with fewer garbage
collections.

.. autoclass:: PhaseTimer
.. autoclass:: FewerCollections
.. autodata:: GC_GENERATION0_THRESHOLD
.. autofunction:: no_automatic_collections_at_exit
"""

from __future__ import annotations

import atexit
import gc
import time
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    import logging


__all__ = [
    "GC_GENERATION0_THRESHOLD", "FewerCollections", "PhaseTimer",
    "no_automatic_collections_at_exit",
]


class PhaseTimer:
    """A context manager logging, at INFO level on *logger*, how long a
    code generation phase took, e.g. ``lowering took 0.12 s (1234
    nodes)``."""

    def __init__(self, logger: logging.Logger, phase: str, detail: str = ""
                 ) -> None:
        self.logger = logger
        self.phase = phase
        self.detail = detail
        self.elapsed = 0.0

    def __enter__(self) -> PhaseTimer:
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.elapsed = time.perf_counter() - self._start
        if exc[0] is None:
            self.logger.info("%s took %.3g s%s", self.phase, self.elapsed,
                             f" ({self.detail})" if self.detail else "")


GC_GENERATION0_THRESHOLD = 50_000
"""The threshold of the youngest generation of Python's garbage collector
while code is generated (see :class:`FewerCollections`)."""


class FewerCollections:
    """A context manager under which Python's garbage collector runs less
    often: the collection threshold of its youngest generation is raised to
    :data:`GC_GENERATION0_THRESHOLD` (if lower), that of the middle
    generation to at least 20; the previous thresholds are restored on
    exit.

    Code generation allocates millions of small objects that live until
    the phase ends; with the default threshold (700 allocations) the
    collector runs again and again during a phase, each time walking
    objects that are all still alive, which makes it a large share of
    code generation. A higher threshold leaves the peak memory about
    where it was, whereas switching the collector off altogether lets it
    grow (the figures: ``benchmarks/README.md``, "Code generation").
    Nested uses are fine.
    """

    def __enter__(self) -> FewerCollections:
        self._saved = gc.get_threshold()
        t0, t1, t2 = self._saved
        gc.set_threshold(max(t0, GC_GENERATION0_THRESHOLD), max(t1, 20), t2)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.set_threshold(*self._saved)


def no_automatic_collections_at_exit() -> None:
    """Switch Python's automatic garbage collections off (:func:`gc.disable`);
    run at the process's exit (an :mod:`atexit` handler registered when
    this module is imported, so that it runs after the handlers registered
    later, the user's among them).

    The interpreter's shutdown still collects all generations once, with
    the collector on or off (so objects in reference cycles are freed and
    their finalizers run as before); what is left out are the collections
    that the allocations during shutdown trigger, each a walk over every
    object still alive, which in a process holding large programs is a
    noticeable part of its exit (the figures: ``benchmarks/README.md``,
    "Code generation")."""
    gc.disable()


atexit.register(no_automatic_collections_at_exit)
