"""Helpers shared by front-end modules that build
:class:`~pytato.array.IndexLambda`\\ s by hand.

.. autoclass:: BindingCollector
.. autofunction:: bind_array
.. autofunction:: cast_scalar
.. autofunction:: is_scalar
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pymbolic.primitives as prim

from pytato.array.base import Array, ShapeComponent, same_input_objects
from pytato.scalar_expr import SCALAR_CLASSES, is_integral_scalar


def is_scalar(x: object) -> bool:
    """Whether *x* is a Python or numpy scalar (booleans included)."""
    return isinstance(x, SCALAR_CLASSES)


def cast_scalar(value: Any, dtype: np.dtype[np.generic], *, wrap: bool = False) -> Any:
    """*value* converted to a scalar of *dtype* the way numpy fills arrays
    (unsafe casting, so ``2.7 -> 2`` for integers). Python integers out of
    the range of *dtype* raise :class:`OverflowError`, as in
    :func:`numpy.full`, unless *wrap* is set: then they wrap around, as in
    :func:`numpy.where`."""
    if wrap:
        value = np.asarray(value)
    result = np.empty((), dtype)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        np.copyto(result, value, casting="unsafe")
    return result[()]


def bind_array(ary: Array, bindings: dict[str, Array],
               names: dict[Array, str], names_by_id: dict[int, str]) -> str:
    """The name ``_in<k>`` of *ary* in *bindings* (added if new): one name
    per distinct array, equal arrays sharing one unless they read distinct
    inputs of one name (see :meth:`BindingCollector.bind`). *names* and
    *names_by_id* are the lookup tables of *bindings* (empty for empty
    *bindings*)."""
    name = names.get(ary)
    if name is not None:
        bound = bindings[name]
        if bound is ary or same_input_objects(bound, ary):
            return name
        name = names_by_id.get(id(ary))
        if name is not None:
            return name
        name = f"_in{len(bindings)}"
        names_by_id[id(ary)] = name
    else:
        name = f"_in{len(bindings)}"
        names[ary] = name
    bindings[name] = ary
    return name


class BindingCollector:
    """Collects the bindings of an :class:`~pytato.array.IndexLambda` being
    built, giving each distinct array one name ``_in<k>``.

    .. attribute:: bindings

        The name-to-array mapping collected so far.

    .. automethod:: bind
    .. automethod:: shape_expr
    """

    def __init__(self) -> None:
        self.bindings: dict[str, Array] = {}
        self._names: dict[Array, str] = {}
        # (arrays equal to a bound one, bound separately: see bind)
        self._names_by_id: dict[int, str] = {}

    def bind(self, ary: Array) -> str:
        """The binding name of *ary*, adding it if it is new. An array equal
        to a bound one shares its binding, unless their graphs read
        distinct inputs (equal, of one name): it is then bound on its own,
        so that the graph keeps both and code generation reports the
        clash (:class:`~pytato.diagnostic.NameClashError`)."""
        return bind_array(ary, self.bindings, self._names, self._names_by_id)

    def shape_expr(self, c: ShapeComponent) -> int | prim.Variable:
        """A scalar expression for the shape component *c*: an integer, or
        the (bare) variable bound to the 0-d size array."""
        if is_integral_scalar(c):
            return int(c)
        assert isinstance(c, Array)
        return prim.Variable(self.bind(c))
