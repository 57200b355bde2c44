"""Lowering of sparse matrix products to :mod:`loopy`.

The product ``y = A @ x`` of a :class:`~pytato.array.sparse.CSRMatrix`
``A`` with a dense ``x`` is a call of a callee kernel (one per combination
of dtypes, dimensionality and checking, shared by all products of that
kind) computing one row per work-item (sequentially when called inside
a function's callee kernel), with a reduction over the row's
stored elements whose bounds are read from ``row_starts`` (a loopy domain
with data-dependent bounds)::

    for i (parallel):
        lo = row_starts[i]; hi = row_starts[i + 1]
        for c:
            y[i, c] = sum(j in [lo, hi), values[j] * x[col_indices[j], c])

Being a kernel of its own keeps this loop structure (several instructions
sharing the row loop and its private bounds) out of the way of the
entrypoint's schedule (:mod:`pytato.target.loopy.schedule.default`). Operands are
stored by the caller, so each element of ``x`` is computed once however
many stored elements refer to it.

The assumptions on the index arrays (see :mod:`pytato.array.sparse`) are
checked in generated code when the index arrays are not constant data
(:func:`~pytato.make_csr_matrix` checks constant ones) or the matrix is
tagged :class:`~pytato.array.sparse.CheckIndexBounds`: then a row whose
bounds are invalid, or that has an element with an out-of-range column, is not
read out of bounds and its row of the result is NaN (the smallest integer
for integer results, *True* for booleans).

.. autodata:: ROWS_PER_GROUP
.. autofunction:: make_csr_matmul_kernel
.. autoclass:: SparseLoweringMixin
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from loopy.library.reduction import parse_reduction_op
from loopy.symbolic import Reduction as LoopyReduction, TypeCast as LoopyTypeCast
from pymbolic.typing import ArithmeticExpression, Expression

from pytato.array.inputs import DataWrapper
from pytato.array.sparse import CheckIndexBounds, CSRMatmul, CSRMatrix
from pytato.target.loopy.lower.callees import CallBuildState, Callee, _interface
from pytato.target.loopy.lower.graph import (
    CodeGenResult,
    ImplementedResult,
    StoredResult,
    _filter_tags,
)
from pytato.tuning import record_defaults


if TYPE_CHECKING:
    from pytools.tag import Tag

    from pytato.transform.mappers import ArrayOrNames


__all__ = ["ROWS_PER_GROUP", "SparseLoweringMixin", "make_csr_matmul_kernel"]

ROWS_PER_GROUP = 32
"""Rows of a sparse product computed by one work-group (one row per
work-item)."""


def _poison(dtype: np.dtype[Any]) -> Expression:
    if dtype.kind == "f":
        return prim.NaN(dtype.type)
    if dtype.kind == "c":
        real = np.empty(0, dtype).real.dtype
        return LoopyTypeCast(dtype, prim.NaN(real.type))
    if dtype.kind in "iu":
        return dtype.type(np.iinfo(dtype).min)
    return 1


def make_csr_matmul_kernel(name: str, *, values_dtype: np.dtype[Any],
                           col_dtype: np.dtype[Any], starts_dtype: np.dtype[Any],
                           x_dtype: np.dtype[Any], out_dtype: np.dtype[Any],
                           matrix_rhs: bool, check: bool,
                           target: lp.TargetBase, parallel: bool = True,
                           reduction_iname: str = "j",
                           reduction_tags: frozenset[Tag] = frozenset(),
                           ) -> lp.LoopKernel:
    """The callee kernel *name* computing ``y = A @ x`` for a CSR matrix
    ``A`` (arguments ``nrows, ncols, nnz[, nvec], row_starts, values,
    col_indices, x`` and the output ``y``); *matrix_rhs* for a 2-d ``x`` of
    *nvec* columns; *check* to check the index arrays (see the module
    documentation). The reduction over a row's elements runs over the iname
    *reduction_iname*, tagged with *reduction_tags*
    (:attr:`~pytato.array.sparse.CSRMatmul.reduction_var` and the tags of
    :attr:`~pytato.array.sparse.CSRMatmul.reduction_descr`)."""
    var = prim.Variable
    i, c, j = var("i"), var("c"), var(reduction_iname)
    lo, hi, ok = var("lo"), var("hi"), var("row_ok")
    domains = ["[nrows] -> { [i] : 0 <= i < nrows }"]
    if matrix_rhs:
        domains.append("[nvec] -> { [c] : 0 <= c < nvec }")
    domains.append(f"[lo, hi] -> {{ [{reduction_iname}] : "
                   f"lo <= {reduction_iname} < hi }}")
    out_inames = frozenset({"i", "c"} if matrix_rhs else {"i"})

    lo_raw: Expression = var("row_starts")[i]
    hi_raw: Expression = var("row_starts")[i + 1]
    insns = []
    bounds_deps = frozenset({"lo", "hi"})
    if check:
        insns.append(lp.Assignment(ok, prim.LogicalAnd((
            prim.Comparison(0, "<=", lo_raw),
            prim.Comparison(lo_raw, "<=", hi_raw),
            prim.Comparison(hi_raw, "<=", var("nnz")))),
            id="ok", within_inames=frozenset({"i"})))
        lo_raw = prim.If(ok, lo_raw, 0)
        hi_raw = prim.If(ok, hi_raw, 0)
        bounds_deps = frozenset({"lo", "hi", "ok"})
    dep_ok = frozenset({"ok"}) if check else frozenset()
    insns.append(lp.Assignment(lo, lo_raw, id="lo", depends_on=dep_ok,
                               within_inames=frozenset({"i"})))
    insns.append(lp.Assignment(hi, hi_raw, id="hi", depends_on=dep_ok,
                               within_inames=frozenset({"i"})))

    column = var("col_indices")[j]
    value: ArithmeticExpression = var("values")[j]
    x_value: ArithmeticExpression = var("x")[
        (column, c) if matrix_rhs else column]
    if out_dtype.kind == "b":
        term: Expression = prim.LogicalAnd((value, x_value))
        op = parse_reduction_op("any")
    else:
        if values_dtype != out_dtype:
            value = LoopyTypeCast(out_dtype, value)
        if x_dtype != out_dtype:
            x_value = LoopyTypeCast(out_dtype, x_value)
        term = prim.Product((value, x_value))
        op = parse_reduction_op("sum")
    assert op is not None  # names of loopy's operations
    if check:
        term = prim.If(prim.LogicalAnd((
            prim.Comparison(0, "<=", column),
            prim.Comparison(column, "<", var("ncols")))), term,
            _poison(out_dtype))
    rhs: Expression = LoopyReduction(op, (reduction_iname,), term,
                              allow_simultaneous=False)
    if check:
        rhs = prim.If(ok, rhs, _poison(out_dtype))
    lhs = var("y")[(i, c) if matrix_rhs else i]
    insns.append(lp.Assignment(lhs, rhs, id="product", depends_on=bounds_deps,
                               within_inames=out_inames))

    def arr(n: str, dtype: np.dtype[Any], shape: tuple[Expression, ...],
            out: bool = False
            ) -> lp.ArrayArg:
        return lp.ArrayArg(n, dtype, shape=shape,
                           address_space=lp.AddressSpace.GLOBAL,
                           is_input=not out, is_output=out)

    vec = ("nvec",) if matrix_rhs else ()
    data: list[lp.ValueArg | lp.ArrayArg | lp.TemporaryVariable] = [
        lp.ValueArg("nrows", np.int64), lp.ValueArg("ncols", np.int64),
        lp.ValueArg("nnz", np.int64),
        *([lp.ValueArg("nvec", np.int64)] if matrix_rhs else []),
        arr("row_starts", starts_dtype, (var("nrows") + 1,)),
        arr("values", values_dtype, (var("nnz"),)),
        arr("col_indices", col_dtype, (var("nnz"),)),
        arr("x", x_dtype, (var("ncols"), *(var(v) for v in vec))),
        arr("y", out_dtype, (var("nrows"), *(var(v) for v in vec)), out=True),
        lp.TemporaryVariable("lo", starts_dtype, shape=(),
                             address_space=lp.AddressSpace.PRIVATE),
        lp.TemporaryVariable("hi", starts_dtype, shape=(),
                             address_space=lp.AddressSpace.PRIVATE),
    ]
    if check:
        data.append(lp.TemporaryVariable(
            "row_ok", np.int32, shape=(), address_space=lp.AddressSpace.PRIVATE))
    # no assumptions: loopy would take them over the row bounds (lo, hi)
    # too, which the callee's grid size then would depend on
    t_unit = lp.make_function(domains, insns, data, name=name, target=target,
                              lang_version=(2018, 2))
    knl = t_unit[name]
    if reduction_tags:
        knl = knl.copy(inames={
            n: (iname.tagged(reduction_tags) if n == reduction_iname else iname)
            for n, iname in knl.inames.items()})
    if not parallel:
        return knl
    return lp.split_iname(knl, "i", ROWS_PER_GROUP, outer_tag="g.0",
                          inner_tag="l.0")


class SparseLoweringMixin:
    """Lowers :class:`~pytato.array.sparse.CSRMatmul` nodes to calls of
    :func:`make_csr_matmul_kernel` callees. Mixed into
    :class:`~pytato.target.loopy.lower.calls.CallCodeGenMapper`, whose
    ``emit_call`` and build state
    (:class:`~pytato.target.loopy.lower.callees.CallBuildState`) it uses."""

    build_context: CallBuildState
    emit_call: Callable[..., dict[str, StoredResult]]
    if TYPE_CHECKING:
        def rec(self, expr: ArrayOrNames) -> CodeGenResult: ...

    def map_csr_matrix(self, expr: CSRMatrix) -> None:
        # only products use a CSR matrix: they lower its parts
        for a in (expr.elem_values, expr.elem_col_indices, expr.row_starts):
            self.rec(a)

    def csr_matmul_callee(self, expr: CSRMatmul) -> Callee:
        """The callee kernel for products like *expr*, built on first use."""
        mat = expr.matrix
        # index data known only at run time is always checked: generated
        # code never reads outside an array (constant data was checked by
        # make_csr_matrix)
        check = bool(mat.tags_of_type(CheckIndexBounds)) or not (
            isinstance(mat.elem_col_indices, DataWrapper)
            and isinstance(mat.row_starts, DataWrapper))
        bc = self.build_context
        # parallel callees can only be called from the entrypoint
        parallel = bc.depth == 0
        redn_tags = _filter_tags(expr.reduction_descr.tags,
                                 bc.axis_tag_t_to_not_propagate)
        key = ("csr_matmul", mat.elem_values.dtype, mat.elem_col_indices.dtype,
               mat.row_starts.dtype, expr.array.dtype, expr.dtype,
               expr.array.ndim == 2, check, parallel, expr.reduction_var,
               redn_tags)
        have = bc.other_callees.get(key)
        if have is not None:
            return have
        name = bc.callee_names("_pt_csr_matmul")
        knl = make_csr_matmul_kernel(
            name, values_dtype=mat.elem_values.dtype,
            col_dtype=mat.elem_col_indices.dtype,
            starts_dtype=mat.row_starts.dtype, x_dtype=expr.array.dtype,
            out_dtype=expr.dtype, matrix_rhs=expr.array.ndim == 2,
            check=check, target=bc.target, parallel=parallel,
            reduction_iname=expr.reduction_var, reduction_tags=redn_tags)
        inputs, outputs = _interface(knl, {"y": "y"})
        callee = Callee(name, knl, inputs, outputs)
        bc.other_callees[key] = callee
        return callee

    def map_csr_matmul(self, expr: CSRMatmul) -> ImplementedResult:
        mat = expr.matrix
        # pytato's mappers dispatch any graph node (CSR matrices too), their
        # rec is typed for arrays and results only
        self.rec(mat)  # type: ignore[arg-type]
        callee = self.csr_matmul_callee(expr)
        values = {"nrows": mat.shape[0], "ncols": mat.shape[1], "nnz": mat.nnz}
        if expr.array.ndim == 2:
            values["nvec"] = expr.array.shape[1]
        arrays = {"row_starts": mat.row_starts, "values": mat.elem_values,
                  "col_indices": mat.elem_col_indices, "x": expr.array}
        return self.emit_call(
            callee, values, arrays, {"y": expr}, {})["y"]


# (the constants above as written, for the program store's keys)
record_defaults(__name__, globals())
