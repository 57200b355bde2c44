"""Helpers for building and inspecting array expressions, under the names
of the reference pytato's :mod:`pytato.utils`.

Shapes
------

.. autofunction:: are_shape_components_equal
.. autofunction:: are_shapes_equal
.. autofunction:: get_shape_after_broadcasting
.. autofunction:: dim_to_index_lambda_components
.. autofunction:: normalized_slice_does_not_change_axis
.. autoclass:: ShapeExpressionMapper
.. autoclass:: ShapeToISLExpressionMapper

Building index lambdas
----------------------

.. autofunction:: get_common_dtype_of_ary_or_scalars
.. autofunction:: get_indexing_expression
.. autofunction:: with_indices_for_broadcasted_shape
.. autofunction:: update_bindings_and_get_broadcasted_expr
.. autofunction:: broadcast_binary_op

Einsums
-------

.. autofunction:: get_einsum_subscript_str
.. autofunction:: get_einsum_specification

Miscellaneous
-------------

.. autofunction:: partition
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pymbolic.primitives as prim
from pytools import UniqueNameGenerator

from pytato.array.base import Array, ShapeComponent, ShapeType
from pytato.array.inputs import SizeParam
from pytato.array.lambdas import (
    Einsum,
    EinsumElementwiseAxis,
    EinsumReductionAxis,
    IndexLambda,
)
from pytato.array.remapping import NormalizedSlice
from pytato.array.shape import (
    are_shape_components_equal as _are_shape_components_equal,
    are_shapes_equal as _are_shapes_equal,
    broadcast_shapes,
    is_one,
    shape_component_to_expr,
)
from pytato.diagnostic import InvalidArgumentError, InvalidArgumentTypeError
from pytato.scalar_expr import (
    SCALAR_CLASSES,
    ScalarExpression,
    TypeCast,
    evaluate,
    get_dependencies,
    scalar_literal,
    substitute,
)


if TYPE_CHECKING:
    import islpy as isl
    from pytools.tag import Tag


__all__ = [
    "ShapeExpressionMapper",
    "ShapeToISLExpressionMapper",
    "are_shape_components_equal",
    "are_shapes_equal",
    "broadcast_binary_op",
    "dim_to_index_lambda_components",
    "get_common_dtype_of_ary_or_scalars",
    "get_einsum_specification",
    "get_einsum_subscript_str",
    "get_indexing_expression",
    "get_shape_after_broadcasting",
    "normalized_slice_does_not_change_axis",
    "partition",
    "update_bindings_and_get_broadcasted_expr",
    "with_indices_for_broadcasted_shape",
]

Tpart = TypeVar("Tpart")

ArrayOrScalar = Any  # Array | int | float | complex | np.generic


# {{{ shapes

def are_shape_components_equal(dim1: ShapeComponent,
                               dim2: ShapeComponent) -> bool:
    """Whether the shape components *dim1* and *dim2* (integers or size
    expressions) are provably equal."""
    return _are_shape_components_equal(dim1, dim2)


def are_shapes_equal(shape1: ShapeType, shape2: ShapeType) -> bool:
    """Whether the shapes *shape1* and *shape2* are provably equal."""
    return _are_shapes_equal(shape1, shape2)


def get_shape_after_broadcasting(exprs: Iterable[Array | Any]) -> ShapeType:
    """The shape that the arrays and scalars of *exprs* broadcast to (numpy's
    rules; scalars have shape ``()``).

    :raises pytato.diagnostic.CannotBroadcastError: if they do not
        broadcast.
    """
    return broadcast_shapes(*(e.shape for e in exprs if isinstance(e, Array)))


def dim_to_index_lambda_components(
        expr: ShapeComponent,
        vng: UniqueNameGenerator | None = None,
        ) -> tuple[ScalarExpression, dict[str, SizeParam]]:
    """The shape component *expr* as a scalar expression and the bindings it
    needs: ``(expression, {name: size_param})``.

    Integers give ``(expr, {})``. For a size expression, the variables of
    the expression name the :class:`~pytato.array.SizeParam`\\ s it
    depends on: their own names, or fresh names drawn from *vng* when it
    is given.
    """
    if not isinstance(expr, Array):
        return int(expr), {}
    scalar_expr = shape_component_to_expr(expr)
    params = _size_params_of(expr)
    if vng is None:
        return scalar_expr, params
    renamed = {name: vng("_in") for name in sorted(params)}
    return (substitute(scalar_expr, {old: prim.Variable(new)
                                     for old, new in renamed.items()}),
            {renamed[name]: p for name, p in params.items()})


def _size_params_of(expr: Array) -> dict[str, SizeParam]:
    result: dict[str, SizeParam] = {}
    stack: list[Array] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, SizeParam):
            result[node.name] = node
        elif isinstance(node, IndexLambda):
            stack.extend(node.bindings.values())
    return result


def normalized_slice_does_not_change_axis(
        slice_: NormalizedSlice, shape_to_compare_to: ShapeComponent) -> bool:
    """Whether indexing an axis of length *shape_to_compare_to* by the
    normalized slice *slice_* returns the axis unchanged (it selects every
    index, in order)."""
    return (slice_.step == 1
            and are_shape_components_equal(slice_.start, 0)
            and are_shape_components_equal(slice_.stop, shape_to_compare_to))


class ShapeExpressionMapper:
    """Maps shape components (integers and size expressions) to scalar
    expressions whose variables are fresh names drawn from *var_name_gen*.

    .. attribute:: bindings

        The fresh names mapped to the :class:`~pytato.array.SizeParam`\\ s
        they stand for (one name per size parameter, reused across calls).

    .. automethod:: __call__
    """

    def __init__(self, var_name_gen: UniqueNameGenerator) -> None:
        self.var_name_gen = var_name_gen
        self.bindings: dict[str, SizeParam] = {}
        self._name_of: dict[str, str] = {}

    def __call__(self, expr: ShapeComponent) -> ScalarExpression:
        """The scalar expression of the shape component *expr*."""
        if not isinstance(expr, Array):
            return int(expr)
        scalar_expr = shape_component_to_expr(expr)
        for name, param in sorted(_size_params_of(expr).items()):
            if name not in self._name_of:
                new_name = self.var_name_gen("_in")
                self._name_of[name] = new_name
                self.bindings[new_name] = param
        return substitute(scalar_expr, {
            old: prim.Variable(new) for old, new in self._name_of.items()
            if old in get_dependencies(scalar_expr)})


class ShapeToISLExpressionMapper:
    """Maps shape components to :class:`islpy.Aff`\\ s (or
    :class:`islpy.PwAff`\\ s) in the space *space*, whose parameters must
    include the names of the size parameters the shapes depend on.

    .. automethod:: __call__
    """

    def __init__(self, space: isl.Space) -> None:
        self.space = space

    def __call__(self, expr: ShapeComponent) -> isl.PwAff:
        """The affine function of the shape component *expr*."""
        # (loopy, imported at first use: see pytato.lazy_imports)
        from loopy.symbolic import pwaff_from_expr
        return pwaff_from_expr(self.space, shape_component_to_expr(expr), ())

# }}}


# {{{ building index lambdas

def get_common_dtype_of_ary_or_scalars(
        ary_or_scalars: Sequence[ArrayOrScalar]) -> np.dtype[np.generic]:
    """The dtype numpy gives to a binary operation on *ary_or_scalars*
    (arrays by their dtypes, Python scalars weakly, as in numpy 2)."""
    args = [x.dtype if isinstance(x, Array) else x for x in ary_or_scalars]
    return np.result_type(*args)


def get_indexing_expression(shape: ShapeType,
                            result_shape: ShapeType) -> tuple[ScalarExpression,
                                                               ...]:
    """The indices into an array of *shape* broadcast to *result_shape*,
    in terms of the result's indices ``_0, _1, ...``: axes of length 1
    broadcast against a longer axis are indexed by 0."""
    offset = len(result_shape) - len(shape)
    if offset < 0:
        raise InvalidArgumentError(f"shape {shape} has more axes than the result "
                                   f"shape {result_shape}")
    return tuple(
        0 if is_one(n) and not is_one(result_shape[i + offset])
        else prim.Variable(f"_{i + offset}")
        for i, n in enumerate(shape))


def with_indices_for_broadcasted_shape(val: prim.Variable, shape: ShapeType,
                                       result_shape: ShapeType
                                       ) -> ScalarExpression:
    """*val* (the variable bound to an array of *shape*) subscripted to read
    it broadcast to *result_shape*; *val* itself for 0-d arrays."""
    if not shape:
        return val
    return prim.Subscript(val, get_indexing_expression(shape, result_shape))


def update_bindings_and_get_broadcasted_expr(
        arr: ArrayOrScalar, bnd_name: str, bindings: dict[str, Array],
        result_shape: ShapeType) -> ScalarExpression:
    """The expression reading *arr* broadcast to *result_shape*: a scalar is
    returned as is; an array is bound as *bnd_name* in *bindings* (which is
    updated) and read through
    :func:`with_indices_for_broadcasted_shape`."""
    if isinstance(arr, SCALAR_CLASSES):
        return arr
    if not isinstance(arr, Array):
        raise InvalidArgumentTypeError(
            f"'arr' must be an array or a scalar, got {arr!r}")
    bindings[bnd_name] = arr
    return with_indices_for_broadcasted_shape(prim.Variable(bnd_name),
                                              arr.shape, result_shape)


def broadcast_binary_op(
        a1: ArrayOrScalar, a2: ArrayOrScalar,
        op: Callable[[ScalarExpression, ScalarExpression], ScalarExpression],
        get_result_type: Callable[[ArrayOrScalar, ArrayOrScalar],
                                  np.dtype[np.generic]],
        *, tags: frozenset[Tag], non_equality_tags: frozenset[Tag],
        cast_to_result_dtype: bool, is_pow: bool = False,
        ) -> ArrayOrScalar:
    """The element-wise binary operation *op* (building the scalar
    expression from the operands' expressions) on *a1* and *a2*, broadcast
    against each other, as an :class:`~pytato.array.IndexLambda` of dtype
    ``get_result_type(a1, a2)``.

    :arg cast_to_result_dtype: cast the operands to the result dtype first.
    :arg is_pow: *op* is a power: an integer exponent is not cast.
    :arg tags: the tags of the result.
    :arg non_equality_tags: its non-equality tags.

    Two scalar operands give a scalar of the result dtype.
    """
    result_dtype = np.dtype(get_result_type(a1, a2))

    def cast(x: ScalarExpression, dtype: np.dtype[np.generic], is_exponent: bool
             ) -> ScalarExpression:
        if not cast_to_result_dtype or dtype == result_dtype:
            return x
        if is_exponent and is_pow and dtype.kind in "iu":
            return x
        return TypeCast(result_dtype, x)

    if isinstance(a1, SCALAR_CLASSES) and isinstance(a2, SCALAR_CLASSES):
        e1 = scalar_literal(a1, result_dtype) if cast_to_result_dtype else a1
        e2 = a2 if (is_pow and np.result_type(a2).kind in "iu") \
            or not cast_to_result_dtype else scalar_literal(a2, result_dtype)
        return result_dtype.type(evaluate(op(e1, e2)))

    result_shape = get_shape_after_broadcasting([a1, a2])
    bindings: dict[str, Array] = {}
    exprs = []
    for i, a in enumerate((a1, a2)):
        if isinstance(a, Array):
            e = update_bindings_and_get_broadcasted_expr(
                a, f"_in{i}", bindings, result_shape)
            exprs.append(cast(e, a.dtype, i == 1))
        else:
            dtype = np.result_type(a)
            exprs.append(cast(a, dtype, i == 1) if isinstance(a, SCALAR_CLASSES)
                         else a)
    return IndexLambda(expr=op(exprs[0], exprs[1]), shape=result_shape,
                       dtype=result_dtype, bindings=bindings,
                       var_to_reduction_descr={},
                       tags=tags, non_equality_tags=non_equality_tags)

# }}}


# {{{ einsums

def get_einsum_subscript_str(expr: Einsum) -> str:
    """The subscript string of *expr* (e.g. ``"ij,j->i"``), with letters
    chosen afresh: ``i, j, ...`` for the output's axes in order, then the
    reduction axes."""
    n_out = expr.ndim
    n_redn = len({d for descrs in expr.access_descriptors for d in descrs
                  if isinstance(d, EinsumReductionAxis)})
    letters = "ijklmnopqrstuvwxyzabcdefghIJKLMNOPQRSTUVWXYZABCDEFGH"
    if n_out + n_redn > len(letters):
        raise InvalidArgumentError(f"einsum with {n_out + n_redn} indices has too many "
                                   "axes to be written as a subscript string")

    def letter(d: object) -> str:
        if isinstance(d, EinsumElementwiseAxis):
            return letters[d.dim]
        assert isinstance(d, EinsumReductionAxis)
        return letters[n_out + d.dim]

    inputs = ",".join("".join(letter(d) for d in descrs)
                      for descrs in expr.access_descriptors)
    return f"{inputs}->{letters[:n_out]}"


def get_einsum_specification(expr: Einsum) -> str:
    """The specification of *expr*: its subscript string (as
    :func:`get_einsum_subscript_str`) followed by the dtypes of the
    operands, e.g. ``"ij,j->i|float64,float64"``; einsums with equal
    specifications compute the same kind of contraction."""
    dtypes = ",".join(str(arg.dtype) for arg in expr.args)
    return f"{get_einsum_subscript_str(expr)}|{dtypes}"

# }}}


def partition(pred: Callable[[Tpart], bool],
              iterable: Iterable[Tpart]) -> tuple[list[Tpart], list[Tpart]]:
    """Splits *iterable* by *pred*: returns ``(false_entries,
    true_entries)``, each in the original order."""
    t1, t2 = itertools.tee(iterable)
    return (list(itertools.filterfalse(pred, t1)), list(filter(pred, t2)))

# vim: foldmethod=marker
