"""User loopy kernels in graphs (pytato.loopy.call_loopy) and foreign scalar
functions (pytato.register_scalar_function), on PoCL and the NumPy target."""

from __future__ import annotations

import numpy as np
import pytest
from constantdict import constantdict

import pytato as pt
from pytato.diagnostic import (
    CallBindingError,
    DTypeError,
    ShapeMismatchError,
    UnsupportedByTargetError,
)


lp = pytest.importorskip("loopy")
from loopy.diagnostic import LoopyError  # noqa: E402


def _knl(domains, insns, args, name):
    return lp.make_kernel(domains, insns, args, name=name,
                          lang_version=(2018, 2))


def _callee_kernels(prg):
    return sorted(name for name, clbl in prg.program.callables_table.items()
                  if isinstance(clbl, lp.CallableKernel)
                  and name not in prg.program.entrypoints)


# {{{ loopy calls

@pytest.fixture(scope="module")
def scaled_kernel():
    return _knl(
        "{[i, j]: 0 <= i < n and 0 <= j < m}",
        """
        y[i, j] = alpha * x[i, j] + 1
        colsum[j] = sum(i, x[i, j])  {id=cs}
        """,
        [lp.ValueArg("alpha", np.float64), lp.ValueArg("n, m", np.int64),
         lp.GlobalArg("x", shape=("n", "m")),
         lp.GlobalArg("y", shape=("n", "m")),
         lp.GlobalArg("colsum", shape=("m",))],
        "scaled")


def test_call_loopy_parametric_sizes(queue, scaled_kernel):
    nn = pt.make_size_param("nn")
    x = pt.make_placeholder("x", (nn, 4), np.float64)
    # sizes inferred from the bound array; alpha a data-dependent scalar
    c = pt.loopy.call_loopy(scaled_kernel, {"x": 2 * x, "alpha": pt.sum(x)})
    assert set(c) == {"y", "colsum"}
    assert c["y"].shape == (nn, 4) and c["colsum"].shape == (4,)
    assert c["y"].dtype == np.float64
    # a second call of the same kernel with explicit sizes and a number
    c2 = pt.loopy.call_loopy(scaled_kernel, {
        "x": pt.reshape(x, (4, nn)), "alpha": 0.5, "n": 4, "m": nn})
    assert c2["y"].shape == (4, nn)
    result = {"y": c["y"] - 1, "colsum": c["colsum"], "y2": c2["y"]}

    prg = pt.generate_loopy(result)
    assert _callee_kernels(prg) == ["_pt_loopy_scaled"]
    xv = np.random.default_rng(0).random((5, 4))
    _, out = prg(queue, x=xv)
    np.testing.assert_allclose(out["y"], xv.sum() * 2 * xv, rtol=1e-12)
    np.testing.assert_allclose(out["colsum"], 2 * xv.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(out["y2"], 0.5 * xv.reshape(4, 5) + 1)

    with pytest.raises(UnsupportedByTargetError, match="scaled"):
        pt.generate_numpy(result)


def test_call_loopy_inout_and_calls(queue):
    knl = _knl("{[i]: 0 <= i < 6}", "acc[i] = acc[i] + 2 * b[i]",
               [lp.GlobalArg("acc", np.float32, shape=(6,), is_input=True,
                             is_output=True),
                lp.GlobalArg("b", np.float32, shape=(6,))], "accumulate")
    a = pt.make_placeholder("a", (6,), np.float32)

    def f(u):
        # a loopy call inside a traced function
        return pt.loopy.call_loopy(knl, {"acc": u, "b": u})["acc"]

    r = pt.trace_call(f, a) + pt.trace_call(f, a + 1)
    result = {"r": r, "a1": a + 1}  # the binding is not modified
    prg = pt.generate_loopy(result)
    assert _callee_kernels(prg) == ["_pt_fn_f", "_pt_loopy_accumulate"]
    av = np.arange(6, dtype=np.float32)
    _, out = prg(queue, a=av)
    np.testing.assert_allclose(out["r"], 3 * av + 3 * (av + 1))
    np.testing.assert_allclose(out["a1"], av + 1)


def _with_helper(factor, name):
    helper = lp.make_function("{[k]: 0 <= k < 3}", f"o[k] = {factor} * v[k]",
                              [lp.GlobalArg("v", np.float64, shape=(3,)),
                               lp.GlobalArg("o", np.float64, shape=(3,),
                                            is_output=True, is_input=False)],
                              name="helper", lang_version=(2018, 2))
    main = _knl("{[i]: 0 <= i < 3}",
                "[i]: out[i] = helper([i]: inp[i])",
                [lp.GlobalArg("inp", np.float64, shape=(3,)),
                 lp.GlobalArg("out", np.float64, shape=(3,),
                              is_output=True, is_input=False)], name)
    return lp.merge([main, helper])


def test_call_loopy_callees_do_not_clash(queue):
    t1, t2 = _with_helper(2, "first"), _with_helper(10, "second")
    x = pt.make_placeholder("x", (3,), np.float64)
    r = (pt.loopy.call_loopy(t1, {"inp": x})["out"]
         + pt.loopy.call_loopy(t2, {"inp": x})["out"])
    prg = pt.generate_loopy(r)
    assert len(_callee_kernels(prg)) == 4
    _, (res,) = prg(queue, x=np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(res, [12.0, 24.0, 36.0])


def test_call_loopy_binding_errors(scaled_kernel):
    knl = lp.add_dtypes(scaled_kernel, {"x": np.float64})
    x = pt.make_placeholder("x", (3, 4), np.float64)
    ok = {"x": x, "alpha": 1.0}
    pt.loopy.call_loopy(knl, ok)
    cases = [
        ({**ok, "w": x}, CallBindingError, r"'scaled' has no argument 'w'"),
        ({**ok, "y": x}, CallBindingError, r"'y' is an output only"),
        ({"x": x}, CallBindingError, r"missing.*alpha"),
        ({**ok, "x": x.astype(np.float32)}, DTypeError, r"'x'.*float32"),
        ({**ok, "x": pt.make_placeholder("z", (3,))}, ShapeMismatchError,
         r"'x' has 2 dimension"),
        ({**ok, "n": 5}, ShapeMismatchError, r"'x' has shape \(5, 4\)"),
        ({**ok, "alpha": x}, ShapeMismatchError, r"value argument 'alpha'"),
        ({**ok, "alpha": "two"}, CallBindingError, r"value argument 'alpha'"),
        ({**ok, "x": 3.0}, CallBindingError, r"array argument 'x'"),
    ]
    for bindings, exc, match in cases:
        with pytest.raises(exc, match=match):
            pt.loopy.call_loopy(knl, bindings)
    with pytest.raises(ValueError, match="no kernel 'nope'"):
        pt.loopy.call_loopy(knl, ok, entrypoint="nope")
    with pytest.raises(TypeError):
        pt.loopy.call_loopy("not a kernel", ok)

# }}}


# {{{ foreign scalar functions

class _Sinc(lp.ScalarCallable):
    """sin(x)/x in OpenCL C, for float32 and float64."""

    def with_types(self, arg_id_to_dtype, clbl_inf_ctx):
        dt = arg_id_to_dtype.get(0)
        if dt is None:
            return self, clbl_inf_ctx
        names = {np.float64: "pt_test_sinc", np.float32: "pt_test_sincf"}
        name = names.get(dt.numpy_dtype.type)
        if name is None:
            raise LoopyError(f"sinc: unsupported dtype {dt.numpy_dtype}")
        return (self.copy(name_in_target=name,
                          arg_id_to_dtype=constantdict({0: dt, -1: dt})),
                clbl_inf_ctx)

    def generate_preambles(self, target):
        yield ("50_pt_test_sinc", """
            inline double pt_test_sinc(double x)
            { return x == 0 ? 1.0 : sin(x) / x; }
            inline float pt_test_sincf(float x)
            { return x == 0 ? 1.0f : sin(x) / x; }
            """)


class _Hypot(lp.ScalarCallable):
    """hypot(x, y) computed in the common floating type of x and y."""

    def with_types(self, arg_id_to_dtype, clbl_inf_ctx):
        a, b = arg_id_to_dtype.get(0), arg_id_to_dtype.get(1)
        if a is None or b is None:
            return self, clbl_inf_ctx
        dt = np.result_type(a.numpy_dtype, b.numpy_dtype, np.float32)
        if dt.kind != "f":
            raise LoopyError(f"hypot: unsupported dtypes {a}, {b}")
        from loopy.types import NumpyType
        t = NumpyType(dt)
        return (self.copy(name_in_target="hypot",
                          arg_id_to_dtype=constantdict({0: t, 1: t, -1: t})),
                clbl_inf_ctx)


def _np_sinc(x):
    x = np.asarray(x)
    safe = np.where(x == 0, 1, x)
    return np.where(x == 0, 1, np.sin(safe) / safe).astype(x.dtype)


@pytest.fixture(scope="module", autouse=True)
def _registered():
    pt.register_scalar_function("test_sinc", _Sinc("test_sinc"),
                                numpy_impl=_np_sinc)
    pt.register_scalar_function("test_hypot", _Hypot("test_hypot"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_foreign_function(queue, dtype):
    x = pt.make_placeholder("x", (7,), dtype)
    y = pt.make_placeholder("y", (7,), np.int32)
    s = pt.call_scalar_function("test_sinc", x)
    assert s.dtype == dtype
    h = pt.call_scalar_function("test_hypot", x, y)
    assert h.dtype == np.result_type(dtype, np.int32, np.float32)

    def body(a):  # a foreign function inside a callee kernel
        return pt.call_scalar_function("test_sinc", 2 * a)

    result = {"s": s + 1, "h": h, "c": pt.trace_call(body, x)}
    xv = np.linspace(-3, 3, 7).astype(dtype)
    yv = np.arange(7, dtype=np.int32)
    prg = pt.generate_loopy(result)
    _, out = prg(queue, x=xv, y=yv)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out["s"], _np_sinc(xv) + 1, rtol=rtol)
    np.testing.assert_allclose(out["h"], np.hypot(xv, yv), rtol=rtol)
    np.testing.assert_allclose(out["c"], _np_sinc(2 * xv), rtol=rtol)

    # NumPy target: the numpy implementation, or a clear error
    np.testing.assert_allclose(pt.generate_numpy(s)(x=xv), _np_sinc(xv),
                               rtol=rtol)
    with pytest.raises(UnsupportedByTargetError, match=r"'test_hypot'.*numpy"):
        pt.generate_numpy(h)


def test_foreign_function_errors():
    i = pt.make_placeholder("i", (3,), np.int64)
    with pytest.raises(DTypeError, match=r"'test_sinc'.*x1: int64"):
        pt.call_scalar_function("test_sinc", i)
    with pytest.raises(DTypeError, match=r"'test_hypot'.*x2: complex128"):
        pt.call_scalar_function("test_hypot", 1.0 + i,
                                pt.make_placeholder("c", (3,), np.complex128))
    with pytest.raises(KeyError, match="no scalar function"):
        pt.call_scalar_function("unregistered", i)
    with pytest.raises(TypeError, match="ScalarCallable"):
        pt.register_scalar_function("bad", object())
    # scalars only: computed eagerly by the numpy implementation
    assert pt.call_scalar_function("test_sinc", 0.0) == 1.0

# }}}
