"""The OpenCL C of the vector nests of
:mod:`pytato.target.loopy.schedule.vector_calls`: the emitter that writes a
nest's instructions as C statements on vectors of ``W`` elements (or on
scalars, for the last partial chunk), and the functions it accepts.

The schedule stage decides which loop nests become vector code and puts
their code in the kernel; this module only writes the C, which is why it
lives in the build stage (the schedule imports it, never the reverse).

.. autodata:: FLOAT_VIA_DOUBLE
.. autodata:: DOUBLE_IN_HALVES
.. autodata:: TRANSCENDENTAL_FUNCTIONS
.. autodata:: UNARY_FUNCTIONS
.. autodata:: BINARY_FUNCTIONS
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import loopy as lp
import numpy as np
import pymbolic.primitives as prim

from pytato.tuning import record_defaults


if TYPE_CHECKING:
    from pymbolic.typing import Expression

    from pytato.target.loopy.schedule.vector_calls import _NestInfo


#: Functions that vector nests of ``float`` compute in ``double`` vectors
#: on CPUs: PoCL 3.1's ``sin``, ``cos`` and ``tan`` of ``float`` vectors
#: are wrong for small arguments (``sin(0.001f)`` gave 0.008), those of
#: ``double`` vectors right; rounded once to ``float``, the result is
#: within the scalar function's error, and much faster than scalar code.
FLOAT_VIA_DOUBLE = frozenset({"sin", "cos", "tan"})

#: Functions that vector nests of ``double`` compute on the two halves of
#: their vectors on CPUs: PoCL 3.1's ``pow`` of ``double8`` is wrong in
#: some lanes (0 for ``pow(710.0, 0.5)``), that of ``double4`` right,
#: and two halves are still much faster than scalar code.
DOUBLE_IN_HALVES = frozenset({"pow"})

#: The functions whose calls make a nest worth vector code (PoCL calls a
#: library function for each of them, which its compiler does not
#: vectorize across work-items); ``pow`` also stands for powers with
#: non-integer exponents.
TRANSCENDENTAL_FUNCTIONS = frozenset({
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
    "asinh", "acosh", "atanh", "exp", "exp2", "expm1", "log", "log2",
    "log10", "log1p", "pow", "atan2"})

#: Functions of one floating-point argument accepted in vector nests
#: (``abs`` is OpenCL's ``fabs``).
UNARY_FUNCTIONS = TRANSCENDENTAL_FUNCTIONS - {"pow", "atan2"} | frozenset({
    "sqrt", "abs", "fabs", "floor", "ceil"})

#: Functions of two floating-point arguments accepted in vector nests.
BINARY_FUNCTIONS = frozenset({"pow", "atan2"})

#: Predicates accepted in conditions (OpenCL's vector versions give -1 for
#: true, which selects like a comparison).
_PREDICATES = frozenset({"isnan"})

_C_NAMES = {"abs": "fabs"}
_INDEX_TYPES = {np.dtype(np.int32): "int", np.dtype(np.int64): "long"}
_COMPARISONS = frozenset({"<", "<=", ">", ">=", "==", "!="})

#: the names of the C code (a prefix no pytato name starts with)
_BASE = "_pt_vc_base"
_BASE_WORD = re.compile(rf"\b{_BASE}\b")
_ELEMENT = "_pt_vc_e"


class _NotVectorizable(Exception):
    """Raised by the emitter for an expression it does not accept."""


# {{{ the emitter

@dataclass(frozen=True)
class _Value:
    """A C expression: its text, whether it is a truth value (else a
    floating-point one), and whether it is the same for all elements (a
    scalar also in vector code)."""

    code: str
    is_bool: bool
    uniform: bool


class _Emitter:
    """C statements for the instructions of a nest, on vectors of *lanes*
    elements (*lanes* 1: scalars, indexed by ``_pt_vc_e``)."""

    def __init__(self, nest: _NestInfo, lanes: int) -> None:
        self.nest = nest
        self.lanes = lanes
        self.scalar = nest.ctype
        self.vtype = nest.ctype if lanes == 1 else f"{nest.ctype}{lanes}"
        # truth values: OpenCL's comparisons of vectors give -1 or 0 in
        # integers of the elements' size
        mask = "long" if nest.dtype == np.float64 else "int"
        self.mtype = "int" if lanes == 1 else f"{mask}{lanes}"
        self.lines: list[str] = []
        self.values: dict[str, str] = {}
        self.scalars: dict[str, str] = {}
        self.count = 0

    def temp(self, value: _Value) -> str:
        name = f"_pt_vc_t{self.count}"
        self.count += 1
        if value.is_bool:
            ctype = "int" if value.uniform else self.mtype
        else:
            ctype = self.scalar if value.uniform else self.vtype
        self.lines.append(f"{ctype} {name} = {value.code};")
        return name

    def widened(self, value: _Value) -> str:
        """*value* as a value of the vector type."""
        if value.uniform and self.lanes > 1:
            return f"({self.vtype})({value.code})"
        return value.code

    def constant(self, value: float) -> _Value:
        if math.isnan(value):
            code = "NAN"
        elif math.isinf(value):
            code = "INFINITY" if value > 0 else "(-INFINITY)"
        else:
            code = repr(float(value))
            if "e" not in code and "." not in code:
                code += ".0"
            if self.nest.dtype == np.float32:
                code += "f"
            if value < 0 or code.startswith("-"):
                code = f"({code})"
        if self.nest.dtype == np.float64 and code in ("NAN", "INFINITY",
                                                        "(-INFINITY)"):
            code = f"((double) {code})"
        return _Value(code, False, True)

    def number(self, expr: object) -> float:
        """The value of the constant *expr* in the nest's dtype (exact)."""
        if isinstance(expr, (bool, np.bool_)):
            raise _NotVectorizable("boolean constant")
        if isinstance(expr, (int, np.integer)):
            try:
                value = float(int(expr))
                exact = int(self.nest.dtype.type(value)) == int(expr)
            except (OverflowError, ValueError):
                exact = False
            if not exact:
                raise _NotVectorizable("integer not exact in the dtype")
            return value
        if isinstance(expr, (float, np.floating)):
            value = float(expr)
            if not math.isnan(value) and float(
                    self.nest.dtype.type(value)) != value:
                raise _NotVectorizable("constant not exact in the dtype")
            return value
        raise _NotVectorizable(f"constant {expr!r}")

    def float_value(self, expr: Expression) -> _Value:
        value = self.rec(expr)
        if value.is_bool:
            raise _NotVectorizable("truth value used as a number")
        return value

    def bool_value(self, expr: Expression) -> _Value:
        value = self.rec(expr)
        if not value.is_bool:
            raise _NotVectorizable("number used as a truth value")
        return value

    def rec(self, expr: Expression) -> _Value:
        if not isinstance(expr, prim.ExpressionNode):
            return self.constant(self.number(expr))
        if isinstance(expr, prim.Subscript):
            return self.read(expr)
        if isinstance(expr, prim.Variable):
            name = self.values.get(expr.name)
            if name is not None:
                return _Value(name, self.nest.private.get(expr.name, False),
                              False)
            return self.read_scalar(expr.name)
        if isinstance(expr, (prim.Sum, prim.Product)):
            op = " + " if isinstance(expr, prim.Sum) else " * "
            parts = [self.float_value(c) for c in expr.children]
            return _Value("(" + op.join(p.code for p in parts) + ")", False,
                          all(p.uniform for p in parts))
        if isinstance(expr, prim.Quotient):
            num = self.float_value(expr.numerator)
            den = self.float_value(expr.denominator)
            return _Value(f"({num.code} / {den.code})", False,
                          num.uniform and den.uniform)
        if isinstance(expr, prim.Power):
            return self.power(expr)
        if isinstance(expr, prim.Call):
            return self.call(expr)
        if isinstance(expr, prim.Comparison):
            if expr.operator not in _COMPARISONS:
                raise _NotVectorizable(f"comparison {expr.operator}")
            left = self.float_value(expr.left)
            right = self.float_value(expr.right)
            if left.uniform and right.uniform:
                raise _NotVectorizable("comparison of constants")
            return _Value(f"({left.code} {expr.operator} {right.code})", True,
                          False)
        if isinstance(expr, (prim.LogicalAnd, prim.LogicalOr)):
            op = " && " if isinstance(expr, prim.LogicalAnd) else " || "
            parts = [self.bool_value(c) for c in expr.children]
            return _Value("(" + op.join(p.code for p in parts) + ")", True,
                          False)
        if isinstance(expr, (prim.BitwiseAnd, prim.BitwiseOr,
                             prim.BitwiseXor)):
            # of truth values (numpy's & | ^ of booleans): -1 and 0 in
            # vector code, 1 and 0 in scalar code, both closed under these
            op = {prim.BitwiseAnd: " & ", prim.BitwiseOr: " | ",
                  prim.BitwiseXor: " ^ "}[type(expr)]
            parts = [self.bool_value(c) for c in expr.children]
            return _Value("(" + op.join(p.code for p in parts) + ")", True,
                          False)
        if isinstance(expr, prim.LogicalNot):
            return _Value(f"(!{self.bool_value(expr.child).code})", True,
                          False)
        if isinstance(expr, prim.If):
            cond = self.bool_value(expr.condition)
            then = self.float_value(expr.then)
            else_ = self.float_value(expr.else_)
            return _Value(f"({cond.code} ? {self.widened(then)} "
                          f": {self.widened(else_)})", False, False)
        raise _NotVectorizable(type(expr).__name__)

    def read_scalar(self, name: str) -> _Value:
        """A 0-d array (e.g. the result of a full reduction), the same for
        all elements: read once."""
        value = self.scalars.get(name)
        if value is None:
            self.nest.check_array(name, scalar=True)
            self.nest.read.add(name)
            value = self.scalars[name] = self.temp(
                _Value(f"{name}[0]", False, True))
        return _Value(value, False, True)

    def read(self, expr: prim.Subscript) -> _Value:
        agg = expr.aggregate
        if isinstance(agg, prim.Variable) and expr.index_tuple == () \
                and agg.name not in self.values:
            return self.read_scalar(agg.name)
        if not isinstance(agg, prim.Variable) \
                or expr.index_tuple != self.nest.index:
            raise _NotVectorizable("not an access at the nest's indices")
        name = self.values.get(agg.name)
        if name is None:
            self.nest.check_array(agg.name)
            self.nest.read.add(agg.name)
            if self.lanes == 1:
                load = f"{agg.name}[{_ELEMENT}]"
            else:
                load = f"vload{self.lanes}(0, {agg.name} + {_BASE})"
            name = self.values[agg.name] = self.temp(_Value(load, False,
                                                            False))
        return _Value(name, False, False)

    def power(self, expr: prim.Power) -> _Value:
        exponent = expr.exponent
        if isinstance(exponent, prim.ExpressionNode):
            base = self.float_value(expr.base)
            exp = self.float_value(exponent)
            self.nest.transcendental = True
            return self.call_code("pow", [base, exp])
        if isinstance(exponent, (bool, np.bool_)) \
                or not isinstance(exponent, (int, float, np.integer,
                                             np.floating)):
            raise _NotVectorizable(f"exponent {exponent!r}")
        if exponent == 0:
            return self.constant(1.0)
        base = self.float_value(expr.base)
        if exponent == 1:
            return base
        if exponent == 2:
            return _Value(f"({base.code} * {base.code})", False, base.uniform)
        if isinstance(exponent, (float, np.floating)):
            self.nest.transcendental = True
            return self.call_code("pow", [base,
                                          self.constant(self.number(exponent))])
        # loopy's integer power: repeated squaring
        n = int(exponent)
        x = self.temp(base)
        if n < 0:
            one = self.constant(1.0).code
            x = self.temp(_Value(f"({one} / {x})", False, base.uniform))
            n = -n
        y: str | None = None
        while n > 1:
            if n % 2:
                y = x if y is None else self.temp(
                    _Value(f"({x} * {y})", False, base.uniform))
            x = self.temp(_Value(f"({x} * {x})", False, base.uniform))
            n //= 2
        return _Value(x if y is None else f"({x} * {y})", False, base.uniform)

    def call(self, expr: prim.Call) -> _Value:
        fn = expr.function
        name = fn.name if isinstance(fn, prim.Variable) else None
        if name in _PREDICATES and len(expr.parameters) == 1:
            arg = self.float_value(expr.parameters[0])
            if arg.uniform:
                raise _NotVectorizable("predicate of a constant")
            return _Value(f"{name}({arg.code})", True, False)
        if name is None or not (
                (name in UNARY_FUNCTIONS and len(expr.parameters) == 1)
                or (name in BINARY_FUNCTIONS and len(expr.parameters) == 2)):
            raise _NotVectorizable(f"call to {fn}")
        if name in TRANSCENDENTAL_FUNCTIONS:
            self.nest.transcendental = True
        return self.call_code(name, [self.float_value(p)
                                     for p in expr.parameters])

    def call_code(self, name: str, args: list[_Value]) -> _Value:
        uniform = all(a.uniform for a in args)
        fn = _C_NAMES.get(name, name)
        if uniform or self.lanes == 1:
            return _Value(f"{fn}({', '.join(a.code for a in args)})", False,
                          uniform)
        # OpenCL's functions of several arguments take one type for all
        texts = [self.widened(a) for a in args]
        w = self.lanes
        pocl = self.nest.workarounds
        if pocl and self.nest.dtype == np.float32 and name in FLOAT_VIA_DOUBLE:
            wide = ", ".join(f"convert_double{w}({t})" for t in texts)
            return _Value(f"convert_float{w}({fn}({wide}))", False, False)
        if pocl and self.nest.dtype == np.float64 and name in DOUBLE_IN_HALVES:
            names = [self.temp(_Value(t, False, False)) for t in texts]
            halves = [", ".join(f"{n}.{h}" for n in names)
                      for h in ("lo", "hi")]
            return _Value(f"(({self.vtype})({fn}({halves[0]}), "
                          f"{fn}({halves[1]})))", False, False)
        return _Value(f"{fn}({', '.join(texts)})", False, False)

    def store(self, insn: lp.Assignment) -> None:
        lhs = insn.assignee
        if isinstance(lhs, prim.Variable):
            is_bool = self.nest.private.get(lhs.name)
            if is_bool is None:
                raise _NotVectorizable(f"store to {lhs.name}")
            if is_bool:
                value = self.bool_value(insn.expression)
                self.values[lhs.name] = self.temp(value)
            else:
                value = self.float_value(insn.expression)
                self.values[lhs.name] = self.temp(
                    _Value(self.widened(value), False, False))
            return
        value = self.float_value(insn.expression)
        if not isinstance(lhs, prim.Subscript) \
                or not isinstance(lhs.aggregate, prim.Variable) \
                or lhs.index_tuple != self.nest.index:
            raise _NotVectorizable("not a store at the nest's indices")
        name = lhs.aggregate.name
        self.nest.check_array(name)
        self.nest.written.setdefault(name, None)
        # later reads of the array in the nest see the stored value
        stored = self.values[name] = self.temp(
            _Value(self.widened(value), False, False))
        if self.lanes == 1:
            self.lines.append(f"{name}[{_ELEMENT}] = {stored};")
        else:
            self.lines.append(f"vstore{self.lanes}({stored}, 0, "
                              f"{name} + {_BASE});")

# }}}


record_defaults(__name__, globals())

# vim: foldmethod=marker
