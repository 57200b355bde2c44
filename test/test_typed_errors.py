"""Bad input raises typed errors (:mod:`pytato.diagnostic`) that name the
offending argument and also derive from the builtin exception a user
would catch (as numpy's ``AxisError`` derives from ``ValueError`` and
``IndexError``)."""

from __future__ import annotations

import numpy as np
import pytest
from pytools.tag import Tag

import pytato as pt
from pytato.diagnostic import (
    IndexDTypeError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidIndexError,
    InvalidKeyError,
    NameClashError,
    PytatoError,
    ScalarOverflowError,
    TagTypeError,
)


DTYPES = [np.bool_, np.int32, np.float64, np.complex128]


def _values(dtype: type, n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    if dtype is np.bool_:
        return rng.integers(0, 2, n).astype(bool)
    if dtype is np.complex128:
        return rng.standard_normal(n) + 1j * rng.standard_normal(n)
    return rng.integers(-5, 5, n).astype(dtype)


# {{{ a context where a queue is expected

@pytest.mark.parametrize("dtype", DTYPES)
def test_context_instead_of_queue(ctx_factory, dtype) -> None:
    import pyopencl as cl
    ctx = ctx_factory()
    queue = cl.CommandQueue(ctx)
    x = pt.make_placeholder("x", (4,), dtype)
    prog = pt.generate_loopy(pt.stack([x, x]))
    xv = _values(dtype, 4)
    for _ in range(2):      # before and after a call (its fast path)
        with pytest.raises(InvalidArgumentTypeError,
                           match=r"'queue'.*Context") as info:
            prog(ctx, x=xv)
        assert isinstance(info.value, TypeError)
        _, (out,) = prog(queue, x=xv)
        np.testing.assert_array_equal(out, np.stack([xv, xv]))
    exe = prog.bind_to_context(ctx)
    with pytest.raises(InvalidArgumentTypeError, match="'queue'"):
        exe(ctx, x=xv)
    with pytest.raises(TypeError, match=r"'queue'.*got int"):
        prog(3, x=xv)

# }}}


# {{{ Python integers that do not fit the array's dtype (NEP 50)

@pytest.mark.parametrize(("dtype", "value"), [
    (np.int32, 2**40), (np.uint8, -1), (np.int8, 300), (np.bool_, 2**70),
    (np.int64, 2**63)])
def test_python_int_overflow(dtype, value) -> None:
    x = pt.make_placeholder("y", (3,), dtype)
    with pytest.raises(OverflowError):
        np.ones(3, dtype) + value     # numpy 2 refuses too
    for fn, name in [(lambda: x + value, "x2"), (lambda: value * x, "x1"),
                     (lambda: x - value, "x2")]:
        with pytest.raises(ScalarOverflowError,
                           match=f"'{name}' \\({value}\\)") as info:
            fn()
        assert isinstance(info.value, OverflowError)
        assert isinstance(info.value, PytatoError)


@pytest.mark.parametrize(("dtype", "value"), [
    (np.int8, 300), (np.int8, -129), (np.uint8, -1), (np.uint8, 256),
    (np.int32, 2**40), (np.uint64, -1), (np.uint64, 2**64),
    (np.int64, -2**63 - 1), (np.int64, 2**70), (np.bool_, 300)])
def test_comparison_with_python_int_out_of_range(ctx_factory, dtype,
                                                 value) -> None:
    """An integer array compared with a Python integer outside its dtype's
    range gives numpy 2's result (the same for every element), with the
    operators on either side and the functions; where numpy refuses, so
    do we."""
    import operator

    import pyopencl as cl
    queue = cl.CommandQueue(ctx_factory())
    xv = _values(dtype, 5)
    x = pt.make_placeholder("x", (5,), dtype)
    ops = [operator.lt, operator.le, operator.gt, operator.ge]
    cases = [*((lambda m, a, op=op: op(a, value)) for op in ops),
             *((lambda m, a, op=op: op(value, a)) for op in ops),
             *((lambda m, a, name=name: getattr(m, name)(a, value))
               for name in ("less", "less_equal", "greater", "greater_equal",
                            "equal", "not_equal")),
             lambda m, a: m.equal(value, a)]
    for case in cases:
        try:
            want = np.asarray(case(np, xv))
        except OverflowError:
            with pytest.raises(OverflowError):
                case(pt, x)
            continue
        _, (got,) = pt.generate_loopy(case(pt, x))(queue, x=xv)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_where_python_int_overflow() -> None:
    for dtype in (np.bool_, np.int64):
        c = pt.make_placeholder("c", (3,), np.bool_)
        x = pt.make_placeholder("x", (3,), dtype)
        with pytest.raises(OverflowError):
            np.where(np.ones(3, bool), np.ones(3, dtype), 2**70)
        with pytest.raises(ScalarOverflowError, match="'y'"):
            pt.where(c, x, 2**70)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.bool_,
                                   np.complex128])
def test_python_int_in_range(ctx_factory, dtype) -> None:
    """Python integers that fit are accepted, with numpy's result dtype and
    values (wrapping as numpy does)."""
    import pyopencl as cl
    queue = cl.CommandQueue(ctx_factory())
    x = pt.make_placeholder("x", (4,), dtype)
    xv = _values(dtype, 4)
    value = 1 if dtype is np.bool_ else 100
    expected = xv + value
    y = x + value
    assert y.dtype == expected.dtype
    _, (out,) = pt.generate_loopy(y)(queue, x=xv)
    np.testing.assert_array_equal(out, expected)

# }}}


# {{{ tags

@pytest.mark.parametrize("dtype", [np.bool_, np.complex128])
def test_non_tag_in_tags(dtype) -> None:
    for bad in [frozenset({1}), [pt.tags.ImplStored(), "stored"], 3]:
        with pytest.raises(TagTypeError,
                           match="placeholder 'y', argument 'tags'") as info:
            pt.make_placeholder("y", (3,), dtype, tags=bad)
        assert isinstance(info.value, TypeError)
    with pytest.raises(TagTypeError, match="argument 'tags'"):
        pt.make_data_wrapper(np.zeros(3, dtype), tags=[object()])
    with pytest.raises(TagTypeError, match="argument 'tags'"):
        pt.make_dict_of_named_arrays(
            {"a": pt.make_placeholder("y", (3,), dtype)}, tags=["a"])


def test_str_as_tags() -> None:
    x = pt.make_placeholder("x", (3,), np.complex128)
    with pytest.raises(TagTypeError,
                       match=r"tagged\(\), argument 'tags'.*the str 'stored'"):
        x.tagged("stored")      # type: ignore[arg-type]
    with pytest.raises(TypeError, match="the str"):
        x.without_tags("stored")   # type: ignore[arg-type]
    assert isinstance(pt.tags.ImplStored(), Tag)
    assert pt.tags.ImplStored() in x.tagged(pt.tags.ImplStored()).tags

# }}}


# {{{ index arrays

@pytest.mark.parametrize("idx_dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("dtype", [np.bool_, np.complex128])
def test_non_integer_index_array(dtype, idx_dtype) -> None:
    x = pt.make_placeholder("x", (3, 4), dtype)
    idx = pt.make_placeholder("idx", (2,), idx_dtype)
    with pytest.raises(IndexError):
        np.zeros((3, 4))[np.zeros(2, idx_dtype)]
    with pytest.raises(IndexDTypeError,
                       match=f"index 0.*placeholder 'idx'.*{np.dtype(idx_dtype)}"
                       ) as info:
        x[idx]
    assert isinstance(info.value, IndexError)
    with pytest.raises(IndexDTypeError, match=f"index 1.*{np.dtype(idx_dtype)}"):
        x[:, np.zeros(2, idx_dtype)]
    with pytest.raises(IndexDTypeError, match=r"index 1.*lazy IndexLambda"):
        x[0, idx * 2]

# }}}


# {{{ the audit: other bad input is typed and still caught as the builtin

def test_bad_input_errors_are_typed() -> None:
    x = pt.make_placeholder("x", (3, 4), np.complex128)
    b = pt.make_placeholder("b", (3, 4), np.bool_)
    cases = [
        (lambda: pt.reshape(x, (4, 3), order="X"), InvalidArgumentError,
         ValueError, "'order'"),
        (lambda: pt.reshape(b, "12"), InvalidArgumentTypeError, TypeError,
         "'newshape'"),
        (lambda: pt.stack([]), InvalidArgumentError, ValueError, "'arrays'"),
        (lambda: pt.roll(b, 1.5), InvalidArgumentTypeError, TypeError,
         "'shift'"),
        (lambda: x[0, 0, 0], InvalidIndexError, IndexError, "too many"),
        (lambda: b[..., 0, ...], InvalidIndexError, IndexError, "ellipsis"),
        (lambda: x[0:"a"], InvalidIndexError, IndexError, "slice"),
        (lambda: pt.where(b, x), InvalidArgumentError, ValueError, "'y'"),
        (lambda: len(pt.sum(x)), InvalidArgumentTypeError, TypeError,
         "0-d"),
    ]
    for fn, typed, builtin, name in cases:
        with pytest.raises(typed, match=name) as info:
            fn()
        assert isinstance(info.value, builtin)
        assert isinstance(info.value, PytatoError)


def test_invalid_key_error_message() -> None:
    err = InvalidKeyError("output 'z' does not exist")
    assert isinstance(err, KeyError) and isinstance(err, PytatoError)
    assert str(err) == "output 'z' does not exist"    # not KeyError's repr

# }}}


@pytest.mark.parametrize("name", ["sin", "exp", "atan2", "fabs"])
def test_array_named_like_a_called_function(ctx_factory, name) -> None:
    """An input or output named like an OpenCL C function that the kernel
    calls would hide the function in the device code: a
    :class:`NameClashError` names it when the code is generated (at the
    first call, or by ``get_code``), before any OpenCL compiler sees it;
    arrays named like functions the kernel does not call keep working."""
    import pyopencl as cl
    queue = cl.CommandQueue(ctx_factory())
    xv = np.arange(4.0)
    x = pt.make_placeholder("x", (4,), np.float64)
    called = {"sin": pt.sin(x), "exp": pt.exp(x), "atan2": pt.arctan2(x, x),
              "fabs": pt.abs(x)}[name]
    prog = pt.generate_loopy({name: called})
    with pytest.raises(NameClashError, match=f"'{name}'.*OpenCL C function"):
        prog(queue, x=xv)
    with pytest.raises(NameClashError, match=f"'{name}'.*OpenCL C function"):
        prog.get_code()
    y = pt.make_placeholder(name, (4,), np.float64)
    with pytest.raises(NameClashError, match=f"'{name}'"):
        pt.generate_loopy({"out": called + y})(queue, x=xv, **{name: xv})
    # not called: fine
    _, out = pt.generate_loopy({"out": 2 * y})(queue, **{name: xv})
    np.testing.assert_array_equal(out["out"], 2 * xv)
    _, out = pt.generate_loopy({name: 2 * x})(queue, x=xv)
    np.testing.assert_array_equal(out[name], 2 * xv)
