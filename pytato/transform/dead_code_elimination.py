"""Upstream's module name for dead-code elimination (see
:mod:`pytato.transform.dead_code`).

.. autoclass:: DeadCodeEliminator
    :noindex:
.. autofunction:: eliminate_dead_code
    :noindex:
"""

from __future__ import annotations

from pytato.transform.dead_code import DeadCodeEliminator, eliminate_dead_code


__all__ = ["DeadCodeEliminator", "eliminate_dead_code"]
