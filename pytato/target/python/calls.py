"""Calls and sparse products in the Python targets.

Mixed into :class:`~pytato.target.python.codegen.PythonCodeGenMapper`:

* results of calls (:class:`~pytato.function.NamedCallResult`) are
  generated inlined (the Python targets have no functions of their own);
* calls of user loopy kernels (:class:`~pytato.loopy.LoopyCall`) cannot run
  and raise :class:`~pytato.diagnostic.UnsupportedByTargetError`;
* CSR products (:class:`~pytato.array.sparse.CSRMatmul`) call
  :func:`csr_matmul` in generated code.

Foreign scalar functions are called through the Python implementations
registered with them (see
:func:`pytato.scalar_functions.python_implementation_code`).

.. autoclass:: PythonCallsMixin
.. autofunction:: csr_matmul
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pytato.diagnostic import IndexOutOfBoundsError, UnsupportedByTargetError


__all__ = ["PythonCallsMixin", "csr_matmul"]


class PythonCallsMixin:
    """Code generation for calls and sparse products (see the module
    documentation)."""

    np: str
    rec: Any
    _assign: Any

    def map_named_call_result(self, expr: Any) -> str:
        from pytato.transform.calls import inline_call_result
        return self(inline_call_result(expr))  # type: ignore[no-any-return,operator]

    def map_call(self, expr: Any) -> None:
        return None

    def map_loopy_call(self, expr: Any) -> None:
        raise UnsupportedByTargetError(
            f"the call of loopy kernel '{expr.entrypoint}' cannot run on a "
            "Python target; use the loopy target (pytato.generate_loopy)")

    def map_loopy_call_result(self, expr: Any) -> str:
        return self.map_loopy_call(expr._container)  # type: ignore[func-returns-value]

    def map_csr_matrix(self, expr: Any) -> tuple[str, str, str]:
        return (self.rec(expr.elem_values), self.rec(expr.elem_col_indices),
                self.rec(expr.row_starts))

    def map_csr_matmul(self, expr: Any) -> str:
        from pytato.array.sparse import CheckIndexBounds

        vals, cols, starts = self.rec(expr.matrix)
        x = self.rec(expr.array)
        shape = self.shape_code(expr.matrix.shape)  # type: ignore[attr-defined]
        check = bool(expr.matrix.tags_of_type(CheckIndexBounds))
        helper = "__import__('pytato.target.python.calls', fromlist=['_'])"
        return self._assign(  # type: ignore[no-any-return]
            expr, f"{helper}.csr_matmul({self.np}, {vals}, {cols}, {starts}, "
                  f"{x}, {shape}, {np.dtype(expr.dtype).str!r}, {check})")


def _check_csr(cols: Any, starts: Any, shape: tuple[int, int]) -> None:
    cols = np.asarray(cols)
    starts = np.asarray(starts)
    nnz = cols.shape[0]
    if starts.size and (starts[0] < 0 or starts[-1] > nnz
                        or np.any(np.diff(starts) < 0)):
        raise IndexOutOfBoundsError(
            "CSR matrix: 'row_starts' must be non-decreasing within "
            f"[0, {nnz}], got {starts}")
    if cols.size and (cols.min() < 0 or cols.max() >= shape[1]):
        raise IndexOutOfBoundsError(
            f"CSR matrix: column index out of bounds for shape {shape}: "
            f"found {cols.min() if cols.min() < 0 else cols.max()}")


def csr_matmul(xp: Any, values: Any, cols: Any, starts: Any, x: Any,
               shape: tuple[int, int], dtype: str, check: bool) -> Any:
    """The product of the CSR matrix (*values*, *cols*, *starts*) of
    *shape* with *x*, computed with the array module *xp* (:mod:`numpy` or
    :mod:`jax.numpy`) in *dtype*. With *check*, the index arrays are
    validated first when they are concrete."""
    dt = np.dtype(dtype)
    if check:
        try:
            host = (np.asarray(cols), np.asarray(starts))
        except Exception:  # traced (jax.jit): cannot be checked
            host = None
        if host is not None:
            _check_csr(*host, shape)
    nrows = shape[0]
    nnz = cols.shape[0]
    k = xp.arange(nnz)
    rows = xp.searchsorted(starts, k, side="right") - 1
    valid = (k >= starts[0]) & (k < starts[nrows]) if nrows else k < 0
    rows = xp.clip(rows, 0, max(nrows - 1, 0))
    work = np.dtype(np.int64) if dt.kind == "b" else dt
    safe_cols = xp.clip(cols, 0, max(shape[1] - 1, 0))
    gathered = xp.asarray(x)[safe_cols]
    vals = xp.asarray(values).astype(work)
    if gathered.ndim == 2:
        vals = vals[:, None]
        mask = valid[:, None]
    else:
        mask = valid
    contrib = xp.where(mask, vals * gathered.astype(work), 0).astype(work)
    out = xp.zeros((nrows, *gathered.shape[1:]), dtype=work)
    if hasattr(out, "at"):  # jax
        out = out.at[rows].add(contrib)
    else:
        np.add.at(out, rows, contrib)
    return (out != 0) if dt.kind == "b" else out
