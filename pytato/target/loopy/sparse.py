"""Lowering of sparse matrix products to :mod:`loopy`.

The product ``y = A @ x`` of a :class:`~pytato.array.sparse.CSRMatrix`
``A`` with a dense ``x`` is one loop over rows, with a reduction over the
row's stored elements whose bounds are read from ``row_starts`` (a loopy
domain with data-dependent bounds)::

    for i:
        lo = row_starts[i]; hi = row_starts[i + 1]
        y[i, c] = sum(j in [lo, hi), values[j] * x[cols[j], c])

``x`` is stored first if the caller would compute it inline (it is read
once per stored element). The assumptions on the index arrays (see
:mod:`pytato.array.sparse`) are not checked unless the matrix is tagged
:class:`~pytato.array.sparse.CheckIndexBounds`: then a row with invalid
bounds, or an element with an out-of-range column, is not read and makes
its row of the result NaN (the smallest integer for integer results,
*True* for booleans).

.. autoclass:: SparseLoweringMixin
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from loopy.library.reduction import parse_reduction_op
from loopy.symbolic import Reduction as LoopyReduction, TypeCast as LoopyTypeCast

from pytato.array.shape import shape_component_to_expr
from pytato.array.sparse import CheckIndexBounds, CSRMatmul, CSRMatrix
from pytato.target.loopy.codegen import (
    ExpressionContext,
    ImplementedResult,
    StoredResult,
)


__all__ = ["SparseLoweringMixin"]


@dataclass(frozen=True)
class CSRParts:
    """The lowered index and value arrays of a CSR matrix."""

    values: ImplementedResult
    col_indices: ImplementedResult
    row_starts: ImplementedResult


def _poison(dtype: np.dtype[Any]) -> Any:
    if dtype.kind == "f":
        return prim.NaN(dtype.type)
    if dtype.kind == "c":
        real = np.empty(0, dtype).real.dtype
        return LoopyTypeCast(dtype, prim.NaN(real.type))
    if dtype.kind in "iu":
        return dtype.type(np.iinfo(dtype).min)
    return 1


def _declare_size_params(state: Any, components: list[Any]) -> None:
    """Add a parameter-only domain naming the size parameters of
    *components*: loopy takes the kernel's assumptions (``n >= 0`` for all
    size parameters) to be about domain parameters, and the sizes of a
    sparse product (e.g. the number of stored elements) need not appear in
    any loop bound."""
    from pymbolic.mapper.dependency import DependencyMapper

    names: set[str] = set()
    for c in components:
        if not isinstance(c, int):
            names.update(v.name for v in DependencyMapper()(
                shape_component_to_expr(c)))
    if names:
        state.domains.append(f"[{', '.join(sorted(names))}] -> {{ : }}")


class SparseLoweringMixin:
    """Lowers :class:`~pytato.array.sparse.CSRMatrix` (to the parts used by
    products) and :class:`~pytato.array.sparse.CSRMatmul` nodes. Mixed into
    :class:`~pytato.target.loopy.calls.CallCodeGenMapper`, whose
    ``stored_result`` and ``new_global_array`` it uses."""

    state: Any
    rec: Any
    stored_result: Any
    new_global_array: Any

    def map_csr_matrix(self, expr: CSRMatrix) -> CSRParts:
        return CSRParts(self.rec(expr.elem_values),
                        self.rec(expr.elem_col_indices),
                        self.rec(expr.row_starts))

    def map_csr_matmul(self, expr: CSRMatmul) -> ImplementedResult:
        s = self.state
        mat = expr.matrix
        parts = self.rec(mat)
        x = self.stored_result(expr.array)
        for c in expr.shape:
            if not isinstance(c, int):
                self.rec(c)
        check = bool(mat.tags_of_type(CheckIndexBounds))
        dtype = expr.dtype
        ctx = ExpressionContext()
        var = prim.Variable

        _declare_size_params(s, [*mat.shape, mat.nnz, *expr.array.shape])

        row = s.names("_pt_csr_row")
        s.add_domain([row], [0], [shape_component_to_expr(mat.shape[0])])
        idx_dtype = mat.row_starts.dtype
        lo, hi = s.names("_pt_csr_lo"), s.names("_pt_csr_hi")
        for name in (lo, hi):
            s.kernel_data[name] = lp.TemporaryVariable(
                name, idx_dtype, shape=(), address_space=lp.AddressSpace.PRIVATE)
        lo_raw = parts.row_starts.to_loopy_expression((var(row),), ctx)
        hi_raw = parts.row_starts.to_loopy_expression((var(row) + 1,), ctx)
        row_ok = None
        if check:
            row_ok = s.names("_pt_csr_row_ok")
            s.kernel_data[row_ok] = lp.TemporaryVariable(
                row_ok, np.int32, shape=(), address_space=lp.AddressSpace.PRIVATE)
            nnz = shape_component_to_expr(mat.nnz)
            row_ok_id = self._assign(var(row_ok), prim.LogicalAnd((
                prim.Comparison(0, "<=", lo_raw),
                prim.Comparison(lo_raw, "<=", hi_raw),
                prim.Comparison(hi_raw, "<=", nnz))), {row}, ctx)
            ctx.depends_on.add(row_ok_id)
            lo_raw = prim.If(var(row_ok), lo_raw, 0)
            hi_raw = prim.If(var(row_ok), hi_raw, 0)
        bounds_ids = {self._assign(var(lo), lo_raw, {row}, ctx),
                      self._assign(var(hi), hi_raw, {row}, ctx)}

        out_inames = [row]
        if expr.ndim == 2:
            col = s.names("_pt_csr_col")
            s.add_domain([col], [0], [shape_component_to_expr(expr.shape[1])])
            out_inames.append(col)
        nz = s.names("_pt_csr_nz")
        s.add_domain([nz], [var(lo)], [var(hi)])

        column = parts.col_indices.to_loopy_expression((var(nz),), ctx)
        x_index = (column, *(var(i) for i in out_inames[1:]))
        value = parts.values.to_loopy_expression((var(nz),), ctx)
        x_value = x.to_loopy_expression(x_index, ctx)
        if dtype.kind == "b":
            term: Any = prim.LogicalAnd((value, x_value))
            op = parse_reduction_op("any")
        else:
            if mat.dtype != dtype:
                value = LoopyTypeCast(dtype, value)
            if expr.array.dtype != dtype:
                x_value = LoopyTypeCast(dtype, x_value)
            term = prim.Product((value, x_value))
            op = parse_reduction_op("sum")
        if check:
            ncols = shape_component_to_expr(mat.shape[1])
            term = prim.If(prim.LogicalAnd((
                prim.Comparison(0, "<=", column),
                prim.Comparison(column, "<", ncols))), term, _poison(dtype))
        rhs: Any = LoopyReduction(op, (nz,), term, allow_simultaneous=False)
        if row_ok is not None:
            rhs = prim.If(var(row_ok), rhs, _poison(dtype))

        name = self.new_global_array(expr, s.loopy_shape(expr), dtype)
        ctx.depends_on.update(bounds_ids)
        insn_id = self._assign(
            var(name)[tuple(var(i) for i in out_inames)], rhs,
            set(out_inames), ctx)
        return StoredResult(name, expr.ndim, insn_id)

    def _assign(self, lhs: Any, rhs: Any, inames: set[str],
                ctx: ExpressionContext) -> str:
        s = self.state
        insn_id = s.names("_pt_csr_insn", try_bare=False)
        s.instructions.append(lp.Assignment(
            lhs, rhs, id=insn_id, within_inames=frozenset(inames),
            depends_on=frozenset(sorted(ctx.depends_on))))
        return insn_id
