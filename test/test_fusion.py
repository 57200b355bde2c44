"""Loop fusion and private temporaries (pytato.target.loopy.lower.fusion)."""

from __future__ import annotations

import loopy as lp
import numpy as np
import pytest

import pytato as pt
from pytato.target.loopy.schedule.default import DeviceInfo, default_schedule


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
    # (exp: too costly to compute again at each read, so stored)
    s = pt.exp(x) * y + 1.0
    t = s * s - x
    prog = pt.generate_loopy({"a": s * 2.0 + t, "b": t - y, "c": s * t})
    knl = _kernel(prog)
    assert not _globals(knl)
    assert len(_nests(knl)) == 1
    assert _device_kernels(prog) == 1
    # each shared value computed once
    assert sum(1 for i in knl.instructions
               if "exp(" in str(i.expression)) == 1
    rng = np.random.default_rng(1)
    a, b = rng.random(1000), rng.random(1000)
    _, res = prog(queue, x=a, y=b)
    sn = np.exp(a) * b + 1.0
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
    from pytato.target.loopy.lower.graph import build_translation_unit
    s = pt.exp(x) * y + 1.0
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


def _shrinking_chain(m, x, depth, dtype):
    """sin/not, a where reading it 3 times (stored), a roll and a slice that
    cancel into a read at the own index of a smaller array."""
    y = x
    for i in range(depth):
        k = i % 4
        if k == 0:
            y = m.logical_not(y) if dtype == np.bool_ else 0.5 * m.sin(y)
        elif k == 1:
            y = m.where(y, y, ~y) if dtype == np.bool_ \
                else m.where(y.real > 0, y, 0.5 * y)
        elif k == 2:
            y = m.roll(y, 1)
        else:
            y = y[1:]
    return y


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.bool_])
def test_shrinking_chain_is_one_kernel(queue, dtype):
    """Stores read elementwise by smaller arrays (slices) share the loop of
    the largest, guarded by predicates: one device kernel, not one per
    stored array."""
    depth, n = 40, 30
    xp = pt.make_placeholder("x", (n,), dtype)
    prog = pt.generate_loopy(_shrinking_chain(pt, xp, depth, dtype))
    assert _device_kernels(prog) == 1
    knl = _kernel(prog)
    assert not _globals(knl)
    assert any(i.predicates for i in knl.instructions)
    rng = np.random.default_rng(1)
    if dtype == np.bool_:
        a = rng.integers(0, 2, n).astype(bool)
    else:
        a = rng.standard_normal(n).astype(dtype)
        if dtype == np.complex128:
            a = a + 1j * rng.standard_normal(n)
    _, (res,) = prog(queue, x=a)
    ref = _shrinking_chain(np, a, depth, dtype)
    assert np.all(np.isfinite(ref))
    assert res.dtype == ref.dtype and res.shape == ref.shape
    np.testing.assert_allclose(res, ref, rtol=1e-13)


def test_sub_box_2d_and_shifted_reads(queue):
    """A 2-D read at the own index of a smaller box joins the writer's nest;
    a shifted read (a roll that no slice cancels) does not."""
    xp = pt.make_placeholder("x", (5, 6), np.float64)
    s = pt.sin(xp)
    w = pt.where(s > 0, s, s * s)          # stores s (read 3 times)
    sub = pt.exp(w[:3, :4])                # own-index read of a smaller box
    shifted = pt.roll(w, 2, axis=1)[:3, :4] * 2
    prog = pt.generate_loopy({"sub": sub, "shifted": shifted})
    rng = np.random.default_rng(2)
    a = rng.standard_normal((5, 6))
    _, out = prog(queue, x=a)
    sa = np.sin(a)
    wa = np.where(sa > 0, sa, sa * sa)
    np.testing.assert_allclose(out["sub"], np.exp(wa[:3, :4]), rtol=1e-13)
    np.testing.assert_allclose(out["shifted"],
                               np.roll(wa, 2, axis=1)[:3, :4] * 2, rtol=1e-13)


def test_nest_size_is_bounded(queue):
    from pytato.target.loopy.lower.fusion import MAX_NEST_SIZE
    depth = 4 * (MAX_NEST_SIZE + 10)      # about 2 * MAX_NEST_SIZE stores
    n = depth // 4 + 4
    xp = pt.make_placeholder("x", (n,), np.float64)
    prog = pt.generate_loopy(_shrinking_chain(pt, xp, depth, np.float64))
    knl = _kernel(prog)
    per_nest: dict[frozenset[str], int] = {}
    for i in knl.instructions:
        per_nest[frozenset(i.within_inames)] = \
            per_nest.get(frozenset(i.within_inames), 0) + 1
    assert 1 < len(per_nest)
    # (a stored value read by the next nest is also copied out: +1 each)
    assert max(per_nest.values()) <= MAX_NEST_SIZE + 1
    a = np.linspace(-1, 1, n)
    _, (res,) = prog(queue, x=a)
    np.testing.assert_allclose(res, _shrinking_chain(np, a, depth, np.float64),
                               rtol=1e-12)
