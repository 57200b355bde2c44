"""The checked mode of runtime indices: ``generate_loopy(...,
check_indices=True)``.

By default, entries of index arrays known only at run time that are out of
range are clamped (see :ref:`numerical-semantics`): generated code never
reads outside an array, and costs nothing more. In the checked mode the
program also computes, for each such index array, whether any of its
entries is out of range (outside ``[-n, n)`` for an axis of length ``n``),
as an extra 0-d boolean output; after the call it reads these flags and
raises :class:`~pytato.diagnostic.IndexOutOfBoundsError` naming the index
array (its placeholder name, or the shape of a computed one). The results
are still computed with clamped indices, so nothing is read out of bounds
before the check.

The cost is one reduction over each index array (fused into the kernels of
the program where the scheduler can) and, at each call, the wait for the
program to finish and the transfer of one byte per index array to the host:
a checked call is synchronous. Constant index arrays (numpy data) are
checked when the graph is built and are not checked again. Index arrays
inside traced functions (:func:`pytato.trace_call`) are checked once the
calls are inlined; those in the bodies of non-inlined calls are not.

.. autofunction:: index_checks
.. autoclass:: IndexCheckedProgram
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pytato.array.base import Array, topological_order
from pytato.array.inputs import DataWrapper, Placeholder
from pytato.array.remapping import (
    AdvancedIndexInContiguousAxes,
    AdvancedIndexInNoncontiguousAxes,
)
from pytato.array.results import DictOfNamedArrays
from pytato.diagnostic import IndexOutOfBoundsError
from pytato.frontend.elementwise import greater_equal, less, logical_or
from pytato.frontend.reductions import any as pt_any
from pytato.scalar_expr import is_integral_scalar


__all__ = ["IndexCheckedProgram", "index_checks"]

FLAG_PREFIX = "_pt_index_check_"


def _describe(ary: Array) -> str:
    if isinstance(ary, Placeholder):
        return f"index array '{ary.name}'"
    return f"a computed index array of shape {ary.shape} and dtype {ary.dtype}"


def index_checks(outputs: DictOfNamedArrays) -> dict[str, tuple[Array, str]]:
    """For each index array of *outputs* known only at run time (not a
    data wrapper), a 0-d boolean array that is true when one of its entries
    is out of range, with a description of the index array, by the name of
    the output that will hold it."""
    flags: dict[str, tuple[Array, str]] = {}
    seen: set[tuple[Array, object]] = set()
    for node in topological_order([outputs]):
        if not isinstance(node, (AdvancedIndexInContiguousAxes,
                                 AdvancedIndexInNoncontiguousAxes)):
            continue
        for axis, (ind, n) in enumerate(zip(node.indices, node.array.shape,
                                            strict=True)):
            if not isinstance(ind, Array) or isinstance(ind, DataWrapper):
                continue
            if (ind, n) in seen:
                continue
            seen.add((ind, n))
            length = int(n) if is_integral_scalar(n) else n
            too_large = greater_equal(ind, length)
            bad = too_large if ind.dtype.kind == "u" else logical_or(
                too_large, less(ind, -length))
            flag = pt_any(bad)
            desc = (f"{_describe(ind)} (indexing axis {axis} of an array of "
                    f"shape {node.array.shape})")
            flags[f"{FLAG_PREFIX}{len(flags)}"] = (flag, desc)
    return flags


class IndexCheckedProgram:
    """A program of :func:`~pytato.generate_loopy` in the checked mode (see
    the module documentation): called like the program it wraps, whose
    other attributes it forwards.

    .. attribute:: program

        The wrapped program, whose outputs include the flags.

    .. attribute:: flags

        The description of the index array checked by each flag output.
    """

    def __init__(self, program: Any, flags: Mapping[str, str],
                 single_output: str | None) -> None:
        self.program = program
        self.flags = dict(flags)
        self._single_output = single_output

    def __getattr__(self, name: str) -> object:
        program = self.__dict__.get("program")
        if program is None:
            # (while unpickling: pickle looks for __setstate__ first)
            raise AttributeError(name)
        return getattr(program, name)

    def __call__(self, queue: object, *args: object, **kwargs: object) -> object:
        """Run the program, check the flags (waiting for the program to
        finish) and return ``(event, result)`` as the wrapped program does
        without the flags.

        :raises pytato.diagnostic.IndexOutOfBoundsError: naming the index
            arrays with an entry out of range.
        """
        evt, result = self.program(queue, *args, **kwargs)
        result = dict(result)
        bad = []
        for name, desc in self.flags.items():
            flag = result.pop(name)
            if hasattr(flag, "get"):
                flag = flag.get(queue=queue)
            if bool(np.asarray(flag)):
                bad.append(desc)
        if bad:
            raise IndexOutOfBoundsError(
                "entries out of bounds (outside [-n, n) for an axis of length "
                "n) in " + "; ".join(bad))
        if self._single_output is not None:
            return evt, (result[self._single_output],)
        return evt, result
