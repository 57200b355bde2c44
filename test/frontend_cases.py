"""Shared front-end test cases: graphs built with pytato's numpy-like
functions, each with the numpy computation it must agree with.

The front-end tests run these cases through the numpy target; target tests
(e.g. OpenCL) can run the same lists through their code generators::

    from frontend_cases import MATH_CASES, build, check_result

    @pytest.mark.parametrize("case", MATH_CASES, ids=str)
    def test_math_cl(case, queue):
        result = build(case)
        prog = pt.generate_loopy(result)
        _, (out,) = prog(queue, **call_args(case, result))
        check_result(case, result, out)

Lists: :data:`MATH_CASES`, :data:`REDUCTION_CASES`, :data:`CREATION_CASES`,
:data:`MISC_CASES` (``where`` and ``pad``). Cases whose result would be
``float16`` (numpy's result for, e.g., ``sin`` of ``bool``/``int8``) are left
out of the lists; they are refused at construction (the dtype-rule tests
check that). :data:`ALL_DTYPES` has no ``float16``: placeholders of that
dtype are refused.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import pytato as pt
from pytato.array.inputs import InputArgumentBase
from pytato.transform import InputGatherer


# {{{ the case type and its helpers

@dataclass(frozen=True)
class Case:
    """One front-end graph and its numpy counterpart.

    :attr build: called with the pytato inputs (placeholders and size
        parameters by name), returns the result array.
    :attr ref: called with the numpy inputs (arrays and sizes by name),
        returns the expected value.
    :attr args: input name to value: an array (for a placeholder) or an int
        (for a size parameter).
    :attr shapes: symbolic shapes of placeholders: tuples of ints and size
        parameter names.
    """

    id: str
    build: Callable[..., Any]
    ref: Callable[..., Any]
    args: Mapping[str, Any] = field(default_factory=dict)
    shapes: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.id


def make_inputs(case: Case) -> dict[str, pt.Array]:
    """The pytato inputs of *case*."""
    sizes = {name: pt.make_size_param(name) for name, v in case.args.items()
             if isinstance(v, int)}
    inputs: dict[str, pt.Array] = dict(sizes)
    for name, v in case.args.items():
        if isinstance(v, int):
            continue
        shape = tuple(sizes[c] if isinstance(c, str) else c
                      for c in case.shapes.get(name, v.shape))
        inputs[name] = pt.make_placeholder(name, shape, v.dtype)
    return inputs


def build(case: Case) -> Any:
    """The pytato result of *case*."""
    return case.build(**make_inputs(case))


def expected(case: Case) -> Any:
    """The numpy result of *case*."""
    with np.errstate(all="ignore"):
        return np.asarray(case.ref(**case.args))


def call_args(case: Case, result: pt.Array) -> dict[str, Any]:
    """The arguments of *case* that *result* depends on."""
    names = {n.name for n in InputGatherer()(result)
             if isinstance(n, InputArgumentBase) and getattr(n, "name", None)}
    return {k: v for k, v in case.args.items() if k in names}


def _rtol(dtype: np.dtype[Any]) -> float:
    return {"e": 1e-3, "f": 1e-5, "F": 1e-5}.get(dtype.char, 1e-12)


def check_graph(case: Case, result: Any) -> np.ndarray:
    """Check the shape and dtype of *result* against numpy's; return the
    expected value."""
    exp = expected(case)
    assert isinstance(result, pt.Array), type(result)
    assert result.dtype == exp.dtype, (result.dtype, exp.dtype)
    sizes = {k: v for k, v in case.args.items() if isinstance(v, int)}
    from pytato.array.shape import concrete_shape
    assert concrete_shape(result.shape, sizes) == exp.shape, (
        result.shape, exp.shape)
    return exp


def check_result(case: Case, result: Any, value: Any) -> None:
    """Check the computed *value* of *result* against numpy."""
    exp = check_graph(case, result)
    value = np.asarray(value)
    assert value.shape == exp.shape, (value.shape, exp.shape)
    assert value.dtype == exp.dtype, (value.dtype, exp.dtype)
    if exp.dtype.kind in "biu":
        np.testing.assert_array_equal(value, exp)
    else:
        np.testing.assert_allclose(value, exp, rtol=_rtol(exp.dtype),
                                   atol=_rtol(exp.dtype) * 1e-3,
                                   equal_nan=True)

# }}}


# {{{ data

def data(shape: tuple[int, ...], dtype: Any, domain: str = "any",
         seed: str = "") -> np.ndarray:
    """Deterministic test data of *shape* and *dtype* in *domain*: ``"any"``
    (small values of both signs), ``"pos"`` (positive), ``"unit"`` (inside
    (-1, 1)), ``"special"`` (with NaNs, infinities and signed zeros)."""
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(zlib.crc32(
        f"{shape}{dtype}{domain}{seed}".encode()))
    if dtype.kind == "b":
        return rng.random(shape) > 0.5
    if dtype.kind in "iu":
        lo, hi = {"any": (-3, 4), "pos": (1, 5), "unit": (0, 1),
                  "special": (-2, 3)}[domain]
        if dtype.kind == "u":
            lo = max(lo, 0)
        return rng.integers(lo, hi, shape).astype(dtype)
    lo, hi = {"any": (-2.5, 2.5), "pos": (0.5, 3), "unit": (-0.9, 0.9),
              "special": (-2, 2)}[domain]

    def real(seed_shift: int) -> np.ndarray:
        x = rng.uniform(lo, hi, shape)
        if domain == "special" and x.size:
            specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5])
            flat = x.reshape(-1)
            picks = rng.integers(0, len(specials) + 2, flat.size)
            mask = picks < len(specials)
            flat[mask] = specials[picks[mask]]
            flat[(np.arange(flat.size) + seed_shift) % len(specials) == 0] \
                = specials[seed_shift % len(specials)]
        return x

    if dtype.kind == "c":
        z = np.empty(shape, dtype)
        z.real, z.imag = real(0), real(1)
        return z
    return real(0).astype(dtype)

# }}}


ALL_DTYPES = [np.bool_, np.int8, np.int32, np.int64, np.uint8,
              np.float32, np.float64, np.complex64, np.complex128]
VALUE_DTYPES = [np.bool_, np.int32, np.int64, np.uint8, np.float32, np.float64,
                np.complex64, np.complex128]
SHAPES = [(3, 4), (), (0,), (2, 1, 3)]


def numpy_result_dtype(np_func: Callable[..., Any], *dtypes: Any
                       ) -> np.dtype[Any] | None:
    """numpy's result dtype of *np_func* applied to arrays of *dtypes* (None
    if numpy rejects them)."""
    try:
        return np.asarray(np_func(*(np.empty((0,), dt) for dt in dtypes))).dtype
    except TypeError:
        return None


# {{{ math

#: (pytato name, numpy function, input domain)
UNARY_FUNCS: list[tuple[str, Callable[..., Any], str]] = [
    ("sqrt", np.sqrt, "pos"), ("exp", np.exp, "any"), ("log", np.log, "pos"),
    ("log10", np.log10, "pos"), ("sin", np.sin, "any"), ("cos", np.cos, "any"),
    ("tan", np.tan, "unit"), ("arcsin", np.arcsin, "unit"),
    ("arccos", np.arccos, "unit"), ("arctan", np.arctan, "any"),
    ("sinh", np.sinh, "any"), ("cosh", np.cosh, "any"),
    ("tanh", np.tanh, "any"), ("floor", np.floor, "any"),
    ("ceil", np.ceil, "any"), ("abs", np.abs, "any"),
    ("real", np.real, "any"), ("imag", np.imag, "any"),
    ("conj", np.conjugate, "any"), ("sign", np.sign, "special"),
    ("square", np.square, "any"), ("reciprocal", np.reciprocal, "pos"),
    ("isnan", np.isnan, "special"), ("isinf", np.isinf, "special"),
    ("isfinite", np.isfinite, "special"),
]


def _unary_case(name: str, np_func: Callable[..., Any], domain: str,
                dtype: Any, shape: tuple[int, ...]) -> Case:
    return Case(f"{name}-{np.dtype(dtype)}-{shape}",
                lambda x: getattr(pt, name)(x), lambda x: np_func(x),
                {"x": data(shape, dtype, domain, name)})


def _math_cases() -> list[Case]:
    cases = []
    for i, (name, np_func, domain) in enumerate(UNARY_FUNCS):
        for j, dtype in enumerate(VALUE_DTYPES):
            out = numpy_result_dtype(np_func, dtype)
            if out is None or out == np.float16:
                continue
            if name == "reciprocal" and np.dtype(dtype).kind not in "fc":
                continue  # integer reciprocals are not supported
            cases.append(_unary_case(name, np_func, domain, dtype,
                                     SHAPES[(i + j) % len(SHAPES)]))

    f32, f64, i32 = np.float32, np.float64, np.int32
    cases += [
        Case("arctan2-broadcast-f64", lambda a, b: pt.arctan2(a, b),
             lambda a, b: np.arctan2(a, b),
             {"a": data((3, 1), f64), "b": data((4,), f64, seed="b")}),
        Case("arctan2-f32-pyscalar", lambda a: pt.arctan2(a, 2.0),
             lambda a: np.arctan2(a, 2.0), {"a": data((5,), f32)}),
        Case("arctan2-int-f32", lambda a, b: pt.arctan2(a, b),
             lambda a, b: np.arctan2(a, b),
             {"a": data((2, 3), i32), "b": data((2, 3), f32, "pos")}),
        Case("astype-f64-i32", lambda x: pt.astype(x, np.int32),
             lambda x: x.astype(np.int32), {"x": data((3, 4), f64)}),
        Case("astype-i32-c128", lambda x: x.astype(np.complex128),
             lambda x: x.astype(np.complex128), {"x": data((2, 2), i32)}),
        Case("astype-f64-bool", lambda x: pt.astype(x, bool),
             lambda x: x.astype(bool), {"x": data((4,), i32)}),
        Case("astype-0d", lambda x: pt.astype(x, f32),
             lambda x: x.astype(f32), {"x": data((), f64)}),
        Case("abs-method-c64", lambda x: abs(x), lambda x: np.abs(x),
             {"x": data((3,), np.complex64)}),
        Case("real-attr-c128", lambda x: x.real, lambda x: np.real(x),
             {"x": data((2, 3), np.complex128)}),
        Case("imag-attr-f32", lambda x: x.imag, lambda x: np.imag(x),
             {"x": data((2, 3), f32)}),
        Case("sin-symbolic", lambda x, n: pt.sin(x), lambda x, n: np.sin(x),
             {"x": data((5, 2), f64), "n": 5}, {"x": ("n", 2)}),
        Case("sqrt-of-sum", lambda x: pt.sqrt(x * x + 1.0),
             lambda x: np.sqrt(x * x + 1.0), {"x": data((4,), f32)}),
    ]
    return cases


MATH_CASES = _math_cases()

# }}}


# {{{ reductions

REDUCTION_FUNCS: list[tuple[str, Callable[..., Any]]] = [
    ("sum", np.sum), ("prod", np.prod), ("amax", np.max), ("amin", np.min),
    ("any", np.any), ("all", np.all)]
REDUCTION_DTYPES = [np.bool_, np.int32, np.uint8, np.float32, np.float64,
                    np.complex128]
#: (shape, axis, keepdims)
REDUCTION_CONFIGS: list[tuple[tuple[int, ...], Any, bool]] = [
    ((2, 3, 4), None, False), ((2, 3, 4), 1, False), ((2, 3, 4), (0, 2), True),
    ((2, 3, 4), -1, False), ((3,), 0, False), ((), None, False),
    ((0, 3), 1, False), ((2, 3, 4), (), False), ((4, 0), 0, True),
    ((2, 3), (-1, 0), False),
]


def _supported(func: str, dtype: Any, shape: tuple[int, ...], axis: Any) -> bool:
    if func in ("amax", "amin"):
        if np.dtype(dtype).kind == "c":
            return False
        axes = (range(len(shape)) if axis is None
                else (axis,) if isinstance(axis, int) else axis)
        return all(shape[a] != 0 for a in axes)
    return True


def _reduction_case(func: str, np_func: Callable[..., Any], dtype: Any,
                    shape: tuple[int, ...], axis: Any, keepdims: bool) -> Case:
    domain = "any" if func != "prod" else "unit"
    return Case(f"{func}-{np.dtype(dtype)}-{shape}-axis{axis}"
                f"{'-keepdims' if keepdims else ''}",
                lambda x: getattr(pt, func)(x, axis=axis, keepdims=keepdims),
                lambda x: np_func(x, axis=axis, keepdims=keepdims),
                {"x": data(shape, dtype, domain, func)})


def _reduction_cases() -> list[Case]:
    cases = []
    for i, (func, np_func) in enumerate(REDUCTION_FUNCS):
        for j, dtype in enumerate(REDUCTION_DTYPES):
            if np.dtype(dtype) == np.float64:
                configs = REDUCTION_CONFIGS
            else:
                k = 2 * (i + j)
                configs = [REDUCTION_CONFIGS[k % len(REDUCTION_CONFIGS)],
                           REDUCTION_CONFIGS[(k + 1) % len(REDUCTION_CONFIGS)]]
            for shape, axis, keepdims in configs:
                if _supported(func, dtype, shape, axis):
                    cases.append(_reduction_case(func, np_func, dtype, shape,
                                                 axis, keepdims))

    f32, f64, i32 = np.float32, np.float64, np.int32
    x234 = data((2, 3, 4), f64)
    cases += [
        Case("sum-initial", lambda x: pt.sum(x, axis=1, initial=10.5),
             lambda x: np.sum(x, axis=1, initial=10.5), {"x": x234}),
        Case("sum-initial-int-cast", lambda x: pt.sum(x, initial=2.5),
             lambda x: np.sum(x, initial=2.5), {"x": data((5,), i32)}),
        Case("prod-initial", lambda x: pt.prod(x, axis=0, initial=3),
             lambda x: np.prod(x, axis=0, initial=3),
             {"x": data((3, 2), f32, "unit")}),
        Case("amax-initial", lambda x: pt.amax(x, axis=(0, 1), initial=0.5),
             lambda x: np.max(x, axis=(0, 1), initial=0.5), {"x": x234}),
        Case("amin-initial-empty", lambda x: pt.amin(x, axis=0, initial=3),
             lambda x: np.min(x, axis=0, initial=3),
             {"x": data((0, 4), i32)}),
        Case("amax-initial-nan", lambda x: pt.amax(x, initial=100.0),
             lambda x: np.max(x, initial=100.0),
             {"x": np.array([1.0, np.nan, 2.0])}),
        Case("sum-dtype-f32", lambda x: pt.sum(x, axis=1, dtype=f32),
             lambda x: np.sum(x, axis=1, dtype=f32), {"x": data((3, 4), i32)}),
        Case("prod-dtype-c128", lambda x: pt.prod(x, dtype=np.complex128),
             lambda x: np.prod(x, dtype=np.complex128),
             {"x": data((4,), f32, "unit")}),
        Case("sum-int8-to-int64", lambda x: pt.sum(x, axis=0),
             lambda x: np.sum(x, axis=0), {"x": data((6, 2), np.int8)}),
        Case("sum-method", lambda x: x.sum(1), lambda x: x.sum(1),
             {"x": x234}),
        Case("max-method", lambda x: x.max(), lambda x: x.max(), {"x": x234}),
        Case("min-method", lambda x: x.min(axis=0), lambda x: x.min(axis=0),
             {"x": x234}),
        Case("sum-symbolic", lambda x, n: pt.sum(x, axis=0),
             lambda x, n: np.sum(x, axis=0),
             {"x": data((5, 3), f64), "n": 5}, {"x": ("n", 3)}),
        Case("amax-symbolic-all", lambda x, n: pt.amax(x),
             lambda x, n: np.max(x), {"x": data((5, 3), i32), "n": 5},
             {"x": ("n", 3)}),
        Case("any-symbolic-keepdims", lambda x, n: pt.any(x > 1.0, axis=1,
                                                          keepdims=True),
             lambda x, n: np.any(x > 1.0, axis=1, keepdims=True),
             {"x": data((3, 4), f64), "n": 4}, {"x": (3, "n")}),
        Case("sum-symbolic-empty", lambda x, n: pt.sum(x, axis=1),
             lambda x, n: np.sum(x, axis=1),
             {"x": data((2, 0), f32), "n": 0}, {"x": (2, "n")}),
        Case("sum-symbolic-affine", lambda x, n: pt.sum(pt.pad(x, 1), axis=0),
             lambda x, n: np.sum(np.pad(x, 1), axis=0),
             {"x": data((3, 2), f64), "n": 3}, {"x": ("n", 2)}),
        Case("mean-like", lambda x: pt.sum(x, axis=0) / x.shape[0],
             lambda x: np.sum(x, axis=0) / x.shape[0], {"x": x234}),
    ]
    return cases


REDUCTION_CASES = _reduction_cases()

# }}}


# {{{ creation

def _creation_cases() -> list[Case]:
    f32, i32 = np.float32, np.int32
    cases = [
        Case("zeros-2d", lambda: pt.zeros((2, 3)), lambda: np.zeros((2, 3))),
        Case("zeros-int-shape", lambda: pt.zeros(4, i32),
             lambda: np.zeros(4, i32)),
        Case("zeros-0d", lambda: pt.zeros(()), lambda: np.zeros(())),
        Case("zeros-empty", lambda: pt.zeros((0, 3), np.complex64),
             lambda: np.zeros((0, 3), np.complex64)),
        Case("ones-bool", lambda: pt.ones((2, 2), bool),
             lambda: np.ones((2, 2), bool)),
        Case("ones-f32", lambda: pt.ones([3], dtype=f32),
             lambda: np.ones([3], dtype=f32)),
        Case("full-float", lambda: pt.full((2, 3), 7.5),
             lambda: np.full((2, 3), 7.5)),
        Case("full-int", lambda: pt.full(3, 7), lambda: np.full(3, 7)),
        Case("full-bool", lambda: pt.full((2,), True),
             lambda: np.full((2,), True)),
        Case("full-complex", lambda: pt.full((2,), 1 + 2j),
             lambda: np.full((2,), 1 + 2j)),
        Case("full-np-f32", lambda: pt.full((2, 2), np.float32(1.25)),
             lambda: np.full((2, 2), np.float32(1.25))),
        Case("full-cast", lambda: pt.full(3, 2.7, dtype=i32),
             lambda: np.full(3, 2.7, dtype=i32)),
        Case("eye-3", lambda: pt.eye(3), lambda: np.eye(3)),
        Case("eye-3x4-k1-int", lambda: pt.eye(3, 4, k=1, dtype=i32),
             lambda: np.eye(3, 4, k=1, dtype=i32)),
        Case("eye-4x2-k-2", lambda: pt.eye(4, 2, -2), lambda: np.eye(4, 2, -2)),
        Case("eye-k-out", lambda: pt.eye(2, k=5), lambda: np.eye(2, k=5)),
        Case("eye-bool", lambda: pt.eye(3, dtype=bool),
             lambda: np.eye(3, dtype=bool)),
        Case("eye-0", lambda: pt.eye(0), lambda: np.eye(0)),
    ]
    arange_args: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((5,), {}), ((2, 7), {}), ((1, 10, 3), {}), ((10, 1, -2), {}),
        ((0, 1, 0.1), {}), ((1.5,), {}), ((5, 2), {}), ((-3, 3), {}),
        ((0.5, 4), {"dtype": np.int64}), ((0, 10, 3), {"dtype": f32}),
        ((np.float32(3),), {}), ((np.int32(1), np.int32(4)), {}),
        ((np.uint64(3),), {}), ((2.5, -1.0, -0.5), {}),
        ((), {"stop": 4}), ((1,), {"stop": 6, "step": 2}), ((5,), {"step": 2}),
        ((3,), {"stop": 4}), ((), {"stop": 4, "step": 2}),
        ((0, 5), {"dtype": np.uint8}), ((np.float32(0.1), 1, 0.2), {}),
    ]
    for args, kwargs in arange_args:
        cases.append(Case(
            f"arange-{args}-{kwargs}".replace(" ", ""),
            lambda args=args, kwargs=kwargs: pt.arange(*args, **kwargs),
            lambda args=args, kwargs=kwargs: np.arange(*args, **kwargs)))

    x = data((2, 3), f32)
    cases += [
        Case("zeros_like", lambda x: pt.zeros_like(x),
             lambda x: np.zeros_like(x), {"x": x}),
        Case("ones_like-dtype", lambda x: pt.ones_like(x, dtype=np.int64),
             lambda x: np.ones_like(x, dtype=np.int64), {"x": x}),
        Case("full_like", lambda x: pt.full_like(x, 3.7),
             lambda x: np.full_like(x, 3.7), {"x": x}),
        Case("full_like-int", lambda x: pt.full_like(x, 3.7),
             lambda x: np.full_like(x, 3.7), {"x": data((4,), i32)}),
        Case("zeros_like-numpy", lambda: pt.zeros_like(np.ones((2, 2), i32)),
             lambda: np.zeros_like(np.ones((2, 2), i32))),
        Case("zeros-symbolic", lambda n: pt.zeros((n, 2)),
             lambda n: np.zeros((n, 2)), {"n": 3}),
        Case("ones-symbolic-affine", lambda n: pt.ones(2 * n + 1, i32),
             lambda n: np.ones(2 * n + 1, i32), {"n": 3}),
        Case("full-symbolic-zero", lambda n: pt.full((n,), 2.0),
             lambda n: np.full((n,), 2.0), {"n": 0}),
        Case("eye-symbolic", lambda n, m: pt.eye(n, m, 1),
             lambda n, m: np.eye(n, m, 1), {"n": 3, "m": 4}),
        Case("zeros_like-symbolic", lambda x, n: pt.ones_like(x),
             lambda x, n: np.ones_like(x), {"x": data((4, 2), f32), "n": 4},
             {"x": ("n", 2)}),
        Case("arange-symbolic", lambda n: pt.arange(n), lambda n: np.arange(n),
             {"n": 5}),
        Case("arange-symbolic-start", lambda n: pt.arange(2, n, dtype=f32),
             lambda n: np.arange(2, n, dtype=f32), {"n": 6}),
        Case("full-0d-array", lambda v: pt.full((2, 3), v, dtype=f32),
             lambda v: np.full((2, 3), v, dtype=f32), {"v": data((), np.float64)}),
        Case("arange-arith", lambda: pt.arange(6) * 2 + pt.ones(6),
             lambda: np.arange(6) * 2 + np.ones(6)),
    ]
    return cases


CREATION_CASES = _creation_cases()

# }}}


# {{{ where, pad

def _where(c: Any, x: Any, y: Any) -> Any:
    return pt.where(c, x, y)


def _np_where(c: Any, x: Any, y: Any) -> Any:
    return np.where(c, x, y)


def _misc_cases() -> list[Case]:
    f32, f64, i32 = np.float32, np.float64, np.int32
    c = data((3, 4), bool, seed="cond")
    cases = [
        Case("where-f64", _where, _np_where,
             {"c": c, "x": data((3, 4), f64), "y": data((3, 4), f64, seed="y")}),
        Case("where-broadcast", _where, _np_where,
             {"c": data((3, 1), bool), "x": data((4,), f32),
              "y": data((2, 1, 1), f32, seed="y")}),
        Case("where-mixed-dtypes", _where, _np_where,
             {"c": c, "x": data((3, 4), i32), "y": data((4,), f32)}),
        Case("where-weak-scalar", lambda c, x: pt.where(c, x, 2.5),
             lambda c, x: np.where(c, x, 2.5), {"c": c, "x": data((3, 4), f32)}),
        Case("where-int-scalars", lambda c: pt.where(c, 1, 0),
             lambda c: np.where(c, 1, 0), {"c": c}),
        Case("where-scalar-cond", lambda x: pt.where(True, x, -x),
             lambda x: np.where(True, x, -x), {"x": data((2,), f64)}),
        Case("where-nonbool-cond", lambda c, x: pt.where(c, x, 0.0),
             lambda c, x: np.where(c, x, 0.0),
             {"c": data((3,), i32), "x": data((3,), f64)}),
        Case("where-complex", lambda c, x: pt.where(c, x, 1j),
             lambda c, x: np.where(c, x, 1j),
             {"c": data((2, 2), bool), "x": data((2, 2), np.complex64)}),
        Case("where-comparison", lambda x: pt.where(x > 0, x, 0),
             lambda x: np.where(x > 0, x, 0), {"x": data((5,), f64)}),
        Case("where-0d", lambda c, x: pt.where(c, x, 1.0),
             lambda c, x: np.where(c, x, 1.0),
             {"c": data((), bool), "x": data((), f64)}),
        Case("where-symbolic", lambda c, x, n: pt.where(c, x, 1.0),
             lambda c, x, n: np.where(c, x, 1.0),
             {"c": data((4,), bool), "x": data((4,), f64), "n": 4},
             {"c": ("n",), "x": ("n",)}),
    ]
    x = data((2, 3), i32)
    pads: list[tuple[Any, dict[str, Any]]] = [
        (1, {}), ((1, 2), {}), (((1, 2), (0, 3)), {}), ([[2, 0], [1, 1]], {}),
        ((1,), {"constant_values": 7}), (2, {"constant_values": (5, 6)}),
        (((1, 2), (2, 1)), {"constant_values": ((7, 8), (9, 10))}),
        (1, {"constant_values": 2.7}), (0, {}), (((0, 0), (0, 2)), {}),
    ]
    for width, kwargs in pads:
        cases.append(Case(
            f"pad-{width}-{kwargs}".replace(" ", ""),
            lambda x, width=width, kwargs=kwargs: pt.pad(x, width, **kwargs),
            lambda x, width=width, kwargs=kwargs: np.pad(x, width, **kwargs),
            {"x": x}))
    cases += [
        Case("pad-f32-3d", lambda x: pt.pad(x, ((1, 0), (0, 0), (2, 1)),
                                            constant_values=-1.5),
             lambda x: np.pad(x, ((1, 0), (0, 0), (2, 1)), constant_values=-1.5),
             {"x": data((2, 2, 3), f32)}),
        Case("pad-complex", lambda x: pt.pad(x, 1, constant_values=1j),
             lambda x: np.pad(x, 1, constant_values=1j),
             {"x": data((2,), np.complex128)}),
        Case("pad-bool", lambda x: pt.pad(x, 1, constant_values=True),
             lambda x: np.pad(x, 1, constant_values=True),
             {"x": data((2, 2), bool)}),
        Case("pad-0d", lambda x: pt.pad(x, 3), lambda x: np.pad(x, 3),
             {"x": data((), f64)}),
        Case("pad-empty", lambda x: pt.pad(x, 1, constant_values=4),
             lambda x: np.pad(x, 1, constant_values=4), {"x": data((0, 2), f64)}),
        Case("pad-symbolic", lambda x, n: pt.pad(x, ((1, 2), (0, 1)),
                                                 constant_values=((1, 2), (3, 4))),
             lambda x, n: np.pad(x, ((1, 2), (0, 1)),
                                 constant_values=((1, 2), (3, 4))),
             {"x": data((3, 2), f64), "n": 3}, {"x": ("n", 2)}),
        Case("pad-symbolic-same", lambda x, n: pt.pad(x, 1),
             lambda x, n: np.pad(x, 1),
             {"x": data((3, 2), f64), "n": 3}, {"x": ("n", 2)}),
        Case("pad-numpy-input", lambda: pt.pad(np.arange(3.0), (1, 0)),
             lambda: np.pad(np.arange(3.0), (1, 0))),
    ]
    return cases


MISC_CASES = _misc_cases()

# }}}


def run_numpy(case: Case) -> None:
    """Build *case*, run it through :func:`pytato.generate_numpy` and check
    the result against numpy."""
    result = build(case)
    check_graph(case, result)
    prog = pt.generate_numpy(result)
    with np.errstate(all="ignore"):
        value = prog(**call_args(case, result))
    check_result(case, result, value)
