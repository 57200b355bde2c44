"""Calls and sparse products in the Python targets.

Mixed into :class:`~pytato.target.python.codegen.PythonCodeGenMapper`:

* each :class:`~pytato.function.FunctionDefinition` reached by the graph
  (also through the bodies of other functions) becomes one Python function
  ``_pt_fn_<identifier>`` of the generated module, emitted once however
  many call sites it has; a :class:`~pytato.function.Call` calls it with
  keyword arguments (array parameters get the caller's values, size
  parameters Python integer expressions in the caller's sizes), and a
  :class:`~pytato.function.NamedCallResult` reads the result by name.
  The function returns its array (single-array functions), a tuple or a
  dict of arrays, as the traced Python function did. With ``jax.jit``,
  only the entrypoint is jitted: the functions are simply called (and
  traced as part of it);
* calls of user loopy kernels (:class:`~pytato.loopy.LoopyCall`) cannot run
  and raise :class:`~pytato.diagnostic.UnsupportedByTargetError`;
* CSR products (:class:`~pytato.array.sparse.CSRMatmul`) call
  :func:`csr_matmul` in generated code.

Foreign scalar functions are called through the Python implementations
registered with them (see
:func:`pytato.scalar_functions.python_implementation_code`).

.. autoclass:: PythonFunctionCollector
.. autoclass:: PythonCallsMixin
.. autofunction:: nodes_with_function_bodies
.. autofunction:: csr_matmul
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from pytato.array.base import topological_order
from pytato.array.inputs import SizeParam
from pytato.array.sparse import CheckIndexBounds
from pytato.diagnostic import IndexOutOfBoundsError, UnsupportedByTargetError
from pytato.function import Call, ReturnType
from pytato.tags import Named, PrefixNamed
from pytato.target.python.scalar_codegen import is_safe_identifier


if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType

    import numpy.typing as npt

    from pytato.array.base import Array, GraphNode, ShapeComponent
    from pytato.array.sparse import CSRMatmul, CSRMatrix
    from pytato.function import Call, FunctionDefinition, NamedCallResult
    from pytato.loopy import LoopyCall, LoopyCallResult
    from pytato.target.python.numpy_like import PythonTarget


__all__ = ["PythonCallsMixin", "PythonFunctionCollector", "csr_matmul",
           "nodes_with_function_bodies"]


def _input_var_name(name: str, used: set[str]) -> str:
    """A variable name for the input *name* that is a safe identifier not
    in *used* (to which it is added)."""
    var = name if is_safe_identifier(name) else f"_pt_in_{name}"
    while var in used:
        var = "_" + var
    used.add(var)
    return var


class PythonFunctionCollector:
    r"""The Python functions generated for the
    :class:`~pytato.function.FunctionDefinition`\ s of one module.

    .. attribute:: blocks

        The source of each function (``def`` line and indented body), in
        the order their generation finished (callees before callers).

    .. automethod:: name_for
    .. automethod:: parameters_of
    """

    def __init__(self, reserved: set[str]) -> None:
        #: names that functions must not take (module level names)
        self.reserved = reserved
        self.blocks: list[str] = []
        self._names: dict[FunctionDefinition, str] = {}
        self._params: dict[FunctionDefinition, dict[str, str]] = {}

    def _fresh_function_name(self, identifier: object) -> str:
        base = "_pt_fn_" + re.sub(r"\W", "_", str(identifier))
        name = base
        k = 1
        while name in self.reserved:
            name = f"{base}_{k}"
            k += 1
        self.reserved.add(name)
        return name

    def parameters_of(self, fdef: FunctionDefinition) -> dict[str, str]:
        """A mapping from the names of the parameters of *fdef* that its
        body uses to their variable names in the generated function (in
        parameter order)."""
        params = self._params.get(fdef)
        if params is None:
            # callee scope: only module level names must not be shadowed
            # (future function names start with _pt_fn_, see below)
            used = {"_pt_np", "_pt_jnp", *self._names.values()}
            params = {}
            for name in sorted(fdef.parameters):
                if fdef.get_placeholder(name) is None:
                    continue
                var = _input_var_name(
                    f"_pt_in_{name}" if name.startswith("_pt_fn_") else name,
                    used)
                params[name] = var
            self._params[fdef] = params
        return params

    def name_for(self, fdef: FunctionDefinition, mapper_class: type,
                 target: PythonTarget) -> str:
        """The name of the generated function for *fdef*, generating it
        (with a new instance of *mapper_class*) on first use."""
        name = self._names.get(fdef)
        if name is not None:
            return name
        name = self._fresh_function_name(fdef.identifier)
        self._names[fdef] = name
        params = self.parameters_of(fdef)

        mapper = mapper_class(target, params, {}, functions=self)
        results = mapper.generate_body(list(fdef.returns.values()))
        if fdef.return_type == ReturnType.ARRAY:
            ret = results[0]
        elif fdef.return_type == ReturnType.TUPLE_OF_ARRAYS:
            ret = ("(" + ", ".join(results) + ("," if len(results) == 1 else "")
                   + ")")
        else:
            ret = "{" + ", ".join(
                f"{k!r}: {r}" for k, r in zip(fdef.returns, results,
                                              strict=True)) + "}"
        body = [*mapper.lines, f"return {ret}"]
        self.blocks.append(
            f"def {name}({', '.join(params.values())}):\n"
            + "".join(f"    {line}\n" for line in body))
        return name


def nodes_with_function_bodies(roots: list[GraphNode]) -> list[GraphNode]:
    """The nodes of the graph of *roots* and of the bodies of all functions
    it calls (also through other functions), each once."""

    nodes: list[GraphNode] = []
    seen_fdefs: set[FunctionDefinition] = set()
    pending = [list(roots)]
    while pending:
        for node in topological_order(pending.pop()):
            nodes.append(node)
            if isinstance(node, Call) and node.function not in seen_fdefs:
                seen_fdefs.add(node.function)
                pending.append(list(node.function.returns.values()))
    return nodes


class PythonCallsMixin:
    """Code generation for calls and sparse products (see the module
    documentation)."""

    # provided by the mapper class the mixin is combined with
    np: str
    # a node's variable name (a CSR matrix's: its three arrays' names)
    rec: Callable[[GraphNode], Any]
    target: PythonTarget
    functions: PythonFunctionCollector
    _assign: Callable[[Array, str], str]
    fresh_name: Callable[[str], str]
    size_code: Callable[[ShapeComponent], str]

    def map_call(self, expr: Call) -> str:
        fdef = expr.function
        fn_name = self.functions.name_for(fdef, type(self), self.target)
        args = []
        for pname, var in self.functions.parameters_of(fdef).items():
            binding = expr.bindings[pname]
            if isinstance(fdef.get_placeholder(pname), SizeParam):
                code = self.size_code(binding)
            else:
                code = self.rec(binding)
            args.append(f"{var}={code}")
        call_var = self.fresh_name("_pt_call")
        self.lines.append(  # type: ignore[attr-defined]
            f"{call_var} = {fn_name}({', '.join(args)})")
        return call_var

    def map_named_call_result(self, expr: NamedCallResult) -> str:

        call_var = self.rec(expr._container)
        rtype = expr._container.function.return_type
        if rtype == ReturnType.ARRAY:
            if not (expr.tags_of_type(Named) or expr.tags_of_type(PrefixNamed)):
                return call_var
            return self._assign(expr, call_var)
        if rtype == ReturnType.TUPLE_OF_ARRAYS:
            key: int | str = list(
                expr._container.function.returns).index(expr.name)
        else:
            key = expr.name
        return self._assign(expr, f"{call_var}[{key!r}]")

    def map_loopy_call(self, expr: LoopyCall) -> NoReturn:
        raise UnsupportedByTargetError(
            f"the call of loopy kernel '{expr.entrypoint}' cannot run on a "
            "Python target; use the loopy target (pytato.generate_loopy)")

    def map_loopy_call_result(self, expr: LoopyCallResult) -> NoReturn:
        self.map_loopy_call(expr._container)

    def map_csr_matrix(self, expr: CSRMatrix) -> tuple[str, str, str]:
        return (self.rec(expr.elem_values), self.rec(expr.elem_col_indices),
                self.rec(expr.row_starts))

    def map_csr_matmul(self, expr: CSRMatmul) -> str:

        vals, cols, starts = self.rec(expr.matrix)
        x = self.rec(expr.array)
        shape = self.shape_code(expr.matrix.shape)  # type: ignore[attr-defined]
        check = bool(expr.matrix.tags_of_type(CheckIndexBounds))
        helper = "__import__('pytato.target.python.calls', fromlist=['_'])"
        return self._assign(
            expr, f"{helper}.csr_matmul({self.np}, {vals}, {cols}, {starts}, "
                  f"{x}, {shape}, {np.dtype(expr.dtype).str!r}, {check})")


def _check_csr(cols: npt.ArrayLike, starts: npt.ArrayLike,
               shape: tuple[int, int]) -> None:
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


def csr_matmul(xp: ModuleType, values: Any, cols: Any, starts: Any, x: Any,
               shape: tuple[int, int], dtype: str, check: bool) -> Any:
    # the arrays are numpy's or jax's (of the array module *xp*)
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
