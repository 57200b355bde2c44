"""Vectorized Python code for the scalar expression of an
:class:`~pytato.array.IndexLambda`.

The expression is evaluated once, over a *grid*: one axis per output axis
of the lambda followed by one axis per reduction index. Every intermediate
value is either a scalar or an array with exactly one axis per grid axis,
of full length on the grid axes it depends on and of length one on the
others (so values always broadcast against each other). The translation
tracks which axes each value spans, so that

* a binding subscripted by plain grid indices (``x[_1, _0]``) becomes a
  view of the binding (transposed, with unit axes inserted) rather than a
  gather;
* other subscripts become fancy indexing with broadcast index grids
  (``np.arange(n).reshape(...)``), clipped to the bounds of the binding so
  that branches masked out by :class:`pymbolic.primitives.If` cannot fail;
* a :class:`~pytato.scalar_expr.Reduce` reduces its inner value over its
  axes with ``keepdims=True``.

.. autoclass:: LambdaCodeGenerator
"""

from __future__ import annotations

import builtins
import functools
import keyword
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, SupportsInt, cast

import numpy as np
import pymbolic.primitives as prim
from pymbolic.mapper import Mapper as _PMapper
from pymbolic.typing import ArithmeticExpression

from pytato.array.base import Array
from pytato.array.inputs import SizeParam
from pytato.array.lambdas import IndexLambda
from pytato.array.shape import shape_component_to_expr
from pytato.diagnostic import NonAffineShapeError
from pytato.scalar_expr import (
    AllReductionOperation,
    AnyReductionOperation,
    MaxReductionOperation,
    MinReductionOperation,
    ProductReductionOperation,
    Reduce,
    ScalarExpression,
    SumReductionOperation,
    TypeCast,
    WalkMapper,
    distribute_arithmetic,
    get_dependencies,
    is_integral_scalar,
    substitute,
)
from pytato.scalar_functions import python_implementation_code
from pytato.tags import ReductionWithoutIdentity


#: Names of ``pytato.c99.*`` functions whose numpy name differs.
C99_TO_NUMPY = {
    "fabs": "abs", "pow": "power", "asin": "arcsin", "acos": "arccos",
    "atan": "arctan", "atan2": "arctan2", "asinh": "arcsinh",
    "acosh": "arccosh", "atanh": "arctanh", "conjugate": "conj",
}

_REDUCTION_FUNCS: dict[type, str] = {
    SumReductionOperation: "sum", ProductReductionOperation: "prod",
    MaxReductionOperation: "max", MinReductionOperation: "min",
    AllReductionOperation: "all", AnyReductionOperation: "any",
}


def is_safe_identifier(name: str) -> bool:
    """Whether *name* can be used as a variable in generated code without
    shadowing a keyword or a builtin."""
    return (name.isidentifier() and not keyword.iskeyword(name)
            and not hasattr(builtins, name))


@functools.cache
def dtype_code(np_name: str, dtype: np.dtype[np.generic]) -> str:
    """Code for the scalar type of *dtype* in the array module *np_name*."""
    name = "bool_" if dtype.kind == "b" else dtype.name
    return f"{np_name}.{name}"


def _float_code(np_name: str, x: float) -> str:
    if math.isnan(x):
        return f"{np_name}.nan"
    if math.isinf(x):
        return f"{np_name}.inf" if x > 0 else f"(-{np_name}.inf)"
    return repr(float(x))


def literal_code(np_name: str, value: object) -> tuple[str, bool]:
    """Code for a scalar literal, and whether it is a plain Python scalar."""
    if isinstance(value, np.generic):
        dt = value.dtype
        tcode = dtype_code(np_name, dt)
        if dt.kind == "b":
            return f"{tcode}({bool(value)!r})", False
        if dt.kind in "iu":
            return f"{tcode}({int(value)!r})", False
        if dt.kind == "f":
            return f"{tcode}({_float_code(np_name, float(value))})", False
        if dt.kind == "c":
            c = complex(value)
            return (f"{tcode}(complex({_float_code(np_name, c.real)}, "
                    f"{_float_code(np_name, c.imag)}))"), False
    if isinstance(value, (bool, int)):
        return repr(value), True
    if isinstance(value, float):
        return _float_code(np_name, value), True
    if isinstance(value, complex):
        return (f"complex({_float_code(np_name, value.real)}, "
                f"{_float_code(np_name, value.imag)})"), True
    raise NotImplementedError(f"literal {value!r} of type "
                              f"{type(value).__name__} in generated code")


@dataclass(frozen=True)
class Value:
    """A translated subexpression.

    .. attribute:: code
    .. attribute:: axes

        The grid axes the value spans at full length.

    .. attribute:: is_py

        Whether the value is a Python scalar (no ``.astype``, no shape).

    .. attribute:: atomic

        Whether *code* needs no parentheses as an operand.

    .. attribute:: ndim

        The number of axes of the value: the trailing grid axes (as numpy
        broadcasting aligns them).
    """

    code: str
    axes: frozenset[int]
    is_py: bool = False
    atomic: bool = True
    ndim: int = 0

    def paren(self) -> str:
        return self.code if self.atomic else f"({self.code})"


# {{{ size expressions

class SizeCodeMapper(_PMapper[str, []]):
    """Renders an integer expression in size parameter names (or other
    variables, renamed by *var_code*) as Python code."""

    def __init__(self, var_code: Callable[[str], str]) -> None:
        self.var_code = var_code

    def map_constant(self, expr: object) -> str:
        return repr(int(cast("SupportsInt", expr)))  # (sizes are integers)

    def map_variable(self, expr: prim.Variable) -> str:
        return self.var_code(expr.name)

    def map_sum(self, expr: prim.Sum) -> str:
        code = ""
        for i, c in enumerate(expr.children):
            neg = _negated_size(c)
            if neg is None:
                code += (" + " if i else "") + self.rec(c)
            else:
                code += (" - " if i else "-") + self.rec(neg)
        return f"({code})"

    def map_product(self, expr: prim.Product) -> str:
        neg = _negated_size(expr)
        if neg is not None:
            return f"(-{self.rec(neg)})"
        return "(" + " * ".join(self.rec(c) for c in expr.children) + ")"

    def map_floor_div(self, expr: prim.FloorDiv) -> str:
        return f"({self.rec(expr.numerator)} // {self.rec(expr.denominator)})"

    def map_remainder(self, expr: prim.Remainder) -> str:
        return f"({self.rec(expr.numerator)} % {self.rec(expr.denominator)})"

    def map_power(self, expr: prim.Power) -> str:
        return f"({self.rec(expr.base)} ** {self.rec(expr.exponent)})"

    def map_quotient(self, expr: prim.Quotient) -> str:
        return f"({self.rec(expr.numerator)} // {self.rec(expr.denominator)})"


def _negated_size(e: object) -> ArithmeticExpression | None:
    """If *e* is a negative integer or ``-1 * x``, return its negation."""
    if is_integral_scalar(e) and int(e) < 0:
        return -int(e)
    if (isinstance(e, prim.Product) and is_integral_scalar(e.children[0])
            and int(e.children[0]) < 0):
        c = -int(e.children[0])
        rest = e.children[1:]
        if c == 1:
            return rest[0] if len(rest) == 1 else prim.Product(rest)
        return prim.Product((c, *rest))
    return None


def size_exprs_equal(a: Any, b: Any) -> bool:
    """Whether two integer expressions in size parameters are provably
    equal."""
    if is_integral_scalar(a) and is_integral_scalar(b):
        return int(a) == int(b)
    try:
        diff = distribute_arithmetic(
            distribute_arithmetic(a) - distribute_arithmetic(b))
    except Exception:
        return False
    return is_integral_scalar(diff) and int(diff) == 0

# }}}


class _ReductionCollector(WalkMapper[[]]):
    def __init__(self) -> None:
        self.reductions: list[Reduce] = []

    def map_reduce(self, expr: Reduce, *args: object, **kwargs: object) -> None:
        self.reductions.append(expr)
        super().map_reduce(expr, *args, **kwargs)


@dataclass
class _GridAxis:
    length_code: str
    length_expr: Any          # in size parameter names, None if unknown
    start_code: str = "0"
    start_is_zero: bool = True


class LambdaCodeGenerator(_PMapper[Value, []]):
    """Translates the expression of one :class:`~pytato.array.IndexLambda`.

    :arg np_name: the name of the array module in generated code.
    :arg binding_code: maps binding names to the code of their values.
    :arg size_param_code: maps size parameter names to their variables.
    :arg fresh_name: returns a fresh variable name for a prefix.

    After calling :meth:`generate`, :attr:`statements` holds the
    statements to emit before the lambda's own assignment.
    """

    def __init__(self, expr: IndexLambda, np_name: str,
                 binding_code: Mapping[str, str],
                 size_param_code: Callable[[str], str],
                 fresh_name: Callable[[str], str]) -> None:
        self.node = expr
        self.np = np_name
        self.binding_code = binding_code
        self.size_param_code = size_param_code
        self.fresh_name = fresh_name
        self.statements: list[str] = []
        self._index_vars: dict[int, str] = {}
        self.size_code = SizeCodeMapper(size_param_code)

        # 0-d bindings expressible in size parameters, for bounds and lengths
        self._binding_size_exprs: dict[str, Any] = {}
        for name, b in expr.bindings.items():
            if b.shape == () and b.dtype.kind in "iu":
                try:
                    self._binding_size_exprs[name] = shape_component_to_expr(b)
                except NonAffineShapeError:
                    pass

        self.ndim_out = len(expr.shape)
        self.axes: list[_GridAxis] = []
        for c in expr.shape:
            e = shape_component_to_expr(c)
            self.axes.append(_GridAxis(self.size_code(e), e))
        self.iname_to_axis: dict[str, int] = {}
        collector = _ReductionCollector()
        collector(expr.expr)
        for red in collector.reductions:
            for iname, (lo, hi) in red.bounds.items():
                if iname in self.iname_to_axis:
                    continue
                self.iname_to_axis[iname] = len(self.axes)
                lo_e, hi_e = self._bound_expr(lo), self._bound_expr(hi)
                if lo_e is not None and hi_e is not None:
                    length = distribute_arithmetic(hi_e - lo_e)
                    self.axes.append(_GridAxis(
                        self.size_code(length), length, self.size_code(lo_e),
                        is_integral_scalar(lo_e) and int(lo_e) == 0))
                else:
                    lo_c, hi_c = self.rec(lo), self.rec(hi)
                    if lo_c.axes or hi_c.axes:
                        raise NotImplementedError(
                            f"reduction bounds of '{iname}' depend on indices")
                    self.axes.append(_GridAxis(
                        f"({hi_c.paren()} - {lo_c.paren()})", None,
                        lo_c.code, False))
        self.ndim = len(self.axes)

    # {{{ helpers

    def _bound_expr(self, e: ScalarExpression) -> ArithmeticExpression | None:
        """*e* (a reduction bound) in size parameter names, or None."""
        deps = get_dependencies(e)
        if not deps <= set(self._binding_size_exprs):
            return None
        # (bounds are arithmetic)
        return cast("ArithmeticExpression", substitute(
            e, {n: self._binding_size_exprs[n] for n in deps}))

    def grid_shape(self, full_axes: frozenset[int], ndim: int | None = None
                   ) -> str:
        comps = [self.axes[i].length_code if i in full_axes else "1"
                 for i in range(self.ndim if ndim is None else ndim)]
        return "(" + ", ".join(comps) + ("," if len(comps) == 1 else "") + ")"

    def _index_var(self, iaxis: int) -> str:
        try:
            return self._index_vars[iaxis]
        except KeyError:
            pass
        ax = self.axes[iaxis]
        name = self.fresh_name("_pt_idx")
        shape = ["1"] * self.ndim
        shape[iaxis] = "-1"
        if ax.start_is_zero:
            rng = f"{self.np}.arange({ax.length_code})"
        else:
            rng = (f"{self.np}.arange({ax.start_code}, "
                   f"{ax.start_code} + {ax.length_code})")
        if self.ndim > 1:
            rng = f"{rng}.reshape(({', '.join(shape)}))"
        self.statements.append(f"{name} = {rng}")
        self._index_vars[iaxis] = name
        return name

    def _grid_axis_of(self, e: object) -> int | None:
        if not isinstance(e, prim.Variable):
            return None
        name = e.name
        if name in self.iname_to_axis:
            return self.iname_to_axis[name]
        if name.startswith("_") and name[1:].isdigit():
            i = int(name[1:])
            if i < self.ndim_out:
                return i
        return None

    def _binding_axis_matches(self, ary: Array, iaxis: int, gaxis: int) -> bool:
        ax = self.axes[gaxis]
        if not ax.start_is_zero or ax.length_expr is None:
            return False
        try:
            n = shape_component_to_expr(ary.shape[iaxis])
        except NonAffineShapeError:
            return False
        return size_exprs_equal(n, ax.length_expr)

    # }}}

    def generate(self) -> str:
        """The code of the lambda's value, of the lambda's shape and dtype
        (possibly a read-only view)."""
        expr = self.node.expr
        ndim = self.ndim
        if (isinstance(expr, Reduce)
                and set(expr.bounds) == set(self.iname_to_axis)):
            # the only reduction, at the top: reduce without keepdims
            val = self.map_reduce(expr, keepdims=False)
            ndim = self.ndim_out
        else:
            val = self.rec(expr)
        out_axes = frozenset(range(self.ndim_out))
        code = val.code
        dt = dtype_code(self.np, self.node.dtype)
        if val.axes != out_axes or val.ndim < ndim:
            code = (f"{self.np}.broadcast_to({self.np}.asarray({code}, "
                    f"dtype={dt}), {self.grid_shape(out_axes, ndim)})")
        else:
            code = f"{self.np}.asarray({code}, dtype={dt})"
        if ndim > self.ndim_out:
            code += "[" + ", ".join(["..."] + ["0"] * (self.ndim - self.ndim_out)
                                    ) + "]"
        return code

    # {{{ leaves

    def map_constant(self, expr: object) -> Value:
        code, is_py = literal_code(self.np, expr)
        return Value(code, frozenset(), is_py, atomic=not code.startswith("-"))

    def map_variable(self, expr: prim.Variable) -> Value:
        name = expr.name
        g = self._grid_axis_of(expr)
        if g is not None:
            return Value(self._index_var(g), frozenset({g}), ndim=self.ndim)
        if name in self.binding_code:
            b = self.node.bindings[name]
            if isinstance(b, SizeParam):
                return Value(f"{self.np}.int64({self.binding_code[name]})",
                             frozenset())
            return Value(self.binding_code[name], frozenset())
        if name.startswith("pytato.c99."):
            fname = name[len("pytato.c99."):]
            return Value(f"{self.np}.{C99_TO_NUMPY.get(fname, fname)}",
                         frozenset())
        if name.startswith("pytato.foreign."):
            return Value(python_implementation_code(name, self.np), frozenset())
        raise ValueError(f"unknown variable '{name}' in the expression of "
                         "an IndexLambda")

    def map_subscript(self, expr: prim.Subscript) -> Value:
        if not isinstance(expr.aggregate, prim.Variable) or (
                expr.aggregate.name not in self.binding_code):
            raise ValueError(f"subscript of an unknown aggregate: {expr}")
        name = expr.aggregate.name
        ary = self.node.bindings[name]
        code = self.binding_code[name]
        index = expr.index if isinstance(expr.index, tuple) else (expr.index,)
        if len(index) != ary.ndim:
            raise ValueError(f"'{name}' has {ary.ndim} axes, subscripted by "
                             f"{len(index)} indices in {expr}")

        # fast path: plain grid indices (each once) and integer constants
        fast = True
        gaxes: list[int] = []
        for i, idx in enumerate(index):
            if is_integral_scalar(idx):
                continue
            g = self._grid_axis_of(idx)
            if (g is None or g in gaxes
                    or not self._binding_axis_matches(ary, i, g)):
                fast = False
                break
            gaxes.append(g)
        if fast:
            if any(is_integral_scalar(idx) for idx in index):
                code = code + "[" + ", ".join(
                    str(int(idx)) if is_integral_scalar(idx) else ":"
                    for idx in index) + "]"
            if not gaxes:
                return Value(code, frozenset())
            order = sorted(range(len(gaxes)), key=lambda j: gaxes[j])
            if order != list(range(len(gaxes))):
                code = f"{code}.transpose({tuple(order)!r})"
            sgaxes = sorted(gaxes)
            # leading unit axes are left to numpy's broadcasting
            lead = sgaxes[0]
            if sgaxes != list(range(lead, self.ndim)):
                code = code + "[" + ", ".join(
                    ":" if g in sgaxes else "None"
                    for g in range(lead, self.ndim)) + "]"
            return Value(code, frozenset(gaxes), ndim=self.ndim - lead)

        # general case: gather with clipped index grids
        parts = []
        axes: frozenset[int] = frozenset()
        ndim = 0
        for i, idx in enumerate(index):
            if is_integral_scalar(idx):
                parts.append(str(int(idx)))
                continue
            v = self.rec(idx)
            axes = axes | v.axes
            ndim = max(ndim, v.ndim)
            g = self._grid_axis_of(idx)
            if g is not None and self._binding_axis_matches(ary, i, g):
                parts.append(v.code)
            else:
                parts.append(f"{self.np}.clip({v.code}, 0, "
                             f"{code}.shape[{i}] - 1)")
        return Value(f"{code}[{', '.join(parts)}]", axes, ndim=ndim)

    # }}}

    # {{{ arithmetic

    def _combine(self, values: list[Value], op: str) -> Value:
        return Value(f" {op} ".join(v.paren() for v in values),
                     frozenset().union(*(v.axes for v in values)),
                     all(v.is_py for v in values), atomic=False,
                     ndim=max(v.ndim for v in values))

    def _call(self, func: str, values: list[Value]) -> Value:
        return Value(f"{self.np}.{func}({', '.join(v.code for v in values)})",
                     frozenset().union(*(v.axes for v in values)),
                     ndim=max(v.ndim for v in values))

    @staticmethod
    def _negated(e: object) -> ArithmeticExpression | None:
        """If *e* is ``-1 * x``, return x."""
        if isinstance(e, prim.Product) and len(e.children) >= 2:
            c = e.children[0]
            if (is_integral_scalar(c) and int(c) == -1
                    and not isinstance(c, np.unsignedinteger)):
                rest = e.children[1:]
                return rest[0] if len(rest) == 1 else prim.Product(rest)
        return None

    def map_sum(self, expr: prim.Sum) -> Value:
        code = ""
        axes: frozenset[int] = frozenset()
        is_py = True
        ndim = 0
        for i, ch in enumerate(expr.children):
            neg = self._negated(ch)
            if (neg is None and i > 0 and isinstance(ch, (int, float))
                    and not isinstance(ch, bool) and ch < 0):
                neg = -ch
            v = self.rec(ch if neg is None else neg)
            axes |= v.axes
            ndim = max(ndim, v.ndim)
            is_py = is_py and v.is_py
            if i == 0:
                code = f"(-{v.paren()})" if neg is not None else v.paren()
            else:
                code += (" - " if neg is not None else " + ") + v.paren()
        return Value(code, axes, is_py, atomic=len(expr.children) == 1,
                     ndim=ndim)

    def map_product(self, expr: prim.Product) -> Value:
        neg = self._negated(expr)
        if neg is not None:
            v = self.rec(neg)
            return Value(f"-{v.paren()}", v.axes, v.is_py, atomic=False,
                         ndim=v.ndim)
        return self._combine([self.rec(c) for c in expr.children], "*")

    def map_quotient(self, expr: prim.Quotient) -> Value:
        return self._combine([self.rec(expr.numerator),
                              self.rec(expr.denominator)], "/")

    def map_floor_div(self, expr: prim.FloorDiv) -> Value:
        return self._combine([self.rec(expr.numerator),
                              self.rec(expr.denominator)], "//")

    def map_remainder(self, expr: prim.Remainder) -> Value:
        return self._combine([self.rec(expr.numerator),
                              self.rec(expr.denominator)], "%")

    def map_power(self, expr: prim.Power) -> Value:
        return self._combine([self.rec(expr.base), self.rec(expr.exponent)],
                             "**")

    def map_left_shift(self, expr: prim.LeftShift) -> Value:
        return self._call("left_shift", [self.rec(expr.shiftee),
                                         self.rec(expr.shift)])

    def map_right_shift(self, expr: prim.RightShift) -> Value:
        return self._call("right_shift", [self.rec(expr.shiftee),
                                          self.rec(expr.shift)])

    def _fold(self, func: str, children: tuple[ScalarExpression, ...]) -> Value:
        vals = [self.rec(c) for c in children]
        acc = vals[0]
        for v in vals[1:]:
            acc = self._call(func, [acc, v])
        return acc

    def map_bitwise_and(self, expr: prim.BitwiseAnd) -> Value:
        return self._fold("bitwise_and", expr.children)

    def map_bitwise_or(self, expr: prim.BitwiseOr) -> Value:
        return self._fold("bitwise_or", expr.children)

    def map_bitwise_xor(self, expr: prim.BitwiseXor) -> Value:
        return self._fold("bitwise_xor", expr.children)

    def map_bitwise_not(self, expr: prim.BitwiseNot) -> Value:
        return self._call("invert", [self.rec(expr.child)])

    def map_logical_and(self, expr: prim.LogicalAnd) -> Value:
        return self._fold("logical_and", expr.children)

    def map_logical_or(self, expr: prim.LogicalOr) -> Value:
        return self._fold("logical_or", expr.children)

    def map_logical_not(self, expr: prim.LogicalNot) -> Value:
        return self._call("logical_not", [self.rec(expr.child)])

    _CMP_FUNCS: Mapping[str, str] = {
        "==": "equal", "!=": "not_equal", "<": "less", "<=": "less_equal",
        ">": "greater", ">=": "greater_equal"}

    def map_comparison(self, expr: prim.Comparison) -> Value:
        return self._call(self._CMP_FUNCS[expr.operator],
                          [self.rec(expr.left), self.rec(expr.right)])

    def map_if(self, expr: prim.If) -> Value:
        return self._call("where", [self.rec(expr.condition),
                                    self.rec(expr.then), self.rec(expr.else_)])

    def map_call(self, expr: prim.Call) -> Value:
        if not (isinstance(expr.function, prim.Variable)
                and expr.function.name.startswith(("pytato.c99.",
                                                   "pytato.foreign."))):
            raise NotImplementedError(f"call to {expr.function} in an "
                                      "IndexLambda")
        func = self.rec(expr.function)
        args = [self.rec(p) for p in expr.parameters]
        return Value(f"{func.code}({', '.join(a.code for a in args)})",
                     frozenset().union(*(a.axes for a in args)),
                     ndim=max((a.ndim for a in args), default=0))

    def map_type_cast(self, expr: TypeCast) -> Value:
        dt = dtype_code(self.np, np.dtype(expr.dtype))
        inner = expr.inner_expr
        if isinstance(inner, (int, float, complex, bool, np.generic)):
            return self.map_constant(np.dtype(expr.dtype).type(inner))
        v = self.rec(inner)
        if v.is_py:
            return Value(f"{self.np}.asarray({v.code}, dtype={dt})", v.axes)
        return Value(f"{v.paren()}.astype({dt})", v.axes, ndim=v.ndim)

    # }}}

    def _without_identity(self, expr: Reduce) -> bool:
        """Whether a reduced axis of *expr* is tagged
        :class:`~pytato.tags.ReductionWithoutIdentity` (:func:`pytato.amax`
        without *initial*)."""
        descrs = self.node.var_to_reduction_descr
        return any(
            isinstance(t, ReductionWithoutIdentity)
            for name in expr.bounds if name in descrs
            for t in descrs[name].tags)

    def map_reduce(self, expr: Reduce, keepdims: bool = True) -> Value:
        red_axes = frozenset(self.iname_to_axis[n] for n in expr.bounds)
        inner = self.rec(expr.inner_expr)
        code = inner.code
        if not red_axes <= inner.axes or inner.ndim < self.ndim:
            code = (f"{self.np}.broadcast_to({code}, "
                    f"{self.grid_shape(inner.axes | red_axes)})")
        func = _REDUCTION_FUNCS[type(expr.op)]
        axis = tuple(sorted(red_axes))
        kwargs = f"axis={axis[0] if len(axis) == 1 else axis!r}"
        if keepdims:
            kwargs += ", keepdims=True"
        if func in ("max", "min") and not all(
                is_integral_scalar(self.axes[a].length_expr)
                and int(self.axes[a].length_expr) > 0 for a in axis) \
                and not self._without_identity(expr):
            # (a reduction without identity over an empty axis raises
            # numpy's ValueError, as amax and amin of numpy do; others give
            # the extreme value, as the loopy target does)
            tmp = self.fresh_name("_pt_red")
            self.statements.append(f"{tmp} = {self.np}.asarray({code})")
            code = tmp
            sign = "-" if func == "max" else ""
            lim = "min" if func == "max" else "max"
            kwargs += (f", initial=({self.np}.iinfo({tmp}.dtype).{lim} "
                       f"if {tmp}.dtype.kind in 'iu' else "
                       f"({func == 'min'!r} if {tmp}.dtype.kind == 'b' "
                       f"else {sign}{self.np}.inf))")
        return Value(f"{self.np}.{func}({code}, {kwargs})",
                     inner.axes - red_axes,
                     ndim=self.ndim if keepdims else self.ndim - len(axis))
