"""Tests of the index simplification (:mod:`pytato.target.loopy.lower.index_arith`)
and of its use when lowering reshapes."""

from __future__ import annotations

import itertools

import numpy as np
import pymbolic.primitives as prim
import pytest
from pymbolic import evaluate

import pytato as pt
from pytato.target.loopy.lower.index_arith import (
    integer_bounds,
    simplify_floor_div,
    simplify_remainder,
)


i, j, r = prim.Variable("i"), prim.Variable("j"), prim.Variable("r")


def _points(ranges):
    names = sorted(ranges)
    for values in itertools.product(*(range(lo, hi + 1)
                                      for lo, hi in (ranges[n] for n in names))):
        yield dict(zip(names, values, strict=True))


def _check(num, k, ranges, *, simplifies):
    quot = simplify_floor_div(num, k, ranges)
    rem = simplify_remainder(num, k, ranges)
    if not simplifies:
        assert quot is None and rem is None
        return
    assert quot is not None and rem is not None
    for env in _points(ranges):
        n = evaluate(num, env)
        assert evaluate(quot, env) == n // k, (num, k, env)
        assert evaluate(rem, env) == n % k, (num, k, env)


@pytest.mark.parametrize(("num", "k", "ranges", "simplifies"), [
    # a reversal flattened and unflattened again
    (prim.Sum((prim.Product((prim.Sum((15, prim.Product((-1, i)))), 16)), j)),
     16, {"i": (0, 15), "j": (0, 15)}, True),
    (i * 6 + j, 6, {"i": (0, 3), "j": (0, 5)}, True),
    (prim.Product((2, i, 3)) + j, 6, {"i": (0, 3), "j": (0, 5)}, True),
    # the rest spans two blocks: kept
    (i * 6 + j, 6, {"i": (0, 3), "j": (0, 6)}, False),
    (i + 15, 16, {"i": (0, 15)}, False),
    # whole numerator in one block (also negative ones)
    (i + 3, 8, {"i": (0, 4)}, True),
    (i - 8, 8, {"i": (0, 7)}, True),
    (prim.Sum((prim.Product((-4, i)), j)), 4, {"i": (0, 5), "j": (0, 3)}, True),
    # nested divisions and remainders have known bounds
    (prim.Sum((prim.Product((4, i)), prim.Remainder(j, 4))), 4,
     {"i": (0, 2), "j": (0, 20)}, True),
    (prim.Sum((prim.Product((4, i)), prim.FloorDiv(j, 8))), 4,
     {"i": (0, 2), "j": (0, 31)}, True),
    # unknown variables, non-constant divisors: kept
    (i * 6 + r, 6, {"i": (0, 3)}, False),
])
def test_simplify(num, k, ranges, simplifies):
    _check(num, k, ranges, simplifies=simplifies)


def test_non_constant_divisor():
    assert simplify_floor_div(i, j, {"i": (0, 3), "j": (1, 3)}) is None
    assert simplify_remainder(i, j, {"i": (0, 3), "j": (1, 3)}) is None


def test_random_affine():
    rng = np.random.default_rng(7)
    for _ in range(300):
        k = int(rng.integers(1, 9))
        ranges = {"i": (0, int(rng.integers(0, 6))),
                  "j": (int(rng.integers(-3, 1)), int(rng.integers(1, 9)))}
        terms = [prim.Product((int(rng.integers(-3, 4)) * k, i)),
                 prim.Product((int(rng.integers(-2, 3)), j)),
                 int(rng.integers(-10, 11))]
        num = prim.Sum(tuple(terms))
        quot = simplify_floor_div(num, k, ranges)
        rem = simplify_remainder(num, k, ranges)
        assert (quot is None) == (rem is None)
        if quot is None:
            continue
        for env in _points(ranges):
            n = evaluate(num, env)
            assert evaluate(quot, env) == n // k
            assert evaluate(rem, env) == n % k


def test_bounds():
    assert integer_bounds(prim.Sum((i, prim.Product((-2, j)))),
                          {"i": (0, 3), "j": (1, 2)}) == (-4, 1)
    assert integer_bounds(prim.Remainder(r, 5), {}) == (0, 4)
    assert integer_bounds(r, {}) is None
    assert integer_bounds(prim.Call(prim.Variable("f"), (i,)), {"i": (0, 1)}) \
        is None


def test_reshape_round_trip_has_no_division(queue):
    """A reversed array flattened and unflattened again reads its input at
    plain indices: no floor division or remainder is left in the code."""
    import loopy as lp
    a = np.arange(96.0).reshape(8, 12)
    x = pt.make_placeholder("x", (8, 12), np.float64)
    y = 2 * x[::-1].reshape(96).reshape(8, 12)
    prog = pt.generate_loopy(y, default_schedule=False)
    code = lp.generate_code_v2(prog.program).device_code()
    assert "loopy_floor_div" not in code and "loopy_mod" not in code
    assert "/" not in code.split("{", 1)[1] and "%" not in code
    _, (res,) = prog(queue, x=a)
    np.testing.assert_array_equal(res, 2 * a[::-1].reshape(96).reshape(8, 12))
    # and with the schedule
    _, (res,) = pt.generate_loopy(y)(queue, x=a)
    np.testing.assert_array_equal(res, 2 * a[::-1].reshape(96).reshape(8, 12))
