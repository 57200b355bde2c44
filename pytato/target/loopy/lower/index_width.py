"""The integer type of a lowered kernel's index arithmetic.

loopy types the kernel's inames, work-item and group ids and the
arithmetic of array subscripts with the kernel's ``index_dtype`` (``int32``
unless told otherwise). An index of an array of ``2**31`` or more
elements, or a flattened index of a loop nest of that many iterations,
does not fit: the generated code wrapped around (``int _pt_out_dim0_idx =
32 * gid(0) + lid(0)`` for a ``(2**31 + 5,)`` array).

:func:`kernel_index_dtype` decides from the lowered graph: ``int64`` where
an array (argument or temporary) or the loop nest of an instruction can
hold :data:`INT32_INDEX_LIMIT` or more elements, or has a size not known
at code generation (a size parameter, a data-dependent reduction bound);
``int32`` otherwise, so that small kernels keep their 32-bit arithmetic.
The limit is half of ``2**31``: the default schedule rounds loops up to
whole work-groups and chunks, and the bound checks it generates add
offsets to the last index, so the values computed in a kernel go somewhat
past its largest index.

A 64-bit kernel still computes a subscript component read from memory (an
entry of an index array, of its own integer type) in that type: in the
flattened subscript ``65536 * i[k] + j[k]`` of a ``(65536, 65536)`` array
indexed by ``int32`` arrays the product wraps around.
:func:`widen_subscripts` passes such components through ``_pt_index64``
(an ``int64`` conversion defined by the OpenCL target: loopy's affine
simplification of subscripts cannot handle a type cast).

.. autodata:: INT32_INDEX_LIMIT
.. autofunction:: kernel_index_dtype
.. autofunction:: widen_subscripts
.. autofunction:: unify_index_dtypes
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from loopy.symbolic import IdentityMapper
from pymbolic.typing import Expression

from pytato.target.loopy.lower.index_arith import is_integer_constant


__all__ = ["INT32_INDEX_LIMIT", "kernel_index_dtype", "unify_index_dtypes",
           "widen_subscripts"]


#: The number of elements (of an array, or of the iterations of a loop
#: nest) from which a kernel's index arithmetic is 64-bit.
INT32_INDEX_LIMIT = 2**30


def _product(extents: Iterable[object]) -> int | None:
    """The product of *extents*, or *None* if one is not an integer
    constant."""
    result = 1
    for e in extents:
        if not is_integer_constant(e):
            return None
        result *= max(int(e), 0)
    return result


def _is_small(size: int | None) -> bool:
    return size is not None and size < INT32_INDEX_LIMIT


def _loop_nest_size(inames: Iterable[str],
                    bounds: Mapping[str, tuple[Expression, Expression]],
                    ) -> int | None:
    """The number of iterations of the loop nest over *inames*, or *None*
    where an iname has a bound that is not constant."""
    extents: list[object] = []
    for iname in inames:
        if iname not in bounds:
            return None
        lo, hi = bounds[iname]
        if not (is_integer_constant(lo) and is_integer_constant(hi)):
            return None
        extents.append(int(hi) - int(lo))
    return _product(extents)


def kernel_index_dtype(
        kernel_data: Iterable[lp.KernelArgument | lp.TemporaryVariable],
        instructions: Iterable[lp.InstructionBase | lp.SubstitutionRule],
        iname_bounds: Mapping[str, tuple[Expression, Expression]],
        ) -> np.dtype[np.signedinteger]:
    """``int64`` if an array of *kernel_data* or the loop nest (its loops
    and reduction loops) of an instruction of *instructions* can have
    :data:`INT32_INDEX_LIMIT` or more elements, or a size not known at code
    generation; ``int32`` otherwise. *iname_bounds* maps each iname to its
    bounds ``(lower, upper)`` (upper exclusive); an iname missing from it
    counts as unbounded. The reduction loops of a substitution rule count
    as nested in the largest loop nest of an instruction."""
    wide = np.dtype(np.int64)
    for arg in kernel_data:
        shape = getattr(arg, "shape", None)
        if shape is None or shape is lp.auto:
            continue
        if not _is_small(_product(shape)):
            return wide
    seen: set[frozenset[str]] = set()
    largest = 1
    rules: list[lp.SubstitutionRule] = []
    for insn in instructions:
        if isinstance(insn, lp.SubstitutionRule):
            rules.append(insn)
            continue
        inames = frozenset(insn.within_inames)
        if isinstance(insn, lp.MultiAssignmentBase):
            inames |= insn.reduction_inames()
        if inames in seen:
            continue
        seen.add(inames)
        size = _loop_nest_size(inames, iname_bounds)
        if not _is_small(size):
            return wide
        assert size is not None
        largest = max(largest, size)
    if rules:
        # (loopy at first use: pytato.lazy_imports)
        from loopy.symbolic import get_reduction_inames
        for rule in rules:
            size = _loop_nest_size(get_reduction_inames(rule.expression),
                                   iname_bounds)
            if size is None or not _is_small(size * largest):
                return wide
    return np.dtype(np.int32)


def _is_index_arithmetic(expr: object) -> bool:
    """Whether *expr* is integer arithmetic of variables (inames, size
    parameters) and constants, typed by loopy with the index type."""
    if isinstance(expr, prim.Variable) or is_integer_constant(expr):
        return True
    if isinstance(expr, (prim.Sum, prim.Product)):
        return all(_is_index_arithmetic(c) for c in expr.children)
    if isinstance(expr, (prim.FloorDiv, prim.Remainder)):
        return (_is_index_arithmetic(expr.numerator)
                and _is_index_arithmetic(expr.denominator))
    return False


class _SubscriptWidener(IdentityMapper[[]]):
    def __init__(self, wide_arrays: frozenset[str]) -> None:
        super().__init__()
        self.wide_arrays = wide_arrays

    def map_subscript(self, expr: prim.Subscript) -> Expression:
        result = super().map_subscript(expr)
        assert isinstance(result, prim.Subscript)
        agg = result.aggregate
        if not (isinstance(agg, prim.Variable) and agg.name in self.wide_arrays):
            return result
        index = result.index_tuple
        widened = tuple(
            i if _is_index_arithmetic(i)
            else prim.Call(prim.Variable("_pt_index64"), (i,))
            for i in index)
        if widened == index:
            return result
        return type(result)(agg, widened)


def widen_subscripts(
        instructions: list[lp.InstructionBase | lp.SubstitutionRule],
        kernel_data: Iterable[lp.KernelArgument | lp.TemporaryVariable],
        ) -> list[lp.InstructionBase | lp.SubstitutionRule]:
    """*instructions* with each subscript component of a multidimensional
    array of :data:`INT32_INDEX_LIMIT` or more elements (or of a size not
    known at code generation) that is not index arithmetic (an entry of an
    index array, a conditional) converted to ``int64`` (by a call of
    ``_pt_index64``)."""
    wide = frozenset(
        arg.name for arg in kernel_data
        if isinstance(shape := getattr(arg, "shape", None), tuple)
        and len(shape) > 1 and not _is_small(_product(shape)))
    if not wide:
        return instructions
    mapper = _SubscriptWidener(wide)
    result: list[lp.InstructionBase | lp.SubstitutionRule] = []
    for insn in instructions:
        if isinstance(insn, lp.SubstitutionRule):
            result.append(insn.copy(expression=mapper(insn.expression)))
        else:
            result.append(insn.with_transformed_expressions(mapper))
    return result


def unify_index_dtypes(t_unit: lp.TranslationUnit) -> lp.TranslationUnit:
    """*t_unit* with all its kernels (the entrypoint and its callees: the
    kernels of traced functions, of sparse products) given the widest index
    type among them: loopy requires a callee's to be its caller's."""
    kernels = {name: clbl.subkernel
               for name, clbl in t_unit.callables_table.items()
               if isinstance(clbl, lp.CallableKernel)}
    if len(kernels) < 2:
        return t_unit
    widest = max((k.index_dtype for k in kernels.values()),
                 key=lambda dt: dt.numpy_dtype.itemsize)
    for knl in kernels.values():
        if knl.index_dtype != widest:
            t_unit = t_unit.with_kernel(knl.copy(index_dtype=widest))
    return t_unit
