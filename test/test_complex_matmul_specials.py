"""Complex matrix products with infinities and NaNs (issue 41, item 10):
pytato's are the sums of the products (each product ``(ar*br - ai*bi) +
(ar*bi + ai*br)j``, as numpy multiplies), on both targets, which is what
numpy's own loops give (:func:`numpy.einsum`, ``matmul`` of
``clongdouble``); numpy's ``matmul`` of ``complex64`` and ``complex128``
calls BLAS, whose NaN pattern is that of its kernels (documented in
``doc/semantics.rst``)."""

from __future__ import annotations

import warnings

import numpy as np
import pyopencl as cl
import pytest

import pytato as pt


def _operands(dtype):
    rng = np.random.default_rng(7)
    shape_a, shape_b = (5, 4), (4, 3)
    a = (rng.standard_normal(shape_a)
         + 1j * rng.standard_normal(shape_a)).astype(dtype)
    b = (rng.standard_normal(shape_b)
         + 1j * rng.standard_normal(shape_b)).astype(dtype)
    inf, nan = np.inf, np.nan
    a[0, 0] = inf
    a[1, 2] = complex(0, -inf)
    a[2, 1] = complex(inf, inf)
    a[3, 3] = complex(nan, 0)
    b[1, 1] = complex(-inf, 1)
    b[2, 0] = complex(1, inf)
    return a, b


def _sum_of_products(a, b):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # (the NaN and infinity pattern of a sum does not depend on its
        # order: the finite terms here are far from overflowing)
        return (a[:, :, None] * b[None, :, :]).sum(axis=1)


def _assert_same_specials(result, expected):
    result = np.asarray(result)
    for part in (np.real, np.imag):
        r, e = part(result), part(expected)
        np.testing.assert_array_equal(np.isnan(r), np.isnan(e))
        np.testing.assert_array_equal(np.isinf(r), np.isinf(e))
        finite = np.isfinite(e)
        np.testing.assert_array_equal(r[np.isinf(e)], e[np.isinf(e)])
        np.testing.assert_allclose(r[finite], e[finite], rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("target", ["loopy", "numpy"])
def test_complex_matmul_with_infinities(ctx_factory, dtype, target):
    a, b = _operands(dtype)
    expected = _sum_of_products(a, b)
    # the pattern has NaNs and infinities of its own
    assert np.isnan(expected.real).any() and np.isinf(expected.real).any()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # numpy's own loop (no BLAS for clongdouble) agrees
        _assert_same_specials(np.einsum("ij,jk->ik", a, b), expected)
    pa = pt.make_placeholder("a", a.shape, dtype)
    pb = pt.make_placeholder("b", b.shape, dtype)
    for expr in (pa @ pb, pt.matmul(pa, pb), pt.dot(pa, pb),
                 pt.einsum("ij,jk->ik", pa, pb)):
        if target == "loopy":
            queue = cl.CommandQueue(ctx_factory())
            _, (out,) = pt.generate_loopy(expr)(queue, a=a, b=b)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = pt.generate_numpy(expr)(a=a, b=b)
        assert np.asarray(out).dtype == dtype
        _assert_same_specials(out, expected)


def test_clongdouble_matmul_is_sum_of_products():
    """numpy's matmul without BLAS (``clongdouble``) gives the sums of
    the products, pytato's pattern (where BLAS's may differ)."""
    if np.dtype(np.clongdouble).itemsize <= 16:
        pytest.skip("clongdouble is complex128 here (BLAS)")
    a, b = _operands(np.complex64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = (a.astype(np.clongdouble) @ b.astype(np.clongdouble))
    _assert_same_specials(ref.astype(np.complex128),
                          _sum_of_products(a.astype(np.complex128),
                                           b.astype(np.complex128)))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_blas_matmul_agrees_up_to_nan_parts(dtype):
    """numpy's matmul (BLAS) and the sums of the products (pytato's) have
    the same finite elements and non-finite ones at the same places; only
    which parts of a non-finite element are NaN may differ."""
    a, b = _operands(dtype)
    expected = _sum_of_products(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        blas = a @ b
    np.testing.assert_array_equal(np.isfinite(blas), np.isfinite(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(blas[finite], expected[finite], rtol=1e-5)
