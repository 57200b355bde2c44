"""The :mod:`loopy` target of pytato's OpenCL programs.

:class:`PytatoPyOpenCLTarget` is :class:`loopy.PyOpenCLTarget` with one
change in the device code: a device kernel with more than
:data:`MAX_RESTRICT_ARGUMENTS` arguments declares its pointer arguments
without ``restrict``.

Device compilers take time superlinear in the number of ``restrict``
pointers of a kernel: each access carries alias information for every
other pointer: a kernel of hundreds of pointer arguments, one statement
each, took PoCL several times as long to compile at its first launch with
``restrict`` as without (``benchmarks/bench_compile_args.py`` times
this). Large graphs give such kernels: the device kernels of the
10 000-node random DAG of ``benchmarks/bench_codegen.py`` read up to a
few hundred global temporaries, and PoCL compiled them in about half the
time without ``restrict`` on them. Kernels of fewer arguments, where ``restrict``
costs little to compile and lets compilers keep loads in read-only
caches or reorder them, keep it. On GPUs, where ``restrict`` matters more
to the speed of kernels and less to compile times (NVIDIA's build of the
same DAG was only a little slower with ``restrict`` on its large
kernels), the limit is higher (:data:`GPU_MAX_RESTRICT_ARGUMENTS`).

Two more changes make integer floor division exact over the whole range
of each type, as in numpy: :mod:`loopy`'s ``loopy_floor_div`` and
``loopy_floor_div_pos_b`` move the numerator towards the divisor's sign
before C's truncating division, which overflows at the ends of the type
(``int8``: ``-128 // 2`` gave 63). Here the truncated quotient is
corrected instead (minus one where the remainder is nonzero and of the
other sign than the divisor), which cannot overflow; division by -1 of the
smallest value is guarded by the lowering, as numpy defines it.

.. autodata:: MAX_RESTRICT_ARGUMENTS
.. autodata:: GPU_MAX_RESTRICT_ARGUMENTS
.. autoclass:: PytatoPyOpenCLTarget
"""

from __future__ import annotations

from typing import Any

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from cgen import Const, Pointer
from constantdict import constantdict
from loopy.schedule.tools import get_subkernel_arg_info
from loopy.symbolic import Literal, TypeCast as LoopyTypeCast
from loopy.target.c.codegen.expression import CExpressionToCodeMapper
from loopy.target.pyopencl import (
    ExpressionToPyOpenCLCExpressionMapper,
    PyOpenCLCASTBuilder,
)
from loopy.types import LoopyType, NumpyType
from pymbolic.mapper.stringifier import (
    PREC_BITWISE_AND,
    PREC_BITWISE_OR,
    PREC_BITWISE_XOR,
    PREC_COMPARISON,
    PREC_NONE,
)

from pytato.analysis.graph_key import NotPersistentError
from pytato.target.loopy.build.cl_complex import COMPLEX_FUNCTIONS, ComplexFunction
from pytato.target.loopy.build.cl_math import OUT_OF_LINE_FUNCTIONS, MathFunction

# (defined there, without loopy: the keys of the program store use them)
from pytato.target.loopy.build.target_parameters import (
    GPU_MAX_RESTRICT_ARGUMENTS,
    MAX_RESTRICT_ARGUMENTS,
)
from pytato.target.loopy.store.program_store import _source_digest
from pytato.tuning import record_defaults


__all__ = ["GPU_MAX_RESTRICT_ARGUMENTS", "MAX_RESTRICT_ARGUMENTS",
           "PytatoPyOpenCLTarget"]




class _ComplexFromParts(lp.ScalarCallable):
    """``_pt_complex(re, im)``: the complex number of real part *re* and
    imaginary part *im* (pyopencl's ``cfloat_new``/``cdouble_new``), exact
    for infinities and NaNs, unlike ``re + 1j*im``."""

    def with_types(self, arg_id_to_dtype: Any, clbl_inf_ctx: Any) -> Any:
        dtypes = [arg_id_to_dtype.get(k) for k in (0, 1)]
        if any(dt is None for dt in dtypes):
            return self, clbl_inf_ctx
        real = np.result_type(*(dt.numpy_dtype for dt in dtypes))
        if real.kind != "f":
            real = np.dtype(np.float64)
        name = "cfloat_new" if real == np.float32 else "cdouble_new"
        cplx = NumpyType(np.result_type(real, np.complex64))
        return (self.copy(name_in_target=name,
                          arg_id_to_dtype=constantdict({
                              0: NumpyType(real), 1: NumpyType(real),
                              -1: cplx})),
                clbl_inf_ctx)


class _CExpressionToCodeMapper(CExpressionToCodeMapper):  # type: ignore[misc]
    """Parenthesizes what loopy prints with Python's precedence where C's
    differs:

    * ``&``, ``|`` and ``^`` inside other operations: in Python they bind
      tighter than comparisons, and loopy prints ``(a & 1) == 0`` as
      ``a & 1 == 0``, which C reads as ``a & (1 == 0)``;
    * comparisons inside comparisons: Python chains them, and loopy prints
      ``(a == b) >= (c != d)`` as ``a == b >= c != d``, which C reads as
      ``(a == (b >= c)) != d``;
    * a logical not as the operand of a comparison, ``(!a) < b``: C reads
      ``!a < b`` the same, but compilers warn of it.
    """

    def map_comparison(self, expr: Any, enclosing_prec: int) -> str:
        def operand(side: Any) -> str:
            # one level above comparisons: nested ones are parenthesized
            s = self.rec(side, PREC_COMPARISON + 1)
            return f"({s})" if isinstance(side, prim.LogicalNot) else s

        return self.parenthesize_if_needed(
            f"{operand(expr.left)} {expr.operator} {operand(expr.right)}",
            enclosing_prec, PREC_COMPARISON)

    def _bitwise(self, op: str, prec: int, expr: Any,
                 enclosing_prec: int) -> str:
        s = self.join_rec(f" {op} ", expr.children, prec)
        return f"({s})" if enclosing_prec > PREC_NONE else s

    def map_bitwise_and(self, expr: Any, enclosing_prec: int) -> str:
        return self._bitwise("&", PREC_BITWISE_AND, expr, enclosing_prec)

    def map_bitwise_or(self, expr: Any, enclosing_prec: int) -> str:
        return self._bitwise("|", PREC_BITWISE_OR, expr, enclosing_prec)

    def map_bitwise_xor(self, expr: Any, enclosing_prec: int) -> str:
        return self._bitwise("^", PREC_BITWISE_XOR, expr, enclosing_prec)


#: numpy's wrap-around to a signed narrow type of a value computed in
#: ``uint`` (:func:`_unsigned`). C leaves the conversion of an out-of-range
#: value to a signed type to the implementation, and signed arithmetic
#: may not overflow. Not inlined: NVIDIA's compiler (on an H100)
#: gave ``(long) (short) (-1 * x)`` for ``x = -32768`` as 32768, and so
#: it did with the wrap written as these functions inlined (with ``uint``
#: arithmetic), but not through a call.
_WRAP_SIGNED = {
    "char": "__attribute__((noinline)) char _pt_wrap_char(uint v)"
            " { int w = (int) (v & 0xffu); return (char) (w - ((w & 0x80) << 1)); }\n",
    "short": "__attribute__((noinline)) short _pt_wrap_short(uint v)"
             " { int w = (int) (v & 0xffffu);"
             " return (short) (w - ((w & 0x8000) << 1)); }\n",
}

_UINT32 = NumpyType(np.dtype(np.uint32))


def _unsigned(expr: Any) -> Any:
    """*expr* with its sums and products computed in ``uint`` (their other
    operands cast to ``uint``): the low bits of the result are those of
    the signed computation, without signed overflow."""
    if isinstance(expr, prim.Sum):
        return prim.Sum(tuple(_unsigned(c) for c in expr.children))
    if isinstance(expr, prim.Product):
        return prim.Product(tuple(_unsigned(c) for c in expr.children))
    return LoopyTypeCast(_UINT32, expr)


class _NarrowIntWrap(lp.ScalarCallable):
    """``_pt_narrow_int(x)``: *x* (of a ``char`` or ``short`` type in
    loopy's inference, computed in ``int`` by C) converted to that type as
    numpy wraps it: ``_pt_wrap_char``/``_pt_wrap_short`` of the value
    computed in ``uint`` for the signed types (see :data:`_WRAP_SIGNED`),
    OpenCL's
    ``convert_uchar``/``convert_ushort`` (modular, by C's rule for unsigned
    types) for the others."""

    def with_types(self, arg_id_to_dtype: Any, clbl_inf_ctx: Any) -> Any:
        dt = arg_id_to_dtype.get(0)
        if dt is None:
            return self, clbl_inf_ctx
        dtype = dt.numpy_dtype
        name = {"b": "convert_char", "i1": "_pt_wrap_char",
                "u1": "convert_uchar", "i2": "_pt_wrap_short",
                "u2": "convert_ushort"}.get(
                    "b" if dtype.kind == "b" else f"{dtype.kind}{dtype.itemsize}")
        if name is None:
            raise TypeError(f"_pt_narrow_int: unexpected dtype {dtype}")
        result = dt if dtype.kind != "b" else type(dt)(np.dtype(np.int8))
        return (self.copy(name_in_target=name,
                          arg_id_to_dtype=constantdict({0: dt, -1: result})),
                clbl_inf_ctx)

    def emit_call(self, expression_to_code_mapper: Any, expression: Any,
                  target: Any) -> Any:
        if not self.name_in_target.startswith("_pt_wrap_"):
            return super().emit_call(expression_to_code_mapper, expression,
                                     target)
        # the operand without the cast to the narrow type that the lowering
        # puts there for loopy's inference, computed in uint
        (arg,) = expression.parameters
        if isinstance(arg, LoopyTypeCast):
            arg = arg.child
        return prim.Variable(self.name_in_target)(
            expression_to_code_mapper.rec(_unsigned(arg), "i", _UINT32))

    def generate_preambles(self, target: Any) -> Any:
        if self.name_in_target.startswith("_pt_wrap_"):
            ctype = self.name_in_target[len("_pt_wrap_"):]
            yield (f"44_pytato_wrap_{ctype}", _WRAP_SIGNED[ctype])


#: ``-x`` of an ``int``, as a function that NVIDIA's compiler cannot see
#: through (see :class:`_NegatedInt`).
_NEG_INT = ("__attribute__((noinline)) int _pt_neg_int32(int x)"
            " { return (int) (0u - (uint) x); }\n")


class _NegatedInt(lp.ScalarCallable):
    """``_pt_neg_int32(x)``: ``-x`` of an ``int32`` value, with numpy's
    wrap-around, in a function that is not inlined. The lowering negates
    through it in the operands of ``int32`` maxima and minima
    (``amax(-b)``, ``amax(-2*b)``): NVIDIA's OpenCL compiler (driver
    580.159.04; H100 and H200) computed ``max(acc, -b[i])`` over the
    unrolled loop of a reduction wrongly (``amax(-b)`` of 0..11 gave 9),
    in every spelling of the negation, but not through a call."""

    def with_types(self, arg_id_to_dtype: Any, clbl_inf_ctx: Any) -> Any:
        dt = arg_id_to_dtype.get(0)
        if dt is None:
            return self, clbl_inf_ctx
        if dt.numpy_dtype != np.dtype(np.int32):
            raise TypeError(f"_pt_neg_int32: unexpected dtype {dt}")
        return (self.copy(name_in_target="_pt_neg_int32",
                          arg_id_to_dtype=constantdict({0: dt, -1: dt})),
                clbl_inf_ctx)

    def generate_preambles(self, target: Any) -> Any:
        yield ("44_pytato_neg_int32", _NEG_INT)


#: the definition of ``_pt_index64`` (see :class:`_Index64`)
_INDEX64 = "static inline long _pt_index64(long x) { return x; }\n"


class _Index64(lp.ScalarCallable):
    """``_pt_index64(i)``: the integer *i* as an ``int64``. The lowering
    passes the subscript components read from memory (entries of index
    arrays) of arrays of ``2**31`` or more elements through it, so that
    the flattened subscript is computed in 64 bits (see
    :mod:`pytato.target.loopy.lower.index_width`); a call, unlike a type
    cast, is left alone by loopy's affine simplification of subscripts."""

    def with_types(self, arg_id_to_dtype: Any, clbl_inf_ctx: Any) -> Any:
        dt = arg_id_to_dtype.get(0)
        if dt is None:
            return self, clbl_inf_ctx
        if not dt.is_integral():
            raise TypeError(f"_pt_index64: unexpected dtype {dt}")
        wide = NumpyType(np.dtype(np.int64))
        return (self.copy(name_in_target="_pt_index64",
                          arg_id_to_dtype=constantdict({0: wide, -1: wide})),
                clbl_inf_ctx)

    def generate_preambles(self, target: Any) -> Any:
        yield ("44_pytato_index64", _INDEX64)


_INT_C_TYPES = {"int8": "char", "uint8": "uchar", "int16": "short",
                "uint16": "ushort", "int32": "int", "uint32": "uint",
                "int64": "long", "uint64": "ulong"}

_FLOAT_TO_INT_BASE = r"""
    /* x86-64's conversions (cvttss2si, cvttsd2si): truncation, or the
       smallest integer for NaN, infinities and values out of range */
    static inline int _pt_{src}_to_int_x86({src} x)
    {{ return (x {lo32} && x < 0x1p31{f}) ? (int) x : INT_MIN; }}
    static inline long _pt_{src}_to_long_x86({src} x)
    {{ return (x >= -0x1p63{f} && x < 0x1p63{f}) ? (long) x : LONG_MIN; }}
    """

_FLOAT_TO_INT_BODY = {
    # narrow types: through int, wrapped (char and short by _WRAP_SIGNED,
    # uchar and ushort by C's rule)
    **{dst: "return _pt_wrap_{dst}(_pt_{src}_to_int_x86(x));"
       for dst in ("char", "short")},
    **{dst: "return ({dst}) _pt_{src}_to_int_x86(x);"
       for dst in ("uchar", "ushort")},
    "int": "return _pt_{src}_to_int_x86(x);",
    "uint": "return (uint) _pt_{src}_to_long_x86(x);",
    "long": "return _pt_{src}_to_long_x86(x);",
    # gcc's conversion to unsigned 64-bit integers
    "ulong": "return x >= 0x1p63{f} ? (ulong) _pt_{src}_to_long_x86(x - 0x1p63{f}) "
             "^ 0x8000000000000000UL : (ulong) _pt_{src}_to_long_x86(x);",
}


class _FloatToInt(lp.ScalarCallable):
    """``_pt_float_to_<int dtype>(x)``: the floating point *x* converted to
    the integer dtype as numpy converts it on x86-64 (OpenCL leaves
    conversions of NaN, infinities and values out of range undefined): see
    :ref:`numerical-semantics`."""

    def with_types(self, arg_id_to_dtype: Any, clbl_inf_ctx: Any) -> Any:
        dt = arg_id_to_dtype.get(0)
        if dt is None:
            return self, clbl_inf_ctx
        src = dt.numpy_dtype
        if src not in (np.float32, np.float64):
            raise lp.LoopyError(f"{self.name}: unexpected dtype {src}")
        dst = np.dtype(self.name[len("_pt_float_to_"):])
        return (self.copy(
            name_in_target=f"_pt_{src.name}_to_{_INT_C_TYPES[dst.name]}",
            arg_id_to_dtype=constantdict({0: dt, -1: NumpyType(dst)})), clbl_inf_ctx)

    def generate_preambles(self, target: Any) -> Any:
        src_c = {"float32": "float", "float64": "double"}[
            self.arg_id_to_dtype[0].numpy_dtype.name]
        dst_c = _INT_C_TYPES[self.arg_id_to_dtype[-1].numpy_dtype.name]
        # -2**31 - 1 is a double; no float lies between it and -2**31
        lo32 = "> -0x1p31 - 1.0" if src_c == "double" else ">= -0x1p31f"
        f = "f" if src_c == "float" else ""  # no double in float code
        yield (f"45_pytato_{src_c}_to_int",
               _FLOAT_TO_INT_BASE.format(src=src_c, lo32=lo32, f=f))
        if dst_c in _WRAP_SIGNED:
            yield (f"44_pytato_wrap_{dst_c}", _WRAP_SIGNED[dst_c])
        body = _FLOAT_TO_INT_BODY[dst_c].format(src=src_c, dst=dst_c, f=f)
        yield (f"46_pytato_{src_c}_to_{dst_c}",
               f"static inline {dst_c} {self.name_in_target}({src_c} x)"
               f" {{ {body} }}\n")


_GUARDED_SHIFT = {
    # numpy's shifts for every shift count (OpenCL takes the count modulo
    # the width): a count outside [0, bits) shifts every bit out, leaving
    # 0, or the sign (-1 for negative a) for a right shift
    "shl": """
        if (b < 0 || b >= {bits}) return 0;
        return ({ctype}) (a << b);""",
    "shr": """
        if (b < 0 || b >= {bits}) return ({signed} && a < 0) ? -1 : 0;
        return a >> b;""",
}


_GUARDED_DIVISION = {
    # numpy's integer // and % for every divisor (0 for a zero divisor, a
    # wrapped negation for -1), as functions: for operands holding a
    # reduction, which the lowering cannot repeat in conditions
    "floordiv": """
        if (b == 0) return 0;
        if ({signed} && b == ({ctype}) -1) return ({ctype}) -({utype}) a;
        {ctype} q = a / b;
        if ({signed} && a - q * b != 0 && ((a < 0) != (b < 0))) q = q - 1;
        return q;""",
    "remainder": """
        if (b == 0 || ({signed} && b == ({ctype}) -1)) return 0;
        {ctype} r = a % b;
        if ({signed} && r != 0 && ((r < 0) != (b < 0))) r = r + b;
        return r;""",
}


#: the bodies of :class:`_GuardedIntegerOp`'s functions, by operation
_GUARDED_INTEGER_OPS = {**_GUARDED_DIVISION, **_GUARDED_SHIFT}


class _GuardedIntegerOp(lp.ScalarCallable):
    """``_pt_int_floordiv(a, b)`` and ``_pt_int_remainder(a, b)``: numpy's
    integer ``//`` and ``%`` of *a* and *b* for every divisor;
    ``_pt_int_shl(a, b)`` and ``_pt_int_shr(a, b)``: its ``<<`` and ``>>``
    for every shift count."""

    def with_types(self, arg_id_to_dtype: Any, clbl_inf_ctx: Any) -> Any:
        dtypes = [arg_id_to_dtype.get(k) for k in (0, 1)]
        if any(dt is None for dt in dtypes):
            return self, clbl_inf_ctx
        dtype = np.result_type(*(dt.numpy_dtype for dt in dtypes))
        if dtype.kind == "b":
            dtype = np.dtype(np.int8)
        if dtype.name not in _INT_C_TYPES:
            raise lp.LoopyError(f"{self.name}: unexpected dtype {dtype}")
        op = self.name[len("_pt_int_"):]
        nt = NumpyType(dtype)
        return (self.copy(name_in_target=f"_pt_{op}_{dtype.name}",
                          arg_id_to_dtype=constantdict({0: nt, 1: nt, -1: nt})),
                clbl_inf_ctx)

    def generate_preambles(self, target: Any) -> Any:
        dtype = self.arg_id_to_dtype[-1].numpy_dtype
        ctype = _INT_C_TYPES[dtype.name]
        utype = _INT_C_TYPES["u" + dtype.name.lstrip("u")]
        op = self.name[len("_pt_int_"):]
        body = _GUARDED_INTEGER_OPS[op].format(
            ctype=ctype, utype=utype, signed=int(dtype.kind == "i"),
            bits=8 * dtype.itemsize)
        yield (f"46_pytato_{op}_{ctype}",
               f"static inline {ctype} {self.name_in_target}({ctype} a, "
               f"{ctype} b)\n{{{body}\n}}\n")


#: numpy's floating-point ``//`` and ``%`` (its ``npy_divmod``): the
#: remainder from ``fmod`` (exact, where ``a - b*floor(a/b)`` loses every
#: digit of a large *a*), given the divisor's sign; the quotient from the
#: remainder, snapped to the nearest integer; infinities and zeros as numpy
#: has them (``1 // -inf`` is -1, ``inf // 2`` NaN, ``1 % -inf`` -inf)
_FLOAT_DIVMOD = """
static inline {c} _pt_divmod_{c}({c} a, {c} b, {c} *floordiv)
{{
    {c} mod = fmod(a, b);
    if (b == 0) {{ *floordiv = a / b; return mod; }}
    {c} div = (a - mod) / b;
    if (mod != 0 || isnan(mod)) {{
        if ((b < 0) != (mod < 0)) {{ mod += b; div -= ({c}) 1; }}
    }}
    else
        mod = copysign(({c}) 0, b);
    if (div != 0 || isnan(div)) {{
        {c} fl = floor(div);
        if (div - fl > ({c}) 0.5) fl += ({c}) 1;
        *floordiv = fl;
    }}
    else
        *floordiv = copysign(({c}) 0, a / b);
    return mod;
}}
"""


class _FloatDivmod(lp.ScalarCallable):
    """``_pt_floordiv_<float dtype>(a, b)`` and
    ``_pt_remainder_<float dtype>(a, b)``: numpy's ``//`` and ``%`` of
    floating-point *a* and *b*, computed in the dtype of the name (the
    dtype of the pytato expression: a weak Python float operand does not
    widen a ``float32`` computation)."""

    def with_types(self, arg_id_to_dtype: Any, clbl_inf_ctx: Any) -> Any:
        op, dtype_name = self.name[len("_pt_"):].split("_")
        c = {"float32": "float", "float64": "double"}[dtype_name]
        nt = NumpyType(np.dtype(dtype_name))
        return (self.copy(name_in_target=f"_pt_{op}_{c}",
                          arg_id_to_dtype=constantdict({0: nt, 1: nt, -1: nt})),
                clbl_inf_ctx)

    def generate_preambles(self, target: Any) -> Any:
        c = {"float32": "float", "float64": "double"}[
            self.arg_id_to_dtype[-1].numpy_dtype.name]
        yield (f"45_pytato_divmod_{c}", _FLOAT_DIVMOD.format(c=c))
        if self.name_in_target.startswith("_pt_floordiv"):
            body = f"{c} q; _pt_divmod_{c}(a, b, &q); return q;"
        else:
            body = f"{c} q; return _pt_divmod_{c}(a, b, &q);"
        yield (f"46_{self.name_in_target}",
               f"static inline {c} {self.name_in_target}({c} a, {c} b)"
               f" {{ {body} }}\n")


def _calls_on_complex(callables_table: Any) -> bool:
    """Whether a function of the translation unit takes or returns a
    complex value (remembered for the last table: code generation asks
    once an instruction, and the table has an entry a function)."""
    last = _CALLS_ON_COMPLEX
    if last and last[0] is callables_table:
        return last[1]
    result = False
    for clbl in callables_table.values():
        dtypes = getattr(clbl, "arg_id_to_dtype", None) or {}
        if any(isinstance(dt, LoopyType) and dt.involves_complex()
               for dt in dtypes.values()):
            result = True
            break
    _CALLS_ON_COMPLEX[:] = [callables_table, result]
    return result


#: the last table of :func:`_calls_on_complex` and its answer
_CALLS_ON_COMPLEX: list[Any] = []


_FLOOR_DIV_DEFINITIONS = {
    # loopy's preamble names (its tags are "04_" + name: the first preamble
    # of a tag wins, and pytato's generator runs before loopy's)
    name: rf"""
        #define PYTATO_DEFINE_FLOOR_DIV(SUFFIX, TYPE) \
            static inline TYPE {name}_##SUFFIX(TYPE a, TYPE b) \
            {{ \
                TYPE q = a / b; \
                if (a - q * b != 0 && ((a < 0) != (b < 0))) \
                    q = q - 1; \
                return q; \
            }}
        LOOPY_CALL_WITH_INTEGER_TYPES(PYTATO_DEFINE_FLOOR_DIV)
        #undef PYTATO_DEFINE_FLOOR_DIV
        """
    for name in ("loopy_floor_div", "loopy_floor_div_pos_b")}


def _exact_floor_division(preamble_info: Any) -> Any:
    """Preambles replacing :mod:`loopy`'s floor divisions of signed
    integers by ones that cannot overflow (see the module documentation)."""
    c_names = {func.c_name for func in preamble_info.seen_functions}
    for name, body in _FLOOR_DIV_DEFINITIONS.items():
        if any(c.startswith(name + "_int") and c[len(name) + 1:] in
               ("int8", "int16", "int32", "int64") for c in c_names):
            yield f"04_{name}", body


def _sized_integer_type(dtype: LoopyType) -> LoopyType:
    """*dtype* with an integer numpy dtype replaced by the equal dtype of
    the sized scalar type (``int64`` for ``longlong``); any other as is."""
    if not isinstance(dtype, NumpyType):
        return dtype
    np_dtype = dtype.numpy_dtype
    if np_dtype.kind not in "iu":
        return dtype
    sized = np.dtype(f"{np_dtype.kind}{np_dtype.itemsize}")
    return dtype if sized.type is np_dtype.type else NumpyType(sized)


class _ExpressionToCExpressionMapper(
        ExpressionToPyOpenCLCExpressionMapper):  # type: ignore[misc]
    """loopy's mapper, printing ``uint32`` constants as OpenCL ``uint``
    literals (``7u``): loopy suffixes them ``ul``, a 64-bit ``ulong``, and
    OpenCL's overloaded built-ins refuse mixed arguments (``max(acc, b ==
    0 ? 0ul : a % b)`` on ``uint`` operands was ambiguous).

    The integer types it infers are those of the sized numpy scalar types:
    loopy names its integer ``%`` and ``//`` functions after the scalar
    type of the result (``loopy_mod_int64``) and defines them for
    ``int8`` to ``int64`` only, so that operands of dtype
    ``np.longlong`` (equal to ``int64``, but another scalar type) called
    ``loopy_mod_longlong``, which no preamble declares.
    """

    def infer_type(self, expr: Any) -> LoopyType:
        return _sized_integer_type(super().infer_type(expr))

    def map_constant(self, expr: Any, type_context: Any) -> Any:
        if isinstance(expr, np.uint32):
            return Literal(f"{int(expr)}u")
        return super().map_constant(expr, type_context)


class _CASTBuilder(PyOpenCLCASTBuilder):
    """:class:`loopy.target.pyopencl.PyOpenCLCASTBuilder` declaring the
    pointers of kernels with many arguments without ``restrict``, whose
    expressions use complex arithmetic wherever a complex value is
    computed."""

    _unrestricted = False

    def get_expression_to_c_expression_mapper(self, codegen_state: Any) -> Any:
        # loopy lowers complex products, quotients and sums to the functions
        # of pyopencl-complex.h only in kernels with a complex argument or
        # temporary; a complex value computed and consumed inside one
        # expression (``any(x.astype(complex64) * 1j)``, whose complex
        # product feeds real() and imag()) was printed as C's '*' on structs,
        # which OpenCL refuses. Such values pass through functions taking
        # or returning complex values.
        mapper = _ExpressionToCExpressionMapper(codegen_state)
        if not mapper.allow_complex \
                and _calls_on_complex(codegen_state.callables_table):
            mapper.allow_complex = True
        return mapper

    def get_function_declaration(self, codegen_state: Any,
                                 codegen_result: Any,
                                 schedule_index: int) -> Any:
        unrestricted = False
        if codegen_state.is_entrypoint:
            kernel = codegen_state.kernel
            name = kernel.linearization[schedule_index].kernel_name
            unrestricted = (len(get_subkernel_arg_info(kernel, name).passed_names)
                            > self.target.max_restrict_arguments)
        self._unrestricted = unrestricted
        try:
            return super().get_function_declaration(
                codegen_state, codegen_result, schedule_index)
        finally:
            self._unrestricted = False

    def preamble_generators(self) -> list[Any]:
        return [_exact_floor_division, *super().preamble_generators()]

    def get_c_expression_to_code_mapper(self) -> Any:
        return _CExpressionToCodeMapper()

    @property
    def known_callables(self) -> dict[str, Any]:
        callables = dict(super().known_callables)
        callables["_pt_complex"] = _ComplexFromParts(name="_pt_complex")
        callables["_pt_narrow_int"] = _NarrowIntWrap(name="_pt_narrow_int")
        callables["_pt_neg_int32"] = _NegatedInt(name="_pt_neg_int32")
        callables["_pt_index64"] = _Index64(name="_pt_index64")
        for op in _GUARDED_INTEGER_OPS:
            callables[f"_pt_int_{op}"] = _GuardedIntegerOp(
                name=f"_pt_int_{op}")
        for op in _GUARDED_DIVISION:
            for dtype in ("float32", "float64"):
                callables[f"_pt_{op}_{dtype}"] = _FloatDivmod(
                    name=f"_pt_{op}_{dtype}")
        for dtype in _INT_C_TYPES:
            callables[f"_pt_float_to_{dtype}"] = _FloatToInt(
                name=f"_pt_float_to_{dtype}")
        for name in COMPLEX_FUNCTIONS:
            callables[f"_pt_c{name}"] = ComplexFunction(name=f"_pt_c{name}")
        for name in OUT_OF_LINE_FUNCTIONS:
            callables[name] = MathFunction(name=name)
        return callables

    def _pointer(self, var: Any, is_written: bool) -> Any:
        decl = Pointer(self.wrap_decl_for_address_space(
            self.get_array_base_declarator(var), var.address_space))
        return decl if is_written else Const(decl)

    def get_array_arg_declarator(self, arg: Any, is_written: bool) -> Any:
        if not self._unrestricted:
            return super().get_array_arg_declarator(arg, is_written)
        return self._pointer(arg, is_written)

    def get_temporary_arg_decl(self, temp_var: Any, is_written: bool) -> Any:
        if (not self._unrestricted
                or temp_var.address_space != lp.AddressSpace.GLOBAL):
            return super().get_temporary_arg_decl(temp_var, is_written)
        return self._pointer(temp_var, is_written)


class PytatoPyOpenCLTarget(lp.PyOpenCLTarget):
    """:class:`loopy.PyOpenCLTarget` whose device kernels with more than
    *max_restrict_arguments* arguments declare their pointers without
    ``restrict`` (see the module documentation); otherwise the same code.
    The target of :class:`~pytato.target.loopy.LoopyPyOpenCLTarget`
    (which passes :data:`GPU_MAX_RESTRICT_ARGUMENTS` for GPUs).
    With *out_of_line_math*, real calls of the transcendental functions go
    through ``noinline`` wrappers (:mod:`pytato.target.loopy.build.cl_math`).

    .. attribute:: max_restrict_arguments
    .. attribute:: out_of_line_math
    """

    hash_fields = (*lp.PyOpenCLTarget.hash_fields, "max_restrict_arguments",
                   "out_of_line_math")
    comparison_fields = (*lp.PyOpenCLTarget.comparison_fields,
                         "max_restrict_arguments", "out_of_line_math")

    def __init__(self, *, max_restrict_arguments: int = MAX_RESTRICT_ARGUMENTS,
                 out_of_line_math: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_restrict_arguments = int(max_restrict_arguments)
        self.out_of_line_math = bool(out_of_line_math)

    def update_persistent_hash(self, key_hash: Any, key_builder: Any) -> None:
        """loopy's hash of the target's fields, and of pytato's sources:
        the code that the target's functions and AST builder emit is
        pytato's, so that loopy's on-disk caches (used where pytato's
        program store is off) do not give code of another version."""
        super().update_persistent_hash(key_hash, key_builder)
        try:
            key_builder.rec(key_hash, _source_digest())
        except NotPersistentError:  # no source files: as loopy hashes it
            pass

    def get_device_ast_builder(self) -> _CASTBuilder:
        return _CASTBuilder(self)


# (the constants above as written, for the program store's keys)
record_defaults(__name__, globals())
