"""Loop fusion and private temporaries (pytato.target.loopy.fusion)."""

from __future__ import annotations

import loopy as lp
import numpy as np
import pytest

import pytato as pt
from pytato.target.loopy.schedule import DeviceInfo, default_schedule


def _kernel(prog):
    return prog.program.default_entrypoint


def _globals(knl):
    return sorted(n for n, v in knl.temporary_variables.items()
                  if v.address_space == lp.AddressSpace.GLOBAL)


def _privates(knl):
    return sorted(n for n, v in knl.temporary_variables.items()
                  if v.address_space == lp.AddressSpace.PRIVATE)


def _nests(knl):
    return {frozenset(i.within_inames) for i in knl.instructions
            if i.within_inames}


def _device_kernels(prog):
    code = lp.generate_code_v2(prog.program).device_code()
    return code.count("__kernel ")


x = pt.make_placeholder("x", (1000,), np.float64)
y = pt.make_placeholder("y", (1000,), np.float64)


def _chain(m, x, y):
    r = x * 1.5 + y
    r = r * x - y
    r = r * 0.5 + x
    r = r * y - 2.0
    return r * r + x


def test_chain_is_one_loop_with_registers(queue):
    prog = pt.generate_loopy(_chain(pt, x, y))
    knl = _kernel(prog)
    assert not _globals(knl)
    assert _privates(knl)
    assert len(_nests(knl)) == 1
    assert _device_kernels(prog) == 1
    rng = np.random.default_rng(0)
    a, b = rng.random(1000), rng.random(1000)
    _, (res,) = prog(queue, x=a, y=b)
    np.testing.assert_allclose(res, _chain(np, a, b), rtol=1e-13)


def test_multi_output_shares_subexpressions_in_registers(queue):
    s = x * y + 1.0
    t = s * s - x
    prog = pt.generate_loopy({"a": s * 2.0 + t, "b": t - y, "c": s * t})
    knl = _kernel(prog)
    assert not _globals(knl)
    assert len(_nests(knl)) == 1
    assert _device_kernels(prog) == 1
    # each shared value computed once
    assert sum(1 for i in knl.instructions
               if "x[" in str(i.expression) and "y[" in str(i.expression)) == 1
    rng = np.random.default_rng(1)
    a, b = rng.random(1000), rng.random(1000)
    _, res = prog(queue, x=a, y=b)
    sn = a * b + 1.0
    tn = sn * sn - a
    np.testing.assert_allclose(res["a"], sn * 2.0 + tn, rtol=1e-13)
    np.testing.assert_allclose(res["b"], tn - b, rtol=1e-13)
    np.testing.assert_allclose(res["c"], sn * tn, rtol=1e-13)


def test_shifted_read_keeps_global_and_splits_nests(queue):
    # t is read elementwise (u, w) and shifted (v): a register for the
    # elementwise readers, one copy in global memory for the shifted one,
    # which runs in a later loop nest
    t = pt.exp(x) * y
    v = pt.roll(t, 1) + t
    prog = pt.generate_loopy({"u": t + 1, "w": t * t, "v": v})
    knl = _kernel(prog)
    assert len(_globals(knl)) == 1
    assert len(_nests(knl)) == 2
    assert str(knl).count("exp(") == 1
    rng = np.random.default_rng(2)
    a, b = rng.random(1000), rng.random(1000)
    _, res = prog(queue, x=a, y=b)
    tn = np.exp(a) * b
    np.testing.assert_allclose(res["u"], tn + 1, rtol=1e-13)
    np.testing.assert_allclose(res["w"], tn * tn, rtol=1e-13)
    np.testing.assert_allclose(res["v"], np.roll(tn, 1) + tn, rtol=1e-13)


def test_output_read_by_other_output(queue):
    t = pt.sin(x) + y
    prog = pt.generate_loopy({"t": t, "u": t * t, "v": pt.sum(t)})
    knl = _kernel(prog)
    # (the partial sums of a two-stage reduction aside)
    assert not [g for g in _globals(knl) if not g.endswith("_partial")]
    rng = np.random.default_rng(3)
    a, b = rng.random(1000), rng.random(1000)
    _, res = prog(queue, x=a, y=b)
    tn = np.sin(a) + b
    np.testing.assert_allclose(res["t"], tn, rtol=1e-13)
    np.testing.assert_allclose(res["u"], tn * tn, rtol=1e-13)
    np.testing.assert_allclose(res["v"], tn.sum(), rtol=1e-12)


def test_transpose_is_not_fused_with_its_source(queue):
    a = pt.make_placeholder("a", (30, 40), np.float64)
    t = pt.sin(a) * 2
    out = {"p": t.T * t.T, "q": t + 1}
    prog = pt.generate_loopy(out)
    knl = _kernel(prog)
    assert len(_nests(knl)) == 2
    rng = np.random.default_rng(4)
    an = rng.random((30, 40))
    _, res = prog(queue, a=an)
    tn = np.sin(an) * 2
    np.testing.assert_allclose(res["p"], tn.T * tn.T, rtol=1e-13)
    np.testing.assert_allclose(res["q"], tn + 1, rtol=1e-13)


@pytest.mark.parametrize("n", [0, 1, 7])
def test_symbolic_sizes_fuse(queue, n):
    nn = pt.make_size_param("n")
    xs = pt.make_placeholder("xs", (nn, 3), np.float64)
    s = pt.cos(xs) * xs
    prog = pt.generate_loopy({"a": s + 1, "b": s * s})
    knl = _kernel(prog)
    assert not _globals(knl)
    assert len(_nests(knl)) == 1
    an = np.random.default_rng(5).random((n, 3))
    _, res = prog(queue, xs=an)
    sn = np.cos(an) * an
    np.testing.assert_allclose(res["a"], sn + 1, rtol=1e-13)
    np.testing.assert_allclose(res["b"], sn * sn, rtol=1e-13)


def test_gpu_schedule_of_fused_nest_is_one_kernel():
    s = x * y + 1.0
    prog = pt.generate_loopy({"a": s * s, "b": s - y}, default_schedule=False)
    info = DeviceInfo(kind="gpu", compute_units=132, max_work_group_size=1024)
    t_unit = default_schedule(prog.program, info)
    code = lp.generate_code_v2(t_unit).device_code()
    assert code.count("__kernel ") == 1
    assert "reqd_work_group_size(256, 1, 1)" in code


def test_fusion_can_be_disabled():
    from pytato.codegen import preprocess
    from pytato.target.loopy.codegen import build_translation_unit
    s = x * y + 1.0
    out = pt.make_dict_of_named_arrays({"a": s * s, "b": s - y})
    prep = preprocess(out).outputs
    kw = dict(target=lp.PyOpenCLTarget(), options=lp.Options(),
              function_name="knl", array_tag_t_to_not_propagate=frozenset(),
              axis_tag_t_to_not_propagate=frozenset())
    fused = build_translation_unit(prep, **kw).default_entrypoint
    plain = build_translation_unit(prep, fuse_loops=False, **kw
                                   ).default_entrypoint
    assert len(_nests(fused)) == 1
    assert len(_nests(plain)) == 3
    assert len(_globals(plain)) == 1
