"""Element-wise operations with numpy's broadcasting and dtype rules.

Every element-wise operation builds one :class:`~pytato.array.IndexLambda`
through :func:`elementwise`. Result dtypes (and dtype errors) are numpy 2's:
they are found by applying the numpy ufunc to empty stand-ins of the
operands (Python scalars stay weakly typed). Operands whose dtype differs
from the operation's dtype are cast explicitly, so generated code computes
in exactly the precision numpy would. Calls on scalars only compute eagerly.

Arithmetic (also the operators ``+``, ``-``, ``*``, ``/``, ``//``, ``%``,
``**`` and unary ``-`` of arrays):

.. autofunction:: add
.. autofunction:: subtract
.. autofunction:: multiply
.. autofunction:: true_divide
.. autofunction:: divide
.. autofunction:: floor_divide
.. autofunction:: remainder
.. autofunction:: power
.. autofunction:: negative
.. autofunction:: maximum
.. autofunction:: minimum

Bitwise operations (``&``, ``|``, ``^``, ``<<``, ``>>``, ``~``):

.. autofunction:: bitwise_and
.. autofunction:: bitwise_or
.. autofunction:: bitwise_xor
.. autofunction:: left_shift
.. autofunction:: right_shift
.. autofunction:: invert

Comparisons (also ``<``, ``<=``, ``>`` and ``>=``; ``==`` and ``!=`` of
arrays compare graphs structurally, so use :func:`equal` and
:func:`not_equal` for element-wise equality) and logic:

.. autofunction:: equal
.. autofunction:: not_equal
.. autofunction:: less
.. autofunction:: less_equal
.. autofunction:: greater
.. autofunction:: greater_equal
.. autofunction:: logical_and
.. autofunction:: logical_or
.. autofunction:: logical_xor
.. autofunction:: logical_not

Building blocks for other element-wise operations:

.. autofunction:: elementwise
.. autofunction:: is_operand
.. autofunction:: index_expr_for
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
import pymbolic.primitives as prim
from pymbolic.typing import ArithmeticExpression

from pytato.array.base import (
    Array,
    ArrayOrScalar,
    Operand,
    ShapeComponent,
    ShapeType,
)
from pytato.array.constructors import check_dtype, make_data_wrapper
from pytato.array.inputs import DataWrapper
from pytato.array.lambdas import IndexLambda
from pytato.array.shape import broadcast_shapes, is_one
from pytato.diagnostic import (
    CannotBroadcastError,
    DTypeError,
    IntegerPowerError,
    InvalidArgumentTypeError,
    ScalarOverflowError,
)
from pytato.frontend._utils import bind_array
from pytato.frontend.creation import full
from pytato.scalar_expr import (
    SCALAR_CLASSES,
    Scalar,
    ScalarExpression,
    TypeCast,
    integer_dtype_info,
    negated,
    scalar_literal,
)


SCALAR_TYPES = (*SCALAR_CLASSES,)


def is_operand(x: object) -> bool:
    """Whether *x* can take part in element-wise arithmetic with arrays."""
    return isinstance(x, (Array, np.ndarray, *SCALAR_TYPES))


def _as_operand(x: object, argname: str) -> ArrayOrScalar:
    if isinstance(x, Array):
        return x
    if isinstance(x, (bool, int, float, complex)):
        return x
    if isinstance(x, (np.generic)):
        check_dtype(x.dtype, argname)
        return cast("Scalar", x)  # (of a dtype of arrays: checked)
    if isinstance(x, np.ndarray):
        return make_data_wrapper(x)
    raise InvalidArgumentTypeError(f"'{argname}' must be an array or a scalar, got "
                                   f"{type(x).__name__}")


# empty arrays of each dtype, standing for arrays in numpy's dtype rules
# (never written: shared)
_PROXIES: dict[np.dtype[np.generic],
               np.ndarray[tuple[int], np.dtype[np.generic]]] = {}


def _proxy(x: ArrayOrScalar) -> Scalar | np.ndarray:
    if isinstance(x, Array):
        proxy = _PROXIES.get(x.dtype)
        if proxy is None:
            proxy = _PROXIES[x.dtype] = np.empty((0,), dtype=x.dtype)
        return proxy
    return x


# the variables of output indices, ``_0, _1, ...``, and of bindings,
# ``_in0, ...``: immutable, so shared by the expressions that use them
# (their hashes are computed once)
_INDEX_VARIABLES: list[prim.Variable] = []
_BINDING_VARIABLES: dict[str, prim.Variable] = {}


def _index_variable(i: int) -> prim.Variable:
    while len(_INDEX_VARIABLES) <= i:
        _INDEX_VARIABLES.append(prim.Variable(f"_{len(_INDEX_VARIABLES)}"))
    return _INDEX_VARIABLES[i]


def _binding_variable(name: str) -> prim.Variable:
    var = _BINDING_VARIABLES.get(name)
    if var is None:
        var = prim.Variable(name)
        if len(_BINDING_VARIABLES) < 1024:
            _BINDING_VARIABLES[name] = var
    return var


# the expressions of index_expr_for by name and integer shapes (immutable,
# so shared: their hashes are computed once)
_INDEX_EXPRS: dict[tuple[object, ...], prim.Subscript] = {}
_MAX_INDEX_EXPRS = 4096


def _int_shape(shape: Sequence[ShapeComponent]) -> bool:
    for n in shape:
        if type(n) is not int:
            return False
    return True


def index_expr_for(ary: Array, name: str, out_ndim: int,
                   out_shape: Sequence[ShapeComponent] | None = None
                   ) -> ArithmeticExpression:
    """The expression reading *ary* (bound as *name*) broadcast to an output
    of *out_ndim* axes indexed by ``_0, _1, ...``."""
    shape = ary.shape
    if not shape:
        return _binding_variable(name)
    if not (_int_shape(shape) and (out_shape is None or _int_shape(out_shape))):
        return _index_expr(shape, name, out_ndim, out_shape)
    key = (name, shape, out_ndim,
           None if out_shape is None else tuple(out_shape))
    expr = _INDEX_EXPRS.get(key)
    if expr is None:
        expr = _index_expr(shape, name, out_ndim, out_shape)
        if len(_INDEX_EXPRS) < _MAX_INDEX_EXPRS:
            _INDEX_EXPRS[key] = expr
    return expr


def _index_expr(shape: Sequence[ShapeComponent], name: str, out_ndim: int,
                out_shape: Sequence[ShapeComponent] | None) -> prim.Subscript:
    offset = out_ndim - len(shape)
    idx: list[int | prim.Variable] = []
    for i, n in enumerate(shape):
        if is_one(n) and (out_shape is None or not is_one(out_shape[i + offset])):
            idx.append(0)
        else:
            idx.append(_index_variable(i + offset))
    return prim.Subscript(_binding_variable(name), tuple(idx))


def _overflow(operands: Sequence[object], argnames: Sequence[str], what: str,
              err: OverflowError) -> ScalarOverflowError:
    """The error for Python integer operands that do not fit the integer
    dtype of the arrays they are combined with (numpy 2's rule, NEP 50)."""
    int_dtypes = [x.dtype for x in operands
                  if isinstance(x, Array) and x.dtype.kind in "iub"]
    culprits = []
    for x, n in zip(operands, argnames, strict=True):
        if type(x) is int and any(
                dt.kind != "b" and not (integer_dtype_info(dt).min <= x
                                         <= integer_dtype_info(dt).max)
                for dt in int_dtypes):
            culprits.append(f"'{n}' ({x})")
    if not culprits:    # e.g. beyond int64, the dtype of bool arithmetic
        culprits = [f"'{n}' ({x})" for x, n in zip(operands, argnames,
                                                   strict=True)
                    if type(x) is int]
    names = ", ".join(culprits) or "a Python integer operand"
    dtypes = ", ".join(sorted({str(dt) for dt in int_dtypes}))
    return ScalarOverflowError(
        f"{what}: {names} does not fit the dtype ({dtypes}) of the array "
        f"operand (numpy 2 raises OverflowError too: {err}); convert the "
        "array to a wider dtype, or the operand to a numpy scalar of the "
        "intended dtype")


def elementwise(ufunc: Callable[..., Any] | None,
                operands: Sequence[Any],
                make_expr: Callable[..., ScalarExpression],
                *,
                argnames: Sequence[str] | None = None,
                op_dtype: str | np.dtype[np.generic] = "out",
                out_dtype: np.dtype[np.generic] | None = None,
                eager: Callable[..., ArrayOrScalar] | None = None,
                what: str = "operation") -> ArrayOrScalar:
    """Build the element-wise application of *make_expr* to *operands*.

    :arg ufunc: the numpy function whose dtype rules (and errors) apply; it
        also computes the result when all operands are scalars.
    :arg make_expr: called with one scalar expression per operand (cast to
        the operation dtype), returns the element expression.
    :arg op_dtype: the dtype operands are cast to: ``"out"`` (the result
        dtype), ``"common"`` (numpy's common type of the operands, e.g. for
        comparisons), ``"none"`` (no cast) or a dtype.
    :arg out_dtype: overrides the result dtype found through *ufunc*.
    """
    rule_key = _rule_key(ufunc, operands, op_dtype, out_dtype)
    if rule_key is not None:
        rule = _DTYPE_RULES.get(rule_key)
        if rule is not None:
            return _same_shape_elementwise(operands, make_expr, *rule)
    if argnames is None:
        argnames = [f"x{i + 1}" for i in range(len(operands))]
    operands = [_as_operand(x, n) for x, n in zip(operands, argnames, strict=True)]
    arrays = [x for x in operands if isinstance(x, Array)]
    if not arrays:
        fn = eager or ufunc
        assert fn is not None
        return fn(*operands)

    proxies = [_proxy(x) for x in operands]
    try:
        if out_dtype is None:
            assert ufunc is not None
            try:
                out_dtype = np.asarray(ufunc(*proxies)).dtype
            except OverflowError as e:
                raise _overflow(operands, argnames, what, e) from None
        if op_dtype == "out":
            cast_dtype: np.dtype[np.generic] | None = out_dtype
        elif op_dtype == "common":
            cast_dtype = np.result_type(*proxies)
        elif op_dtype == "none":
            cast_dtype = None
        else:
            cast_dtype = np.dtype(op_dtype)
    except ScalarOverflowError:
        raise
    except (TypeError, ValueError, OverflowError) as e:
        dtypes = ", ".join(
            f"{n}: {x.dtype if isinstance(x, Array) else type(x).__name__}"
            for x, n in zip(operands, argnames, strict=True))
        raise DTypeError(f"{what} is not supported for operands of dtypes "
                         f"({dtypes}): {e}") from None

    out_dt = np.dtype(out_dtype)
    if out_dt.kind == "f" and out_dt.itemsize < 4:
        dtypes = ", ".join(
            f"{n}: {x.dtype if isinstance(x, Array) else type(x).__name__}"
            for x, n in zip(operands, argnames, strict=True))
        raise DTypeError(f"{what} of operands of dtypes ({dtypes}) gives "
                         f"{out_dt} in numpy, which is not "
                         "supported (OpenCL devices need an extension for half "
                         "precision); cast the operands to float32 first")

    shapes = [x.shape for x in arrays]
    try:
        out_shape: ShapeType | None = broadcast_shapes(*shapes)
    except CannotBroadcastError:
        out_shape = None
    if out_shape is None:
        # the error again, naming the operands
        out_shape = broadcast_shapes(
            *shapes, argnames=[n for x, n in zip(operands, argnames, strict=True)
                               if isinstance(x, Array)])
    bindings, exprs = _bindings_and_exprs(operands, out_shape, cast_dtype)
    if rule_key is not None and len(_DTYPE_RULES) < _MAX_DTYPE_RULES:
        _DTYPE_RULES[rule_key] = (out_dt, cast_dtype)
    return IndexLambda(out_shape, out_dt, make_expr(*exprs),
                       bindings)


# {{{ the commonest case, without the general path's checks

# the dtypes (of the result, and the one operands are cast to) of
# element-wise operations found by the general path, by _rule_key
_DTYPE_RULES: dict[tuple[object, ...],
                   tuple[np.dtype[np.generic], np.dtype[np.generic] | None]] = {}
_MAX_DTYPE_RULES = 4096

# Python scalars whose numpy dtype rules (NEP 50) depend on their type
# only (a Python int's also on its value: OverflowError)
_WEAK_SCALARS = (float, complex, bool)


def _rule_key(ufunc: object, operands: Sequence[object], op_dtype: object,
              out_dtype: object) -> tuple[object, ...] | None:
    """The key of the dtypes of an element-wise operation whose operands
    are arrays of one shape of integer extents and Python floats, complex
    numbers or bools (their dtypes and types decide the result dtype);
    None for any other."""
    parts: list[object] = [ufunc, op_dtype, out_dtype]
    shape = None
    for x in operands:
        tp = type(x)
        if tp in _WEAK_SCALARS:
            parts.append(tp)
        elif isinstance(x, Array):
            if shape is None:
                shape = x.shape
                if not _int_shape(shape):
                    return None
            elif x.shape != shape:
                return None
            parts.append(x.dtype)
        else:
            return None
    if shape is None:
        return None
    return tuple(parts)


def _same_shape_elementwise(operands: Sequence[Any],
                            make_expr: Callable[..., ScalarExpression],
                            out_dt: np.dtype[np.generic],
                            cast_dtype: np.dtype[np.generic] | None) -> IndexLambda:
    """:func:`elementwise` of operands that :func:`_rule_key` accepts, with
    the dtypes the general path found for operands of their kinds: the
    same node as the general path builds."""
    shape = next(x.shape for x in operands if isinstance(x, Array))
    bindings, exprs = _bindings_and_exprs(operands, shape, cast_dtype)
    return IndexLambda(shape, out_dt, make_expr(*exprs), bindings)


def _bindings_and_exprs(operands: Sequence[Any], out_shape: Sequence[Any],
                        cast_dtype: np.dtype[np.generic] | None
                        ) -> tuple[dict[str, Array], list[Any]]:
    """The bindings of the array operands (``_in0, _in1, ...``, one per
    distinct array) and the scalar expression of each operand (read at the
    output's indices, cast to *cast_dtype* where it differs)."""
    out_ndim = len(out_shape)
    bindings: dict[str, Array] = {}
    name_of: dict[Array, str] = {}
    name_of_id: dict[int, str] = {}
    exprs: list[ArithmeticExpression] = []
    for x in operands:
        e: ArithmeticExpression
        if isinstance(x, Array):
            name = bind_array(x, bindings, name_of, name_of_id)
            e = index_expr_for(x, name, out_ndim, out_shape)
            if cast_dtype is not None and x.dtype != cast_dtype:
                e = TypeCast(cast_dtype, e)
        else:
            dt = cast_dtype if cast_dtype is not None else np.result_type(x)
            e = scalar_literal(x, dt)
        exprs.append(e)
    return bindings, exprs

# }}}


# {{{ arithmetic

def _binop(ufunc: np.ufunc,
           make: Callable[[ArithmeticExpression, ArithmeticExpression],
                          ScalarExpression],
           what: str, op_dtype: str = "out"
           ) -> Callable[[Operand, Operand], ArrayOrScalar]:
    def fn(x1: Operand, x2: Operand) -> ArrayOrScalar:
        return elementwise(ufunc, [x1, x2], make, argnames=["x1", "x2"],
                           op_dtype=op_dtype, what=what)
    fn.__name__ = ufunc.__name__
    fn.__doc__ = f"Element-wise :func:`numpy.{ufunc.__name__}` of *x1* and *x2*."
    return fn


add = _binop(np.add, lambda a, b: prim.Sum((a, b)), "addition")
subtract = _binop(np.subtract, lambda a, b: prim.Sum((a, negated(b))),
                  "subtraction")
multiply = _binop(np.multiply, lambda a, b: prim.Product((a, b)), "multiplication")
true_divide = _binop(np.true_divide, lambda a, b: prim.Quotient(a, b), "division")
divide = true_divide
floor_divide = _binop(np.floor_divide, lambda a, b: prim.FloorDiv(a, b),
                      "floor division")
remainder = _binop(np.remainder, lambda a, b: prim.Remainder(a, b), "remainder")
mod = remainder
_power = _binop(np.power, lambda a, b: prim.Power(a, b), "power")


def _has_negative_constant(x: object) -> bool:
    if isinstance(x, DataWrapper):
        x = x.data
    if isinstance(x, Array) or isinstance(x, (bool, np.bool_)):
        return False
    data = np.asarray(x)
    return data.dtype.kind == "i" and bool((data < 0).any())


def power(x1: Operand, x2: Operand) -> ArrayOrScalar:
    """Element-wise :func:`numpy.power` of *x1* and *x2*.

    As in numpy, integers to negative integer powers are refused when the
    exponent is a constant (:class:`~pytato.diagnostic.IntegerPowerError`);
    for exponents known only at run time see :ref:`numerical-semantics`.
    """
    result = _power(x1, x2)
    if isinstance(result, Array) and result.dtype.kind in "iu" \
            and _has_negative_constant(x2):
        raise IntegerPowerError(
            "'x2': integers to negative integer powers are not allowed (as "
            "in numpy); use a float base or exponent")
    return result
bitwise_and = _binop(np.bitwise_and, lambda a, b: prim.BitwiseAnd((a, b)),
                     "bitwise and")
bitwise_or = _binop(np.bitwise_or, lambda a, b: prim.BitwiseOr((a, b)),
                    "bitwise or")
bitwise_xor = _binop(np.bitwise_xor, lambda a, b: prim.BitwiseXor((a, b)),
                     "bitwise xor")
left_shift = _binop(np.left_shift, lambda a, b: prim.LeftShift(a, b), "left shift")
right_shift = _binop(np.right_shift, lambda a, b: prim.RightShift(a, b),
                     "right shift")


_PYTHON_COMPARISONS: dict[str, Callable[[int, int], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt,
    "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def _out_of_range_comparison(op: str, x1: Operand, x2: Operand) -> Array | None:
    """The result of comparing an integer array with a Python integer
    outside the range of its dtype, as numpy 2 defines it (the same for
    every element: ``int8_array < 1000`` is all true), or None for other
    operands."""
    for arr, value, swapped in ((x1, x2, False), (x2, x1, True)):
        if isinstance(arr, Array) and type(value) is int \
                and arr.dtype.kind in "iu":
            info = integer_dtype_info(arr.dtype)
            if info.min <= value <= info.max:
                return None
            # every element is between the bounds: like the nearer one
            bound = int(info.max if value > info.max else info.min)
            a, b = (value, bound) if swapped else (bound, value)
            return full(arr.shape, _PYTHON_COMPARISONS[op](a, b),
                        dtype=np.bool_)
    return None


def _cmp(ufunc: np.ufunc, op: str) -> Callable[[Operand, Operand], ArrayOrScalar]:
    compare = _binop(ufunc, lambda a, b: prim.Comparison(a, op, b),
                     f"comparison '{op}'", op_dtype="common")

    def fn(x1: Operand, x2: Operand) -> ArrayOrScalar:
        if type(x1) is int or type(x2) is int:
            result = _out_of_range_comparison(op, x1, x2)
            if result is not None:
                return result
        return compare(x1, x2)

    fn.__name__ = compare.__name__
    fn.__doc__ = (f"{compare.__doc__} An integer array compared with a "
                  "Python integer outside the range of its dtype gives the "
                  "same result for every element, as in numpy 2.")
    return fn


equal = _cmp(np.equal, "==")
not_equal = _cmp(np.not_equal, "!=")
less = _cmp(np.less, "<")
less_equal = _cmp(np.less_equal, "<=")
greater = _cmp(np.greater, ">")
greater_equal = _cmp(np.greater_equal, ">=")


def _logical(ufunc: np.ufunc,
             cls: type[prim.LogicalAnd] | type[prim.LogicalOr]
             ) -> Callable[[Operand, Operand], ArrayOrScalar]:
    return _binop(ufunc, lambda a, b: cls((a, b)), ufunc.__name__,
                  op_dtype="none")


logical_and = _logical(np.logical_and, prim.LogicalAnd)
logical_or = _logical(np.logical_or, prim.LogicalOr)


def logical_xor(x1: Operand, x2: Operand) -> ArrayOrScalar:
    """Element-wise :func:`numpy.logical_xor`."""
    return elementwise(np.logical_xor, [x1, x2],
                       lambda a, b: prim.Comparison(prim.LogicalNot(a), "!=",
                                                    prim.LogicalNot(b)),
                       argnames=["x1", "x2"], op_dtype="none", what="logical_xor")


def logical_not(x: Operand) -> ArrayOrScalar:
    """Element-wise :func:`numpy.logical_not`."""
    return elementwise(np.logical_not, [x], prim.LogicalNot, argnames=["x"],
                       op_dtype="none", what="logical_not")


def negative(x: Operand) -> ArrayOrScalar:
    """Element-wise :func:`numpy.negative`."""
    return elementwise(np.negative, [x], negated,
                       argnames=["x"], what="negation")


def invert(x: Operand) -> ArrayOrScalar:
    """Element-wise :func:`numpy.invert` (logical not for booleans)."""
    if isinstance(x, Array) and x.dtype.kind == "b":
        return logical_not(x)
    return elementwise(np.invert, [x], prim.BitwiseNot, argnames=["x"],
                       what="bitwise inversion")


def _isnan(e: ArithmeticExpression) -> ScalarExpression:
    return prim.Call(prim.Variable("pytato.c99.isnan"), (e,))


def _extremum(ufunc: np.ufunc, op: str) -> Callable[[Operand, Operand], ArrayOrScalar]:
    def fn(x1: Operand, x2: Operand) -> ArrayOrScalar:
        def make(a: ArithmeticExpression, b: ArithmeticExpression
                 ) -> ScalarExpression:
            return prim.If(prim.LogicalOr((prim.Comparison(a, op, b),
                                           _isnan(a))), a, b)

        def make_int(a: ArithmeticExpression, b: ArithmeticExpression
                     ) -> ScalarExpression:
            return prim.If(prim.Comparison(a, op, b), a, b)

        probe = elementwise(ufunc, [x1, x2], make_int, argnames=["x1", "x2"],
                            what=ufunc.__name__)
        if not isinstance(probe, Array) or probe.dtype.kind not in "fc":
            return probe
        if probe.dtype.kind == "c":
            raise DTypeError(f"{ufunc.__name__} of complex arrays is not "
                             "supported")
        return elementwise(ufunc, [x1, x2], make, argnames=["x1", "x2"],
                           what=ufunc.__name__)
    fn.__name__ = ufunc.__name__
    fn.__doc__ = (f"Element-wise :func:`numpy.{ufunc.__name__}` (NaNs "
                  "propagate).")
    return fn


maximum = _extremum(np.maximum, ">")
minimum = _extremum(np.minimum, "<")

# }}}
