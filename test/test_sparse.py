"""CSR matrices and their products with dense arrays, against dense numpy
references, on PoCL and the NumPy target."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import pytato as pt
from pytato.array.sparse import CheckIndexBounds
from pytato.diagnostic import (
    DTypeError,
    IndexOutOfBoundsError,
    ShapeMismatchError,
    UnsupportedOperationError,
)
from pytato.transform import CopyMapper


def _random_csr(rng, nrows, ncols, density=0.4, dtype=np.float64,
                index_dtype=np.int32, empty_rows=(), duplicates=False):
    """(dense, values, cols, row_starts) with the given rows empty."""
    dense = np.zeros((nrows, ncols), dtype)
    vals, cols, starts = [], [], [0]
    for i in range(nrows):
        if i not in empty_rows:
            js = np.nonzero(rng.random(ncols) < density)[0]
            if duplicates and len(js):
                js = np.concatenate([js, js[:1]])
            for j in js:
                v = rng.integers(-5, 6) if np.dtype(dtype).kind in "iu" \
                    else rng.standard_normal()
                if np.dtype(dtype).kind == "c":
                    v = v + 1j * rng.standard_normal()
                dense[i, j] += v
                vals.append(v)
                cols.append(j)
        starts.append(len(vals))
    return (dense, np.array(vals, dtype=dtype).reshape(-1),
            np.array(cols, dtype=index_dtype), np.array(starts, index_dtype))


def _run(target, result, queue=None, **inputs):
    if target == "numpy":
        return pt.generate_numpy(result)(**inputs)
    _, out = pt.generate_loopy(result)(queue, **inputs)
    return out


@pytest.mark.parametrize("target", ["loopy", "numpy"])
@pytest.mark.parametrize(("dtype", "x_dtype", "index_dtype"), [
    (np.float64, np.float64, np.int32),
    (np.float32, np.float64, np.int64),
    (np.complex128, np.float64, np.int32),
    (np.int32, np.int64, np.int64),
])
def test_csr_products(queue, target, dtype, x_dtype, index_dtype):
    rng = np.random.default_rng(3)
    dense, vals, cols, starts = _random_csr(
        rng, 7, 5, dtype=dtype, index_dtype=index_dtype,
        empty_rows=(0, 3, 6), duplicates=True)
    a = pt.make_csr_matrix((7, 5), vals, cols, starts)
    x = pt.make_placeholder("x", (5,), x_dtype)
    m = pt.make_placeholder("m", (5, 3), x_dtype)
    xv = rng.integers(-3, 4, 5).astype(x_dtype)
    mv = rng.integers(-3, 4, (5, 3)).astype(x_dtype)
    result = {"mv": a @ x, "mm": pt.sparse_matmul(a, 2 * m + 1),
              "dense": a.to_dense()}
    assert result["mv"].shape == (7,) and result["mm"].shape == (7, 3)
    assert result["mv"].dtype == np.result_type(dtype, x_dtype)

    out = _run(target, result, queue, x=xv, m=mv)
    rtol = 1e-5 if np.float32 in (dtype, x_dtype) else 1e-12
    np.testing.assert_allclose(out["mv"], dense @ xv, rtol=rtol, atol=1e-5)
    np.testing.assert_allclose(out["mm"], dense @ (2 * mv + 1), rtol=rtol,
                               atol=1e-5)
    np.testing.assert_allclose(out["dense"], dense, rtol=rtol)
    assert out["mv"].dtype == np.result_type(dtype, x_dtype)


@pytest.mark.parametrize("target", ["loopy", "numpy"])
def test_csr_symbolic_sizes_and_empty(queue, target):
    nrows, ncols, nnz = (pt.make_size_param(n) for n in ("nrows", "ncols", "nnz"))
    vals = pt.make_placeholder("vals", (nnz,), np.float64)
    cols = pt.make_placeholder("cols", (nnz,), np.int32)
    starts = pt.make_placeholder("starts", (nrows + 1,), np.int32)
    x = pt.make_placeholder("x", (ncols,), np.float64)
    a = pt.make_csr_matrix((nrows, ncols), vals, cols, starts)
    y = a @ x

    if target == "loopy":
        prg = pt.generate_loopy(y)

        def run(**kw):
            _, (res,) = prg(queue, **kw)
            return res
    else:
        prg = pt.generate_numpy(y)

        def run(**kw):
            return prg(**kw)

    rng = np.random.default_rng(4)
    for shape, empty in [((6, 4), (1, 2, 5)), ((3, 2), (0, 1, 2)),
                         ((0, 3), ())]:
        dense, v, c, s = _random_csr(rng, *shape, empty_rows=empty)
        xv = rng.random(shape[1])
        res = run(vals=v, cols=c, starts=s, x=xv)
        assert res.shape == (shape[0],)
        np.testing.assert_allclose(res, dense @ xv, rtol=1e-12)


def test_csr_in_traced_function(queue):
    rng = np.random.default_rng(5)
    dense, v, c, s = _random_csr(rng, 5, 5, empty_rows=(2,))
    a = pt.make_csr_matrix((5, 5), v, c, s)

    def step(u):
        return u + 0.1 * (a @ u)

    x = pt.make_placeholder("x", (5,), np.float64)
    y = pt.trace_call(step, pt.trace_call(step, x))
    xv = rng.random(5)
    ref = xv + 0.1 * dense @ xv
    ref = ref + 0.1 * dense @ ref
    _, (res,) = pt.generate_loopy(y)(queue, x=xv)
    np.testing.assert_allclose(res, ref, rtol=1e-12)
    np.testing.assert_allclose(pt.generate_numpy(y)(x=xv), ref, rtol=1e-12)


def test_csr_bounds_checks(queue):
    n = pt.make_size_param("n")
    cols = pt.make_placeholder("cols", (n,), np.int64)
    starts = pt.make_placeholder("starts", (5,), np.int64)
    vals = pt.make_placeholder("vals", (n,), np.float64)
    a = pt.make_csr_matrix((4, 3), vals, cols, starts, tags=CheckIndexBounds())
    x = pt.make_placeholder("x", (3,), np.float64)
    y = a @ x
    prg = pt.generate_loopy(y)
    run_np = pt.generate_numpy(y)
    xv = np.array([1.0, 2.0, 3.0])
    vv = np.ones(4)

    good = dict(cols=np.array([0, 2, 1, 2]), starts=np.array([0, 2, 2, 3, 4]))
    _, (res,) = prg(queue, vals=vv, x=xv, **good)
    np.testing.assert_allclose(res, [4.0, 0.0, 2.0, 3.0])

    bad_col = dict(cols=np.array([0, 3, 1, -1]), starts=good["starts"])
    _, (res,) = prg(queue, vals=vv, x=xv, **bad_col)
    assert np.isnan(res[0]) and np.isnan(res[3])
    np.testing.assert_allclose(res[1:3], [0.0, 2.0])
    with pytest.raises(IndexOutOfBoundsError, match="column"):
        run_np(vals=vv, x=xv, **bad_col)

    bad_rows = dict(cols=good["cols"], starts=np.array([0, 3, 2, 3, 9]))
    _, (res,) = prg(queue, vals=vv, x=xv, **bad_rows)
    assert np.isnan(res[1]) and np.isnan(res[3])
    with pytest.raises(IndexOutOfBoundsError, match="row_starts"):
        run_np(vals=vv, x=xv, **bad_rows)


def test_csr_construction_errors():
    v = np.ones(3)
    c = np.array([0, 1, 2])
    s = np.array([0, 1, 3])
    pt.make_csr_matrix((2, 3), v, c, s)
    with pytest.raises(ShapeMismatchError, match="2-d"):
        pt.make_csr_matrix((6,), v, c, s)
    with pytest.raises(DTypeError, match=r"'elem_col_indices'.*integer"):
        pt.make_csr_matrix((2, 3), v, c.astype(float), s)
    with pytest.raises(DTypeError, match=r"'row_starts'.*integer"):
        pt.make_csr_matrix((2, 3), v, c, s.astype(float))
    with pytest.raises(ShapeMismatchError, match="'elem_col_indices'"):
        pt.make_csr_matrix((2, 3), v, c[:2], s)
    with pytest.raises(ShapeMismatchError, match="'row_starts'"):
        pt.make_csr_matrix((3, 3), v, c, s)
    with pytest.raises(ShapeMismatchError, match="'elem_values' must be 1-d"):
        pt.make_csr_matrix((2, 3), np.ones((3, 1)), c, s)
    with pytest.raises(IndexOutOfBoundsError, match="column 3"):
        pt.make_csr_matrix((2, 3), v, np.array([0, 1, 3]), s)
    with pytest.raises(IndexOutOfBoundsError, match="column -1"):
        pt.make_csr_matrix((2, 3), v, np.array([0, -1, 2]), s)
    with pytest.raises(IndexOutOfBoundsError, match="non-decreasing"):
        pt.make_csr_matrix((2, 3), v, c, np.array([0, 3, 2]))
    with pytest.raises(IndexOutOfBoundsError, match="beyond"):
        pt.make_csr_matrix((2, 3), v, c, np.array([0, 1, 4]))

    a = pt.make_csr_matrix((2, 3), v, c, s)
    with pytest.raises(ShapeMismatchError, match="not aligned"):
        a @ pt.make_placeholder("x", (2,))
    with pytest.raises(ShapeMismatchError, match="1-d or 2-d"):
        a @ pt.make_placeholder("x", (3, 1, 1))
    with pytest.raises(UnsupportedOperationError, match="dense @ sparse"):
        a.__rmatmul__(pt.make_placeholder("x", (2, 2)))
    with pytest.raises(TypeError):
        pt.make_placeholder("x", (2, 2)) @ a
    with pytest.raises(TypeError):
        pt.sparse_matmul(pt.make_placeholder("x", (2, 3)), np.ones(3))


def test_csr_graph_behavior():
    v = pt.make_placeholder("v", (3,), np.float64)
    a = pt.make_csr_matrix((2, 3), v, pt.make_placeholder("c", (3,), np.int32),
                           pt.make_placeholder("s", (3,), np.int32))
    x = pt.make_placeholder("x", (3,), np.float32)
    y = a @ x
    assert isinstance(y, pt.CSRMatmul) and isinstance(a, pt.SparseMatrix)
    assert y.dtype == np.float64 and a.dtype == np.float64 and a.ndim == 2
    assert {i.name for i in y._pt_inputs.values()} == {"v", "c", "s", "x"}
    assert pickle.loads(pickle.dumps(y)) == y
    assert CopyMapper()(y) is y

    class Rename(CopyMapper):
        def map_placeholder(self, expr):
            return pt.make_placeholder(expr.name + "2", expr.shape, expr.dtype)

    renamed = Rename()(y)
    assert {i.name for i in renamed._pt_inputs.values()} == {
        "v2", "c2", "s2", "x2"}
    tagged = a.tagged(CheckIndexBounds())
    assert tagged != a and tagged.tags_of_type(CheckIndexBounds)


def test_csr_and_calls_on_jax():
    pytest.importorskip("jax")
    rng = np.random.default_rng(6)
    dense, v, c, s = _random_csr(rng, 4, 5, empty_rows=(1,))
    a = pt.make_csr_matrix((4, 5), v, c, s)
    x = pt.make_placeholder("x", (5,), np.float64)

    def f(u):
        return 2 * pt.sin(u)

    y = a @ pt.trace_call(f, x)
    xv = rng.random(5)
    for jit in (False, True):
        res = np.asarray(pt.generate_jax(y, jit=jit)(x=xv))
        np.testing.assert_allclose(res, dense @ (2 * np.sin(xv)), rtol=1e-12)


@pytest.mark.parametrize("target", ["loopy", "numpy"])
@pytest.mark.parametrize("matrix_rhs", [False, True])
def test_csr_matmul_reduction_var_and_descr(queue, target, matrix_rhs):
    # the reference's CSRMatmul(matrix, array, reduction_var, *,
    # reduction_descr): the tags of the descriptor reach the reduction iname
    from pytato.array.sparse import CSRMatmul
    from pytato.tags import Named

    rng = np.random.default_rng(11)
    dense, vals, cols, starts = _random_csr(rng, 7, 5, empty_rows=(2,))
    a = pt.make_csr_matrix((7, 5), pt.make_data_wrapper(vals),
                           pt.make_data_wrapper(cols),
                           pt.make_data_wrapper(starts))
    xv = rng.standard_normal((5, 3) if matrix_rhs else (5,))
    x = pt.make_placeholder("x", xv.shape, np.float64)
    tag = Named("row_sum")
    prod = CSRMatmul(a, x, "_row_j",
                     reduction_descr=pt.ReductionDescriptor(frozenset({tag})),
                     axes=pt.sparse_matmul(a, x).axes)
    assert prod.reduction_var == "_row_j"
    assert prod != pt.sparse_matmul(a, x)
    assert pt.sparse_matmul(a, x).reduction_var == "_r0"
    res = _run(target, prod, queue, x=xv)
    np.testing.assert_allclose(res[0] if target == "loopy" else res, dense @ xv)
    if target == "loopy":
        t_unit = pt.generate_loopy(prod).program
        (callee,) = [k for n, k in t_unit.callables_table.items()
                     if n.startswith("_pt_csr_matmul")]
        assert tag in callee.subkernel.inames["_row_j"].tags

    with pytest.raises(ValueError, match="reduction_var"):
        CSRMatmul(a, x, "not an identifier")
    with pytest.raises(ValueError, match="used by the product's kernel"):
        CSRMatmul(a, x, "row_starts")
    with pytest.raises(TypeError, match="reduction_descr"):
        CSRMatmul(a, x, reduction_descr=frozenset())
