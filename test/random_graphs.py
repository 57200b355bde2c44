"""Seeded random array graphs with numpy reference results.

:func:`make_random_graph` builds a graph through pytato's numpy-like front
end and, step by step, the same computation with numpy, so every graph comes
with input values and expected outputs. Graphs mix element-wise operations
(with broadcasting), reductions, reshapes, transposes, stacks,
concatenations, rolls, basic and advanced indexing, einsums (also over
broadcasts and sums, to exercise the einsum rewrites) and ``where``, over a
few placeholders and data wrappers. Values stay of order one, so results
compare with a tight relative tolerance.

The same seed gives the same graph, inputs and expected results::

    g = make_random_graph(seed=3)
    prg = pt.generate_numpy(g.outputs)
    result = prg(**g.inputs_for(g.outputs))
    for name, ref in g.expected.items():
        np.testing.assert_allclose(result[name], ref, rtol=1e-12)
"""

from __future__ import annotations

import functools
import string
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

import pytato as pt


__all__ = ["ALL_OPS", "TYPED_OPS", "RandomGraph", "make_random_dag",
           "make_random_graph", "make_typed_random_graph"]


@dataclass(frozen=True)
class RandomGraph:
    """A random graph with its inputs and reference outputs.

    .. attribute:: outputs

        A :class:`dict` from output names (``out0``, ``out1``, ...) to arrays.

    .. attribute:: inputs

        Values of the placeholders by name.

    .. attribute:: expected

        The numpy results by output name.

    .. attribute:: ops

        The operations applied, in order (for error messages).
    """

    outputs: dict[str, pt.Array]
    inputs: dict[str, np.ndarray]
    expected: dict[str, np.ndarray]
    ops: tuple[str, ...]

    def inputs_for(self, result: Any) -> dict[str, np.ndarray]:
        """The values of the placeholders that *result* (a graph, e.g. the
        outputs after a transform) still depends on."""
        from pytato.array.base import topological_order
        roots = list(result.values()) if isinstance(result, Mapping) \
            else [result]
        names = {n.name for n in topological_order(roots)
                 if isinstance(n, pt.Placeholder)}
        return {k: v for k, v in self.inputs.items() if k in names}


Pair = tuple[pt.Array, np.ndarray]

#: the dtypes of index arrays (issue 41: narrow and unsigned ones failed)
INDEX_DTYPES = [np.int8, np.int16, np.int32, np.int64,
                np.uint8, np.uint16, np.uint32, np.uint64]


class _Builder:
    def __init__(self, rng: np.random.Generator, dtype: np.dtype[Any]) -> None:
        self.rng = rng
        self.dtype = dtype
        self.pool: list[Pair] = []
        self.created: list[Pair] = []
        # index arrays take every integer dtype in turn, from an offset
        # read off the generator's state (consuming no random numbers: the
        # graphs are those of the same seeds before index dtypes varied)
        state = rng.bit_generator.state.get("state", {})
        self._n_index_arrays = int(state.get("state", 0)) % len(INDEX_DTYPES) \
            if isinstance(state, dict) else 0

    def index_dtype(self) -> np.dtype[Any]:
        """The integer dtype of the next index array (all in turn)."""
        self._n_index_arrays += 1
        return np.dtype(INDEX_DTYPES[self._n_index_arrays % len(INDEX_DTYPES)])

    # {{{ helpers

    def values(self, shape: tuple[int, ...]) -> np.ndarray:
        return self.rng.uniform(-1, 1, size=shape).astype(self.dtype)

    def pick_broadcastable_pair(self) -> tuple[Any, np.ndarray, Any, np.ndarray]:
        """Two available pairs whose shapes broadcast (one a suffix of the
        other), in random order: ``(x, a, y, b)``."""
        x, a = self.pick()  # type: ignore[misc]

        def compatible(p: Pair) -> bool:
            s = p[1].shape
            return (len(s) <= a.ndim and s == a.shape[a.ndim - len(s):]) or (
                len(s) >= a.ndim and a.shape == s[len(s) - a.ndim:])

        y, b = self.pick(compatible)  # type: ignore[misc]
        if self.rng.random() < 0.5:
            x, a, y, b = y, b, x, a
        return x, a, y, b

    def pick(self, pred: Callable[[Pair], bool] = lambda p: True
             ) -> Pair | None:
        cands = [p for p in self.pool if pred(p)]
        if not cands:
            return None
        return cands[self.rng.integers(len(cands))]

    def choice(self, seq: Any) -> Any:
        return seq[self.rng.integers(len(seq))]

    def random_shape(self, ndim: int) -> tuple[int, ...]:
        return tuple(int(self.rng.integers(2, 5)) for _ in range(ndim))

    # }}}

    # {{{ operations: each returns a new pair, or None if not applicable

    def op_unary(self) -> Pair | None:
        x, a = self.pick()  # type: ignore[misc]
        name = self.choice(["sin", "cos", "tanh", "abs", "negative", "expm"])
        if name == "negative":
            return -x, -a
        if name == "expm":
            return pt.exp(-pt.abs(x)), np.exp(-np.abs(a))
        return getattr(pt, name)(x), getattr(np, name)(a)

    def op_binary(self) -> Pair | None:
        x, a, y, b = self.pick_broadcastable_pair()
        name = self.choice(["add", "subtract", "multiply", "maximum", "minimum"])
        return getattr(pt, name)(x, y), getattr(np, name)(a, b)

    def op_scalar(self) -> Pair | None:
        x, a = self.pick()  # type: ignore[misc]
        c, d = float(self.rng.uniform(-2, 2)), float(self.rng.uniform(-1, 1))
        if self.rng.random() < 0.5:
            return c * x + d, c * a + d
        return x * c - d, a * c - d

    def op_where(self) -> Pair | None:
        x, a = self.pick()  # type: ignore[misc]
        y, b = self.pick(lambda p: p[1].shape == a.shape)  # type: ignore[misc]
        return pt.where(x > 0, x, y), np.where(a > 0, a, b)

    def op_reduce(self) -> Pair | None:
        p = self.pick(lambda p: p[1].ndim >= 1)
        if p is None:
            return None
        x, a = p
        axis = None if self.rng.random() < 0.2 else int(
            self.rng.integers(a.ndim))
        n = a.size if axis is None else a.shape[axis]
        # (extrema of no elements are errors, in numpy and in pytato)
        name = self.choice(["sum", "amax", "amin"]) if n else "sum"
        r, ra = getattr(pt, name)(x, axis=axis), getattr(np, name)(a, axis=axis)
        if name == "sum" and n:
            r, ra = r * (1 / n), ra * (1 / n)
        return r, ra

    def op_reshape(self) -> Pair | None:
        p = self.pick(lambda p: p[1].ndim >= 1)
        if p is None:
            return None
        x, a = p
        size = a.size
        cands = [(size,)]
        for d in range(2, size):
            if size % d == 0:
                cands.append((d, size // d))
                rest = size // d
                for e in range(2, rest):
                    if rest % e == 0:
                        cands.append((d, e, rest // e))
        shape = self.choice(cands)
        order = "F" if self.rng.random() < 0.25 else "C"
        return pt.reshape(x, shape, order=order), np.reshape(a, shape,
                                                              order=order)

    def op_transpose(self) -> Pair | None:
        p = self.pick(lambda p: p[1].ndim >= 2)
        if p is None:
            return None
        x, a = p
        perm = tuple(int(i) for i in self.rng.permutation(a.ndim))
        return pt.transpose(x, perm), np.transpose(a, perm)

    def op_stack(self) -> Pair | None:
        x, a = self.pick()  # type: ignore[misc]
        y, b = self.pick(lambda p: p[1].shape == a.shape)  # type: ignore[misc]
        axis = int(self.rng.integers(a.ndim + 1))
        return pt.stack([x, y], axis=axis), np.stack([a, b], axis=axis)

    def op_concatenate(self) -> Pair | None:
        p = self.pick(lambda p: p[1].ndim >= 1)
        if p is None:
            return None
        x, a = p
        axis = int(self.rng.integers(a.ndim))

        def fits(q: Pair) -> bool:
            s = q[1].shape
            return len(s) == a.ndim and all(
                s[i] == a.shape[i] for i in range(a.ndim) if i != axis)

        y, b = self.pick(fits)  # type: ignore[misc]
        return (pt.concatenate([x, y], axis=axis),
                np.concatenate([a, b], axis=axis))

    def op_roll(self) -> Pair | None:
        p = self.pick(lambda p: p[1].ndim >= 1)
        if p is None:
            return None
        x, a = p
        axis = int(self.rng.integers(a.ndim))
        shift = int(self.rng.integers(-5, 6))
        return pt.roll(x, shift, axis=axis), np.roll(a, shift, axis=axis)

    def op_basic_index(self) -> Pair | None:
        p = self.pick(lambda p: p[1].ndim >= 1)
        if p is None:
            return None
        x, a = p
        idx: list[Any] = []
        for n in a.shape:
            kind = self.choice(["full", "range", "reverse", "step", "int"])
            if n == 0 and kind in ("range", "int"):
                kind = "full"  # an empty axis has no element to pick
            if kind == "full":
                idx.append(slice(None))
            elif kind == "range":
                lo = int(self.rng.integers(0, n))
                idx.append(slice(lo, int(self.rng.integers(lo + 1, n + 1))))
            elif kind == "reverse":
                idx.append(slice(None, None, -1))
            elif kind == "step":
                idx.append(slice(int(self.rng.integers(0, 2)), None, 2))
            else:
                idx.append(int(self.rng.integers(-n, n)))
        t = tuple(idx)
        return x[t], a[t]

    def op_advanced_index(self) -> Pair | None:
        p = self.pick(lambda p: p[1].ndim >= 1 and 0 not in p[1].shape)
        if p is None:
            return None
        x, a = p
        k = int(self.rng.integers(1, 4))

        def index_array(n: int) -> tuple[pt.Array, np.ndarray]:
            i = self.rng.integers(-n, n, size=k)
            dtype = self.index_dtype()
            i = (i % n if dtype.kind == "u" else i).astype(dtype)
            return pt.make_data_wrapper(i), i

        if a.ndim >= 3 and self.rng.random() < 0.5:
            # non-contiguous advanced indices
            (i0, n0), (i2, n2) = index_array(a.shape[0]), index_array(a.shape[2])
            return x[i0, :, i2], a[n0, :, n2]
        axis = int(self.rng.integers(a.ndim))
        i, ni = index_array(a.shape[axis])
        t = (slice(None),) * axis
        return x[(*t, i)], a[(*t, ni)]

    def _random_einsum(self, x: pt.Array, a: np.ndarray, y: pt.Array,
                       b: np.ndarray) -> Pair:
        letters = iter(string.ascii_lowercase)
        xs = [next(letters) for _ in range(a.ndim)]
        length = dict(zip(xs, a.shape, strict=True))
        ys = []
        for n in b.shape:
            shared = [c for c in xs if length[c] == n and c not in ys]
            if shared and self.rng.random() < 0.7:
                ys.append(self.choice(shared))
            else:
                c = next(letters)
                length[c] = n
                ys.append(c)
        all_letters = sorted(set(xs) | set(ys))
        out = [c for c in all_letters if self.rng.random() < 0.5][:3]
        out = [out[i] for i in self.rng.permutation(len(out))]
        spec = f"{''.join(xs)},{''.join(ys)}->{''.join(out)}"
        return pt.einsum(spec, x, y), np.einsum(spec, a, b)

    def op_einsum(self) -> Pair | None:
        x, a = self.pick()  # type: ignore[misc]
        y, b = self.pick()  # type: ignore[misc]
        return self._random_einsum(x, a, y, b)

    def op_broadcast_einsum(self) -> Pair | None:
        p = self.pick(lambda p: 1 <= p[1].ndim <= 2)
        if p is None:
            return None
        v, c = p
        x, a = self.pick()  # type: ignore[misc]
        shape = (int(self.rng.integers(2, 4)), *c.shape)
        return self._random_einsum(x, a, pt.broadcast_to(v, shape),
                                   np.broadcast_to(c, shape))

    def op_sum_einsum(self) -> Pair | None:
        x, a = self.pick()  # type: ignore[misc]
        y, b = self.pick(lambda p: p[1].shape == a.shape)  # type: ignore[misc]
        z, c = self.pick()  # type: ignore[misc]
        return self._random_einsum(x - 2 * y + x, a - 2 * b + a, z, c)

    # }}}


ALL_OPS = tuple(name[3:] for name in dir(_Builder) if name.startswith("op_"))


class _CommBuilder(_Builder):
    """Also passes values around a ring of MPI ranks: every rank builds the
    same graph (the same seed), so the value a rank receives from the next
    rank equals the one it sends to the previous rank, and the numpy
    reference is the value itself."""

    def __init__(self, rng: np.random.Generator, dtype: np.dtype[Any],
                 rank: int, size: int) -> None:
        super().__init__(rng, dtype)
        self.rank = rank
        self.size = size
        self.ntags = 0

    def op_comm(self) -> Pair | None:
        picked = self.pick()
        if picked is None:
            return None
        ary, ref = picked
        self.ntags += 1
        tag = ("random-graph", self.ntags)
        recv = pt.make_distributed_recv((self.rank + 1) % self.size, tag,
                                        ary.shape, ary.dtype)
        return pt.staple_distributed_send(ary, (self.rank - 1) % self.size,
                                          tag, stapled_to=recv), ref


def make_random_graph(seed: int, *, n_steps: int = 25,
                      n_placeholders: int = 3, n_data_wrappers: int = 1,
                      n_outputs: int = 3, dtype: Any = np.float64,
                      ops: Iterable[str] | None = None,
                      comm: tuple[int, int] | None = None) -> RandomGraph:
    """A random graph of *n_steps* operations (drawn from *ops*, default
    :data:`ALL_OPS`) over *n_placeholders* placeholders ``x0, x1, ...`` and
    *n_data_wrappers* data wrappers, with *n_outputs* outputs (the last
    operations' results). Deterministic in *seed*.

    With *comm* ``(rank, size)``, the operation ``"comm"`` (added to the
    default operations) sends a value to the previous rank of a ring of
    *size* MPI ranks and receives the same value from the next one
    (tags ``("random-graph", i)``); all ranks must build the graph of the
    same seed."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    b = (_Builder(rng, dtype) if comm is None
         else _CommBuilder(rng, dtype, *comm))
    if comm is not None and ops is None:
        ops = (*ALL_OPS, "comm")
    inputs = {}
    for i in range(n_placeholders):
        shape = b.random_shape(int(rng.integers(1, 4)))
        name = f"x{i}"
        inputs[name] = b.values(shape)
        b.pool.append((pt.make_placeholder(name, shape, dtype), inputs[name]))
    for _ in range(n_data_wrappers):
        data = b.values(b.random_shape(int(rng.integers(1, 4))))
        b.pool.append((pt.make_data_wrapper(data), data))

    op_names = tuple(ops) if ops is not None else ALL_OPS
    applied = []
    while len(applied) < n_steps:
        name = op_names[int(rng.integers(len(op_names)))]
        result = getattr(b, f"op_{name}")()
        if result is None:
            continue
        ary, ref = result
        ref = np.asarray(ref)
        if ref.ndim > 4 or ref.size > 256:
            continue  # keep graphs small
        assert ary.shape == ref.shape, (name, ary.shape, ref.shape)
        b.pool.append((ary, ref))
        b.created.append((ary, ref))
        applied.append(name)

    outs = b.created[-n_outputs:]
    return RandomGraph(
        outputs={f"out{i}": ary for i, (ary, _) in enumerate(outs)},
        inputs=inputs,
        expected={f"out{i}": ref for i, (_, ref) in enumerate(outs)},
        ops=tuple(applied))


# {{{ graphs of any dtype, with 0-d, empty and size-1 axes

class _TypedBuilder(_Builder):
    """Operations that apply to bool, integer, float and complex arrays,
    on shapes with 0-d, empty and size-1 axes; the pool mixes dtypes
    (promotion, comparisons, casts). Integer arithmetic wraps, division by
    zero and out-of-range runtime indices follow pytato's documented
    semantics (:ref:`numerical-semantics`), so results compare exactly for
    bool and integer dtypes."""

    def __init__(self, rng: np.random.Generator, dtype: np.dtype[Any],
                 inputs: dict[str, np.ndarray]) -> None:
        super().__init__(rng, dtype)
        self.inputs = inputs

    def values(self, shape: tuple[int, ...], dtype: Any = None) -> np.ndarray:
        dtype = np.dtype(self.dtype if dtype is None else dtype)
        if dtype.kind == "b":
            v = self.rng.random(shape) < 0.5
        elif dtype.kind == "u":
            v = self.rng.integers(0, 7, size=shape)
        elif dtype.kind == "i":
            v = self.rng.integers(-6, 7, size=shape)
        else:
            v = self.special(self.rng.uniform(-1, 1, size=shape))
            if dtype.kind == "c":
                v = v + 1j * self.special(self.rng.uniform(-1, 1, size=shape))
        # 0-d: an array, not a numpy scalar (whose ** differs)
        return np.asarray(v).astype(dtype)

    #: special values put in floating point inputs (in each part of
    #: complex ones)
    SPECIAL_VALUES = (0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0)

    def special(self, v: np.ndarray) -> np.ndarray:
        """*v* with about a fifth of its entries replaced by special
        values (in half of the arrays)."""
        if self.rng.random() < 0.5:
            return v
        where = self.rng.random(v.shape) < 0.2
        picks = self.rng.choice(np.array(self.SPECIAL_VALUES), size=v.shape)
        return np.where(where, picks, v)

    def random_shape(self, ndim: int) -> tuple[int, ...]:
        return tuple(int(self.choice([0, 1, 1, 2, 3, 4, 4])) for _ in range(ndim))

    def op_unary(self) -> Pair | None:
        x, a = self.pick()  # type: ignore[misc]
        kind = a.dtype.kind
        names = {"b": ["logical_not", "invert", "abs", "square"],
                 "i": ["negative", "abs", "invert", "square"],
                 "u": ["negative", "invert", "square"],
                 "f": ["negative", "abs", "sin", "square", "sqrt", "exp",
                       "log", "tanh", "reciprocal", "sign"],
                 "c": ["negative", "conj", "square", "abs", "real", "imag",
                       *self.COMPLEX_FUNCTIONS]}[kind]
        name = self.choice(names)
        if name == "invert":
            return ~x, ~a
        if name == "reciprocal" and kind == "c" and self.rng.random() < 0.5:
            return x ** -1, a ** -1
        with np.errstate(all="ignore"):
            return getattr(pt, name)(x), getattr(np, name)(a)

    #: the complex elementary functions (numpy's special values, see
    #: :ref:`numerical-semantics`)
    COMPLEX_FUNCTIONS = ("sqrt", "exp", "log", "log10", "sin", "cos", "tan",
                         "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
                         "sign", "reciprocal")

    def op_binary(self) -> Pair | None:
        x, a, y, b = self.pick_broadcastable_pair()
        kinds = {a.dtype.kind, b.dtype.kind}
        names = ["add", "multiply", "equal", "not_equal", "less",
                 "greater_equal", "logical_and", "logical_or"]
        if "b" not in kinds or len(kinds) > 1:
            names.append("subtract")
        if "c" not in kinds:
            names += ["maximum", "minimum"]
        if kinds <= {"b", "i", "u"}:
            names += ["bitwise_and", "bitwise_or", "bitwise_xor"]
        if kinds <= {"i", "u"} or kinds == {"b", "i"}:
            names += ["floor_divide", "remainder"]
        if "c" in kinds:
            names += ["true_divide", "power"]
        name = self.choice(names)
        with np.errstate(all="ignore"):
            ref = getattr(np, name)(a, b)
        return getattr(pt, name)(x, y), ref

    def op_scalar(self) -> Pair | None:
        x, a = self.pick()  # type: ignore[misc]
        kind = a.dtype.kind
        if kind == "b":
            return (x + 3, a + 3) if self.rng.random() < 0.5 else (x ** 2, a ** 2)
        if kind in "iu":
            c = int(self.rng.integers(1, 4))
            return (x * c + 1, a * c + 1) if self.rng.random() < 0.5 \
                else (x ** 2, a ** 2)
        if kind == "c":
            c = complex(self.rng.uniform(-1, 1), self.rng.uniform(-1, 1))
            e = self.choice([2.0, 2, 3, -2, 0.5, 1.5, c])
            with np.errstate(all="ignore"):
                return (x * c, a * c) if self.rng.random() < 0.5 \
                    else (x ** e, a ** e)
        return x * 0.5 - 1, a * 0.5 - 1

    def op_where(self) -> Pair | None:
        x, a = self.pick()  # type: ignore[misc]
        y, b = self.pick(lambda p: p[1].shape == a.shape)  # type: ignore[misc]
        return pt.where(pt.not_equal(x, 0), x, y), np.where(a != 0, a, b)

    def op_astype(self) -> Pair | None:
        x, a = self.pick()  # type: ignore[misc]
        # float -> integer conversions of NaN, infinities and values out
        # of range are numpy's x86-64 ones (not uint32, where numpy's
        # vectorized loops differ from its scalar loop)
        kinds = {"b": [np.bool_], "i": [np.int8, np.int16, np.int32, np.int64],
                 "u": [np.uint8, np.uint16, np.uint64],
                 "f": [np.float32, np.float64],
                 "c": [np.complex64, np.complex128]}
        to = [t for k, ts in kinds.items() for t in ts
              if not (a.dtype.kind == "c" and k in "f")]
        dt = self.choice(to)
        if a.dtype.kind in "fc" and np.dtype(dt).kind in "iu":
            # float -> int of inputs (computed values may differ from
            # numpy's by a rounding, which truncation or wrap-around turns
            # into a difference of integers), scaled exactly to reach
            # values out of range
            p = self.pick(lambda p: isinstance(p[0], (pt.Placeholder,
                                                      pt.DataWrapper))
                          and p[1].dtype.kind in "fc")
            if p is None:
                return None
            x, a = p
            scale = self.choice([1.0, 256.0, 2.0**20, 2.0**40])
            x, a = x * scale, a * scale
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return x.astype(dt), a.astype(dt)

    def op_reduce(self) -> Pair | None:
        p = self.pick(lambda p: p[1].ndim >= 1)
        if p is None:
            return None
        x, a = p
        axis = None if self.rng.random() < 0.2 else int(
            self.rng.integers(a.ndim))
        names = ["sum", "any", "all", "prod"]
        empty = a.size == 0 if axis is None else a.shape[axis] == 0
        if a.dtype.kind != "c" and not empty:
            names += ["amax", "amin"]
        name = self.choice(names)
        if name == "prod" and a.dtype.kind in "fc":
            name = "sum"
        return getattr(pt, name)(x, axis=axis), getattr(np, name)(a, axis=axis)

    def op_basic_index(self) -> Pair | None:
        p = self.pick(lambda p: p[1].ndim >= 1 and 0 not in p[1].shape)
        if p is None:
            return None
        self.pool, pool = [p], self.pool
        try:
            return super().op_basic_index()
        finally:
            self.pool = pool

    def op_runtime_index(self) -> Pair | None:
        """Index arrays passed at run time, with out-of-range entries:
        clamped (the documented policy)."""
        p = self.pick(lambda p: p[1].ndim >= 1 and 0 not in p[1].shape)
        if p is None:
            return None
        x, a = p
        axis = int(self.rng.integers(a.ndim))
        n = a.shape[axis]
        k = int(self.choice([0, 1, 3]))
        data = self.rng.integers(-2 * n - 1, 2 * n + 2, size=k)
        dtype = self.index_dtype()
        info = np.iinfo(dtype)
        if dtype.kind == "u":
            data = np.abs(data)
        if k == 3 and self._n_index_arrays % 3 == 0:
            # the extremes of the type
            data[0], data[2] = info.max, max(info.min, -2**62)
        data = data.astype(dtype)
        name = f"i{len(self.inputs)}"
        self.inputs[name] = data
        ip = pt.make_placeholder(name, (k,), data.dtype)
        exact = data.astype(object)
        clamped = np.clip(np.where(exact < 0, exact + n, exact), 0,
                          n - 1).astype(np.int64)
        t = (slice(None),) * axis
        return x[(*t, ip)], a[(*t, clamped)]

    def op_einsum(self) -> Pair | None:
        x, a = self.pick()  # type: ignore[misc]
        y, b = self.pick()  # type: ignore[misc]
        if a.ndim + b.ndim > 4:
            return None
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            # numpy's einsum factors some sums (",ab->" is a times the sum
            # of b): with infinities, its NaNs depend on that order
            return None
        return self._random_einsum(x, a, y, b)

    op_sum_einsum = None  # type: ignore[assignment]
    op_broadcast_einsum = None  # type: ignore[assignment]


class _ReductionDivisionBuilder(_TypedBuilder):
    """:class:`_TypedBuilder` with divisions (and integer powers) by
    reductions computed where they are read (issue 41: a conditional of the
    lowering branched on the partial values of a reduction)."""

    def op_divide_by_reduction(self) -> Pair | None:
        p = self.pick(lambda p: p[1].ndim >= 1 and 0 not in p[1].shape)
        if p is None:
            return None
        y, b = p
        axis = None if self.rng.random() < 0.3 else int(
            self.rng.integers(b.ndim))
        red = self.choice(["sum", "prod"] if b.dtype.kind in "fc"
                          else ["sum"])
        den, den_ref = (getattr(pt, red)(y, axis=axis),
                        getattr(np, red)(b, axis=axis))
        kind = b.dtype.kind
        with np.errstate(all="ignore"):
            if kind in "iu":
                # an integer power by the reduction (numpy refuses
                # negative exponents: skipped)
                base = self.values(den_ref.shape, b.dtype)
                name = f"p{len(self.inputs)}"
                self.inputs[name] = base
                ph = pt.make_placeholder(name, base.shape, base.dtype)
                return ph ** den, base ** den_ref
            if kind == "b":
                return None
            if self.rng.random() < 0.5:
                c = (complex(self.rng.uniform(-2, 2), self.rng.uniform(-2, 2))
                     if kind == "c" else float(self.rng.uniform(-2, 2)))
                return c / den, c / den_ref
            num, num_ref = (pt.sum(y * y, axis=axis),
                            np.sum(b * b, axis=axis))
            return num / den, num_ref / den_ref


TYPED_OPS = tuple(name[3:] for name in dir(_TypedBuilder)
                  if name.startswith("op_")
                  and getattr(_TypedBuilder, name) is not None)

#: :data:`TYPED_OPS` and divisions by reductions (``reduction_divisions``
#: of :func:`make_typed_random_graph`)
REDUCTION_DIVISION_OPS = (*TYPED_OPS, "divide_by_reduction",
                          "divide_by_reduction")


def make_typed_random_graph(seed: int, dtype: Any, *, n_steps: int = 12,
                            n_outputs: int = 3,
                            reduction_divisions: bool = False) -> RandomGraph:
    """A random graph over placeholders of *dtype* (bool, integer, float or
    complex) of shapes with 0-d, empty and size-1 axes, mixing dtypes
    through promotion, comparisons and casts (:data:`TYPED_OPS`). Operations
    numpy refuses for the drawn operands (and those pytato refuses
    deliberately, with a :class:`~pytato.diagnostic.PytatoError`) are
    skipped. With *reduction_divisions*, divisions and integer powers by
    reductions read where they are computed are among the operations.
    Deterministic in *seed*."""
    from pytato.diagnostic import PytatoError

    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    inputs: dict[str, np.ndarray] = {}
    b = (_ReductionDivisionBuilder if reduction_divisions
         else _TypedBuilder)(rng, dtype, inputs)
    ops = REDUCTION_DIVISION_OPS if reduction_divisions else TYPED_OPS
    for i in range(3):
        shape = b.random_shape(int(rng.integers(0, 4)))
        name = f"x{i}"
        inputs[name] = b.values(shape)
        b.pool.append((pt.make_placeholder(name, shape, dtype), inputs[name]))
    data = b.values(b.random_shape(int(rng.integers(0, 3))))
    b.pool.append((pt.make_data_wrapper(data), data))

    applied: list[str] = []
    tries = 0
    while len(applied) < n_steps and tries < 20 * n_steps:
        tries += 1
        name = ops[int(rng.integers(len(ops)))]
        try:
            with np.errstate(all="ignore"):
                result = getattr(b, f"op_{name}")()
        except (PytatoError, TypeError, ValueError, OverflowError):
            continue
        if result is None:
            continue
        ary, ref = result
        ref = np.asarray(ref)
        if ref.ndim > 4 or ref.size > 256 or ref.dtype == np.float16:
            continue
        assert ary.shape == ref.shape, (name, ary.shape, ref.shape)
        assert ary.dtype == ref.dtype, (name, ary.dtype, ref.dtype)
        b.pool.append((ary, ref))
        b.created.append((ary, ref))
        applied.append(name)

    outs = b.created[-n_outputs:]
    return RandomGraph(
        outputs={f"out{i}": ary for i, (ary, _) in enumerate(outs)},
        inputs=inputs,
        expected={f"out{i}": ref for i, (_, ref) in enumerate(outs)},
        ops=tuple(applied))

# }}}


# {{{ the code generation benchmark's DAGs

@functools.cache
def _bench_codegen() -> Any:
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).parent.parent / "benchmarks" \
        / "bench_codegen.py"
    spec = importlib.util.spec_from_file_location("bench_codegen", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_deep_chain(depth: int) -> pt.Array:
    """``x + 1 + 1 + ...`` (*depth* additions) over a placeholder ``x`` of
    shape (4,), built by direct construction with one shared scalar
    expression, which keeps building cheap."""
    import pymbolic.primitives as prim

    x = pt.make_placeholder("x", (4,))
    expr = prim.Sum((prim.Variable("_in0")[(prim.Variable("_0"),)],
                     np.float64(1)))
    dtype = np.dtype(np.float64)
    y: pt.Array = x
    for _ in range(depth):
        y = pt.IndexLambda((4,), dtype, expr, {"_in0": y})
    return y


def make_random_dag(nnodes: int, seed: int = 0, n: int = 16
                    ) -> dict[str, pt.Array]:
    """``make_random_dag`` of ``benchmarks/bench_codegen.py``: the random
    DAGs of the code generation benchmark (no reference results)."""
    return _bench_codegen().make_random_dag(nnodes, seed=seed, n=n)

# }}}
