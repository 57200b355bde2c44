"""Bad input raises typed errors (:mod:`pytato.diagnostic`) that name the
offending argument and also derive from the builtin exception a user
would catch (as numpy's ``AxisError`` derives from ``ValueError`` and
``IndexError``)."""

from __future__ import annotations

from typing import Any

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


# the errors the reference pytato raises (its builtin class), for bad input
# that code written for it may catch
_REFERENCE_BUILTIN_CASES = [
    ("roll_axis", lambda x: pt.roll(x, 1, axis=5), ValueError),
    ("transpose_repeated", lambda x: pt.transpose(x, (0, 0)), ValueError),
    ("transpose_length", lambda x: pt.transpose(x, (0,)), ValueError),
    ("reshape_size", lambda x: pt.reshape(x, (5,)), ValueError),
    ("stack_shapes", lambda x: pt.stack([x, x[:2]]), ValueError),
    ("stack_empty", lambda x: pt.stack([]), ValueError),
    ("stack_axis", lambda x: pt.stack([x, x], axis=5), ValueError),
    ("concatenate_shapes", lambda x: pt.concatenate([x, x[:, :2]]), ValueError),
    ("concatenate_axis", lambda x: pt.concatenate([x, x], axis=5), ValueError),
    ("squeeze_axis", lambda x: pt.squeeze(x, axis=0), ValueError),
    ("expand_dims_axis", lambda x: pt.expand_dims(x, 5), ValueError),
    ("sum_axis", lambda x: pt.sum(x, axis=5), ValueError),
    ("amax_empty", lambda x: pt.amax(pt.zeros((0,))), ValueError),
    ("broadcast", lambda x: x + pt.zeros((5,)), ValueError),
    ("matmul_scalar", lambda x: pt.matmul(x, 2), ValueError),
    ("matmul_shapes", lambda x: x @ x, ValueError),
    ("einsum_shapes", lambda x: pt.einsum("ij,jk->ik", x, x), ValueError),
    ("einsum_index", lambda x: pt.einsum("i1->i", x), ValueError),
    ("placeholder_name", lambda x: pt.make_placeholder("1x", (3,)), ValueError),
    ("negative_shape", lambda x: pt.make_placeholder("y", (-1,)), ValueError),
    ("full_order", lambda x: pt.zeros((3,), order="F"), ValueError),
    ("pad_mode", lambda x: pt.pad(x, 1, mode="reflect"), NotImplementedError),
    ("pad_width", lambda x: pt.pad(x, 1.5), ValueError),
    ("index_bounds", lambda x: x[5], IndexError),
    ("index_count", lambda x: x[0, 0, 0], IndexError),
    ("index_float", lambda x: x[1.5], IndexError),
    ("len_0d", lambda x: len(pt.sum(x)), TypeError),
    ("to_index_lambda_input", lambda x: pt.to_index_lambda(x), ValueError),
    ("generate_target", lambda x: pt.generate_loopy(x, target="opencl"),
     TypeError),
    ("generate_result", lambda x: pt.generate_loopy(3), TypeError),
    ("verify_is_array",
     lambda x: pt.transform._verify_is_array(pt.make_dict_of_named_arrays(
         {"y": x})), TypeError),
]


@pytest.mark.parametrize(("fn", "builtin"),
                         [c[1:] for c in _REFERENCE_BUILTIN_CASES],
                         ids=[c[0] for c in _REFERENCE_BUILTIN_CASES])
def test_reference_builtin_classes(fn: Any, builtin: type) -> None:
    """Typed (a :class:`PytatoError`), and of the builtin class the
    reference raises there (numpy's too, where numpy has the function)."""
    x = pt.make_placeholder("x", (3, 4), np.float64)
    with pytest.raises(builtin) as info:
        fn(x)
    assert isinstance(info.value, PytatoError), type(info.value)


def test_reference_error_classes_keep_their_builtin_bases() -> None:
    """The classes of the reference's errors have the reference's builtin
    bases (and ours add numpy's where numpy raises another)."""
    from pytools.graph import CycleError

    from pytato import diagnostic as d
    from pytato.distributed import verify as v
    from pytato.transform import lower_to_index_lambda as lil

    expected = {
        d.CannotBroadcastError: ValueError, d.InvalidEinsumIndex: ValueError,
        d.NameClashError: RuntimeError, d.NotAReductionAxis: ValueError,
        d.CannotBeLoweredToIndexLambda: ValueError,
        d.UnknownIndexLambdaExpr: ValueError,
        d.AxisError: (ValueError, IndexError),
        d.ArrayClassEqualityError: AssertionError,
        d.NotAnArrayError: (TypeError, AssertionError),
        d.NonIntegralArgumentError: (TypeError, ValueError),
        d.UnsupportedFeatureError: (NotImplementedError, ValueError),
        d.DependencyCycleError: CycleError,
        lil.NotLowerableToIndexLambdaError: (
            d.CannotBeLoweredToIndexLambda, NotImplementedError),
        pt.transform.UnsupportedArrayError: ValueError,
        pt.transform.CacheCollisionError: ValueError,
        pt.transform.MapperCreatedDuplicateError: ValueError,
        pt.loopy.ShapeInferenceFailure: RuntimeError,
        v.PartitionInducedCycleError: AssertionError,
        v.DuplicateSendError: ValueError,
    }
    for cls, bases in expected.items():
        assert issubclass(cls, d.PytatoError), cls
        assert issubclass(cls, bases), cls


def test_every_error_class_has_a_builtin_base() -> None:
    """Each error class of :mod:`pytato.diagnostic` derives from a builtin
    exception more specific than :class:`Exception` (so that code catching
    the builtin that numpy or the reference raises keeps working), or from
    the reference's own class (:class:`pytools.graph.CycleError`)."""
    import builtins

    from pytato import diagnostic as d

    specific = tuple(
        c for c in vars(builtins).values()
        if isinstance(c, type) and issubclass(c, Exception)
        and c is not Exception)
    classes = [c for c in vars(d).values()
               if isinstance(c, type) and issubclass(c, d.PytatoError)
               and c is not d.PytatoError]
    assert len(classes) > 30
    # (or from the class of another library that the reference raises)
    from pytools.graph import CycleError
    missing = [c.__name__ for c in classes
               if not issubclass(c, (*specific, CycleError))]
    assert not missing


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
