"""The private (and internal) names that the reference pytato's own tests
import from its modules, with the reference's behaviour:
``pytato.array._SuppliedAxesAndTagsMixin``,
``pytato.array._np_result_dtype``, ``pytato.transform._verify_is_array``,
``pytato.pad._normalize_pad_width``,
``pytato.distributed.partition._schedule_task_batches_counted``,
``pytato.scalar_expr.IDX_LAMBDA_AXIS_INDEX`` and
``pytato.transform.metadata.BINDING_NAME_RESERVED_PATTERN``."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import pytato as pt


def _run(queue: Any, result: Any, **inputs: Any) -> Any:
    _, out = pt.generate_loopy(result)(queue, **inputs)
    return out[0] if isinstance(out, tuple) else out


# {{{ _SuppliedAxesAndTagsMixin

def test_array_class_keeping_array_eq_is_accepted() -> None:
    from pytato.array import _SuppliedAxesAndTagsMixin

    @dataclass(frozen=True, eq=False)
    class MyArray(_SuppliedAxesAndTagsMixin, pt.Array):
        pass

    a = MyArray(tags=frozenset(), axes=())
    b = MyArray(tags=frozenset(), axes=())
    assert isinstance(a, pt.Array)
    assert a == b and hash(a) == hash(b)
    assert a.tags == frozenset() and a.axes == ()

    @dataclass(frozen=True, eq=False)
    class Shaped(_SuppliedAxesAndTagsMixin, pt.Array):
        shape: tuple[int, ...]
        dtype: np.dtype[Any]

    s = Shaped((3, 4), np.dtype(np.float64), tags=frozenset(), axes=None)
    assert s.ndim == 2 and len(s.axes) == 2
    assert s != Shaped((3, 5), np.dtype(np.float64), tags=frozenset(),
                       axes=None)


def test_array_class_replacing_array_eq_is_refused() -> None:
    from pytato.array import _SuppliedAxesAndTagsMixin
    from pytato.diagnostic import ArrayClassEqualityError

    # @dataclass's own __eq__ compares fields recursively (exponential on
    # graphs with shared nodes): refused at the first construction, with an
    # AssertionError as by the reference
    @dataclass(frozen=True)
    class MyArray(_SuppliedAxesAndTagsMixin, pt.Array):
        pass

    with pytest.raises(AssertionError, match="MyArray"):
        MyArray(tags=frozenset(), axes=())
    with pytest.raises(ArrayClassEqualityError):
        MyArray(tags=frozenset(), axes=())

# }}}


# {{{ _np_result_dtype

@pytest.mark.parametrize(("dt1", "dt2"), list(itertools.combinations(
    [np.int8, np.int32, np.int64, np.uint8, np.float32, np.float64,
     np.complex64, np.bool_], 2)))
def test_np_result_dtype(queue: Any, dt1: Any, dt2: Any) -> None:
    from pytato.array import _np_result_dtype

    assert _np_result_dtype(dt1, dt2) == np.result_type(dt1, dt2)
    assert _np_result_dtype(np.dtype(dt1)) == np.dtype(dt1)
    # numpy 2's weak Python scalars
    assert _np_result_dtype(dt1, 2) == np.result_type(dt1, 2)

    a = np.arange(1, 7).reshape(2, 3).astype(dt1)
    b = np.arange(1, 4).astype(dt2)
    x = pt.make_placeholder("x", a.shape, a.dtype)
    y = pt.make_placeholder("y", b.shape, b.dtype)
    expr = x * y
    assert expr.dtype == _np_result_dtype(x.dtype, y.dtype)
    out = _run(queue, expr, x=a, y=b)
    assert out.dtype == _np_result_dtype(dt1, dt2)
    np.testing.assert_allclose(out, a * b)

# }}}


# {{{ _verify_is_array

def test_verify_is_array() -> None:
    from pytato.diagnostic import NotAnArrayError
    from pytato.transform import CopyMapper, _verify_is_array

    x = pt.make_placeholder("x", (3,))
    y = 2 * x
    assert _verify_is_array(y) is y
    assert _verify_is_array(CopyMapper()(y)) == y

    d = pt.make_dict_of_named_arrays({"y": y})
    for not_an_array in [d, 3, np.ones(3), None]:
        with pytest.raises(TypeError, match="expected an Array"):
            _verify_is_array(not_an_array)
    with pytest.raises(NotAnArrayError):
        _verify_is_array(d)
    # (the reference's check is an assertion)
    with pytest.raises(AssertionError):
        _verify_is_array(d)

# }}}


# {{{ _normalize_pad_width

@pytest.mark.parametrize(("pad_width", "expected"), [
    (2, ((2, 2), (2, 2), (2, 2))),
    ((3,), ((3, 3), (3, 3), (3, 3))),
    ((1, 2), ((1, 2), (1, 2), (1, 2))),
    (((1, 2),), ((1, 2), (1, 2), (1, 2))),
    (((1, 2), (0, 3), (4, 0)), ((1, 2), (0, 3), (4, 0))),
    ([[1, 2], [0, 3], [4, 0]], ((1, 2), (0, 3), (4, 0))),
    (np.int64(1), ((1, 1), (1, 1), (1, 1))),
])
def test_normalize_pad_width(queue: Any, pad_width: Any,
                             expected: Any) -> None:
    from pytato.pad import _normalize_pad_width

    a = np.arange(2 * 3 * 4, dtype=np.float64).reshape(2, 3, 4)
    x = pt.make_placeholder("x", a.shape, a.dtype)
    widths = _normalize_pad_width(x, pad_width)
    assert widths == expected
    assert all(type(b) is int and type(e) is int for b, e in widths)

    # pad with the normalized widths is pad with the given ones, and numpy's
    np.testing.assert_array_equal(
        _run(queue, pt.pad(x, widths), x=a), np.pad(a, pad_width))
    np.testing.assert_array_equal(
        _run(queue, pt.pad(x, pad_width), x=a), np.pad(a, pad_width))


@pytest.mark.parametrize("pad_width", [
    1.5, (1, 2, 3), ((1, 2), (3, 4)), ((1, 2, 3),), -1, ((1, -2),), "a"])
def test_normalize_pad_width_errors(pad_width: Any) -> None:
    from pytato.pad import _normalize_pad_width

    x = pt.make_placeholder("x", (2, 3, 4))
    # a ValueError, as the reference's (also a TypeError for widths that are
    # not integers, as numpy's)
    with pytest.raises(ValueError, match="pad_width"):
        _normalize_pad_width(x, pad_width)
    with pytest.raises(ValueError, match="pad_width"):
        pt.pad(x, pad_width)


def test_pad_width_of_floats_is_a_type_error_as_for_numpy() -> None:
    with pytest.raises(TypeError):
        np.pad(np.ones(3), 1.5)
    with pytest.raises(TypeError, match="pad_width"):
        pt.pad(pt.make_placeholder("x", (3,)), 1.5)

# }}}


# {{{ _schedule_task_batches_counted

def test_schedule_task_batches() -> None:
    from pytato.distributed.partition import _schedule_task_batches_counted

    deps = {"a": set(), "b": {"a"}, "c": {"a", "b"}, "d": set(),
            "e": {"d"}, "f": {"c", "e"}}
    batches, count = _schedule_task_batches_counted(deps)
    assert [set(b) for b in batches] == [{"a", "d"}, {"b", "e"}, {"c"}, {"f"}]
    assert count == 2 * len(deps)

    assert _schedule_task_batches_counted({}) == ([], 0)


def test_schedule_task_batches_of_random_dags() -> None:
    from pytato.distributed.partition import _schedule_task_batches_counted

    rng = np.random.default_rng(7)
    for n in [1, 5, 40, 300]:
        deps = {i: {int(j) for j in rng.integers(0, i, rng.integers(0, 4))}
                if i else set() for i in range(n)}
        # (keys in shuffled order)
        deps = {i: deps[i] for i in rng.permutation(n).tolist()}
        batches, count = _schedule_task_batches_counted(deps)
        batch_of = {t: k for k, b in enumerate(batches) for t in b}
        assert sorted(batch_of) == list(range(n))
        for t, needed in deps.items():
            # after what it needs, and as early as that allows
            assert all(batch_of[d] < batch_of[t] for d in needed)
            assert batch_of[t] == 1 + max((batch_of[d] for d in needed),
                                          default=-1)
        assert count == 2 * n


def test_schedule_task_batches_is_linear_on_chains() -> None:
    from pytato.distributed.partition import _schedule_task_batches_counted

    # a chain longer than Python's recursion limit, keys in reverse order
    for n in [10, 1000, 100_000]:
        deps = {i: ({i - 1} if i else set()) for i in reversed(range(n))}
        batches, count = _schedule_task_batches_counted(deps)
        assert len(batches) == n
        assert all(b == {i} for i, b in enumerate(batches))
        assert count == 2 * n


def test_schedule_task_batches_errors() -> None:
    from pytools.graph import CycleError

    from pytato.diagnostic import InvalidKeyError
    from pytato.distributed.partition import _schedule_task_batches_counted

    with pytest.raises(CycleError) as info:
        _schedule_task_batches_counted({1: {2}, 2: {3}, 3: {1}, 4: set()})
    assert info.value.node in {1, 2, 3}
    with pytest.raises(CycleError):
        _schedule_task_batches_counted({1: {1}})
    with pytest.raises(KeyError, match="'x'"):
        _schedule_task_batches_counted({1: {"x"}})
    with pytest.raises(InvalidKeyError):
        _schedule_task_batches_counted({1: {"x"}})

# }}}


# {{{ name patterns

def test_idx_lambda_axis_index() -> None:
    from pytato.scalar_expr import IDX_LAMBDA_AXIS_INDEX, get_dependencies

    for name in ["_0", "_1", "_9", "_10", "_123"]:
        match = IDX_LAMBDA_AXIS_INDEX.fullmatch(name)
        assert match is not None
        assert int(match.group(1)[1:]) == int(name[1:])
    for name in ["_01", "_", "0", "_r0", "_in0", "x_0", "_0a", "_-1", " _0"]:
        assert IDX_LAMBDA_AXIS_INDEX.match(name) is None

    # the index variables of the index lambdas pytato builds
    x = pt.make_placeholder("x", (3, 4, 5))
    expr = pt.sum(pt.sin(x) + x[0], axis=2)
    names = get_dependencies(expr.expr)
    assert {n for n in names if IDX_LAMBDA_AXIS_INDEX.match(n)} == {"_0", "_1"}


def test_binding_name_reserved_pattern() -> None:
    from pytato.transform.metadata import BINDING_NAME_RESERVED_PATTERN

    for name in ["_in0", "_in1", "_in10", "_i0", "_i42"]:
        assert BINDING_NAME_RESERVED_PATTERN.match(name) is not None
    for name in ["_in01", "_in", "_i", "_0", "in0", "_in0x", "_im0", "_r0"]:
        assert BINDING_NAME_RESERVED_PATTERN.match(name) is None

    # the binding names pytato gives
    x = pt.make_placeholder("x", (3, 4))
    y = pt.make_placeholder("y", (4,))
    for expr in [x + y, pt.where(x > 0, x, y), pt.sum(x * y, axis=1)]:
        assert expr.bindings
        assert all(BINDING_NAME_RESERVED_PATTERN.match(name)
                   for name in expr.bindings)

# }}}

# vim: foldmethod=marker
