"""A rough estimate of the work and memory traffic of a computation.

The model, per output array:

* **flops**: every distinct node the output depends on is computed once (as
  if all intermediates were stored). An :class:`~pytato.array.IndexLambda`
  costs its element count times the operations of its scalar expression
  (one per binary arithmetic, comparison, logical or bitwise operation and
  per function call; a reduction costs its extent times its body plus one
  combining operation; index arithmetic is free). An
  :class:`~pytato.array.Einsum` costs, per output element and reduction
  term, one multiplication per extra operand plus one addition when there
  are reduction axes. Index remapping nodes (reshapes, transposes, indexing,
  stacks, ...) and inputs cost nothing.
* **bytes_read**: every input array (placeholder or data wrapper) the output
  depends on is read once, and every intermediate tagged
  :class:`~pytato.tags.ImplStored` is read once.
* **bytes_written**: the output is written once, and every intermediate
  tagged :class:`~pytato.tags.ImplStored` is written once.

This is the compulsory work and traffic, a lower bound for what generated
code does. When shapes hold size parameters, quantities are :mod:`pymbolic`
expressions in the size parameter names unless *size_params* gives their
values, in which case they are integers.

.. autoclass:: CostEstimate
.. autofunction:: estimate_cost
.. autofunction:: get_flop_count
.. autofunction:: get_bytes_estimate
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias, TypeGuard

import numpy as np
import pymbolic.primitives as prim
from pymbolic.mapper import Mapper as _PMapper

from pytato.analysis._outputs import output_arrays, output_roots
from pytato.array.base import Array, ShapeType, topological_order
from pytato.array.inputs import DataWrapper, Placeholder
from pytato.array.lambdas import Einsum, IndexLambda
from pytato.array.shape import shape_component_to_expr
from pytato.diagnostic import NonAffineShapeError
from pytato.scalar_expr import (
    Reduce,
    ScalarExpression,
    TypeCast,
    evaluate,
    substitute,
)
from pytato.tags import ImplStored


if TYPE_CHECKING:
    from pymbolic.typing import ArithmeticExpression

    from pytato.analysis._outputs import Outputs


Cost: TypeAlias = "ArithmeticExpression"
"""A count: an integer, or an expression in the size parameters."""


__all__ = ["CostEstimate", "estimate_cost", "get_bytes_estimate",
           "get_flop_count"]


@dataclass(frozen=True)
class CostEstimate:
    """The estimated cost of computing one output (see the module
    documentation for the model).

    .. attribute:: flops
    .. attribute:: bytes_read
    .. attribute:: bytes_written
    .. autoattribute:: bytes_moved
    """

    flops: Cost
    bytes_read: Cost
    bytes_written: Cost

    @property
    def bytes_moved(self) -> Cost:
        """Bytes read plus bytes written."""
        return _sum([self.bytes_read, self.bytes_written])


# {{{ symbolic arithmetic helpers

def _is_int(x: object) -> TypeGuard[int | np.integer]:
    return isinstance(x, (int, np.integer))


def _sum(terms: list[Cost]) -> Cost:
    const = sum(t for t in terms if _is_int(t))
    sym = [t for t in terms if not _is_int(t)]
    if not sym:
        return const
    if const:
        sym.append(const)
    return prim.flattened_sum(sym)


def _prod(factors: list[Cost]) -> Cost:
    const: Cost = 1
    sym = []
    for f in factors:
        if _is_int(f):
            const *= f
        else:
            sym.append(f)
    if const == 0 or not sym:
        return const
    if const != 1:
        sym.insert(0, const)
    return prim.flattened_product(sym)


def _nelements(shape: ShapeType) -> Cost:
    return _prod([shape_component_to_expr(c) for c in shape])

# }}}


class _ScalarFlopCounter(_PMapper[Cost, []]):
    """Operations of one evaluation of a scalar expression."""

    def __init__(self, size_of_name: Mapping[str, Cost]) -> None:
        self.size_of_name = size_of_name

    def map_foreign(self, expr: object, *args: object) -> Cost:
        return 0

    map_constant = map_foreign
    map_variable = map_foreign
    map_subscript = map_foreign  # index arithmetic is free

    def _nary(self, expr: prim.Sum | prim.Product | prim.LogicalAnd
              | prim.LogicalOr | prim.BitwiseAnd | prim.BitwiseOr
              | prim.BitwiseXor | prim.Min | prim.Max) -> Cost:
        return _sum([len(expr.children) - 1,
                     *(self.rec(c) for c in expr.children)])

    map_sum = _nary
    map_product = _nary
    map_logical_and = _nary
    map_logical_or = _nary
    map_bitwise_and = _nary
    map_bitwise_or = _nary
    map_bitwise_xor = _nary

    def _binary(self, a: ScalarExpression, b: ScalarExpression) -> Cost:
        return _sum([1, self.rec(a), self.rec(b)])

    def map_quotient(self, expr: prim.Quotient | prim.FloorDiv
                     | prim.Remainder) -> Cost:
        return self._binary(expr.numerator, expr.denominator)

    map_floor_div = map_quotient
    map_remainder = map_quotient

    def map_power(self, expr: prim.Power) -> Cost:
        return self._binary(expr.base, expr.exponent)

    def map_left_shift(self, expr: prim.LeftShift | prim.RightShift) -> Cost:
        return self._binary(expr.shiftee, expr.shift)

    map_right_shift = map_left_shift

    def map_comparison(self, expr: prim.Comparison) -> Cost:
        return self._binary(expr.left, expr.right)

    def map_logical_not(self, expr: prim.LogicalNot | prim.BitwiseNot) -> Cost:
        return _sum([1, self.rec(expr.child)])

    map_bitwise_not = map_logical_not

    def map_call(self, expr: prim.Call) -> Cost:
        return _sum([1, *(self.rec(p) for p in expr.parameters)])

    def map_if(self, expr: prim.If) -> Cost:
        then, else_ = self.rec(expr.then), self.rec(expr.else_)
        if _is_int(then) and _is_int(else_):
            branch: Cost = max(then, else_)
        else:
            branch = prim.Max((then, else_))
        return _sum([self.rec(expr.condition), branch])

    def map_min(self, expr: prim.Min | prim.Max) -> Cost:
        return self._nary(expr)

    map_max = map_min

    def map_type_cast(self, expr: TypeCast) -> Cost:
        return self.rec(expr.inner_expr)

    def map_reduce(self, expr: Reduce) -> Cost:
        extent = _prod([
            substitute(hi - lo, self.size_of_name)  # type: ignore[operator]
            if not (_is_int(hi) and _is_int(lo))
            else hi - lo  # type: ignore[misc]
            for lo, hi in expr.bounds.values()])
        return _prod([extent, _sum([1, self.rec(expr.inner_expr)])])


def _size_of_bindings(expr: IndexLambda) -> dict[str, Cost]:
    result = {}
    for name, b in expr.bindings.items():
        if b.shape == () and b.dtype.kind in "iu":
            try:
                result[name] = shape_component_to_expr(b)
            except NonAffineShapeError:
                pass
    return result


def _node_flops(node: Array) -> Cost:
    if isinstance(node, IndexLambda):
        per_elem = _ScalarFlopCounter(_size_of_bindings(node))(node.expr)
        return _prod([_nelements(node.shape), per_elem])
    if isinstance(node, Einsum):
        redn = _prod([shape_component_to_expr(node.reduction_axis_length(ax))
                      for ax in node.reduction_axes])
        per_term = len(node.args) - 1 + (1 if node.reduction_axes else 0)
        return _prod([_nelements(node.shape), redn, per_term])
    return 0


def _nbytes(node: Array) -> Cost:
    return _prod([_nelements(node.shape), node.dtype.itemsize])


def _is_stored(node: Array) -> bool:
    return any(isinstance(t, ImplStored) for t in node.tags)


def _finish(value: Cost, size_params: Mapping[str, int] | None) -> Cost:
    if size_params is None or _is_int(value):
        return value
    return int(evaluate(value, size_params))


def estimate_cost(outputs: Outputs, size_params: Mapping[str, int] | None = None
                  ) -> dict[str, CostEstimate]:
    """Estimate flops and memory traffic of each output of *outputs* (an
    array, a :class:`~pytato.DictOfNamedArrays` or a mapping of names to
    arrays; a single array is reported under the name ``"_pt_out"``).

    :arg size_params: values of size parameters; when given, all results
        are integers.
    :returns: a mapping from output name to :class:`CostEstimate`.

    Each output's graph is traversed separately (node costs are computed
    once), so the work is linear in the graph size per output.
    """
    result = {}
    flops_cache: dict[int, Cost] = {}
    for name, out in output_arrays(outputs).items():
        flops = []
        read = []
        written = [_nbytes(out)]
        for n in topological_order([out]):
            if not isinstance(n, Array):
                continue
            f = flops_cache.get(id(n))
            if f is None:
                f = flops_cache[id(n)] = _node_flops(n)
            flops.append(f)
            if isinstance(n, (Placeholder, DataWrapper)):
                read.append(_nbytes(n))
            elif n is not out and _is_stored(n):
                read.append(_nbytes(n))
                written.append(_nbytes(n))
        result[name] = CostEstimate(
            flops=_finish(_sum(flops), size_params),
            bytes_read=_finish(_sum(read), size_params),
            bytes_written=_finish(_sum(written), size_params))
    return result


def get_flop_count(outputs: Outputs,
                   size_params: Mapping[str, int] | None = None) -> Cost:
    """The flops of computing all of *outputs* together, each distinct node
    once (see :func:`estimate_cost` for the model)."""
    return _finish(_sum([
        _node_flops(n) for n in topological_order(output_roots(outputs))
        if isinstance(n, Array)]), size_params)


def get_bytes_estimate(outputs: Outputs,
                       size_params: Mapping[str, int] | None = None) -> Cost:
    """The compulsory memory traffic in bytes of computing all of *outputs*
    together: inputs read once, outputs written once, stored intermediates
    written and read once."""
    roots = output_roots(outputs)
    outs = {id(a) for a in output_arrays(outputs).values()}
    terms = []
    for n in topological_order(roots):
        if not isinstance(n, Array):
            continue
        if isinstance(n, (Placeholder, DataWrapper)):
            terms.append(_nbytes(n))
        if id(n) in outs:
            terms.append(_nbytes(n))
        elif _is_stored(n) and not isinstance(n, (Placeholder, DataWrapper)):
            terms.append(_prod([2, _nbytes(n)]))
    return _finish(_sum(terms), size_params)
