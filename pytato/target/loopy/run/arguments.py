"""Call-time checking of the arguments of generated loopy kernels.

An :class:`ArgumentSpec` is read off a kernel's arguments once. Each call
then checks the passed arguments against it, before anything runs on a
device, and infers the values of size parameters from array shapes:

* an argument already bound to the program (the data of a
  :class:`~pytato.array.DataWrapper`, under its name):
  :class:`BoundArgumentError`, a :class:`ValueError`;
* an output or internal name passed as an argument:
  :class:`UnknownArgumentError` (other names are accepted and ignored, so
  that inputs the graph no longer depends on may still be passed);
* a missing array or uninferable size parameter: :class:`MissingArgumentError`;
* a wrong number of dimensions or an extent inconsistent with the other
  arguments: :class:`ArgumentShapeError`;
* a wrong dtype: :class:`ArgumentDTypeError`;
* a device array (:class:`pyopencl.array.Array`) that is not C-contiguous:
  :class:`ArgumentLayoutError` (numpy arrays are copied to C order); one
  of another context than the call's queue: :class:`ArgumentContextError`
  (:meth:`ArgumentSpec.check_device`);
* an output or global temporary larger than the device allocates in one
  buffer (:attr:`pyopencl.Device.max_mem_alloc_size`):
  :class:`DeviceAllocationError` (:meth:`ArgumentSpec.check_device`);
* a size parameter making the length of a reduction without identity
  (:func:`pytato.amax`, :func:`pytato.amin` without *initial*) zero:
  :class:`EmptyReductionError`, a :class:`ValueError`, as numpy raises
  (the kernel's :class:`~pytato.tags.NonEmptyReductionLengths`, see
  :mod:`pytato.target.loopy.lower.empty_reductions`).

Value arguments are size parameters (non-negative integers), or 0-d inputs
tagged :class:`~pytato.tags.ForceValueArgTag` (the code generator tags
their :class:`loopy.ValueArg` so): those take any scalar (or 0-d array)
that converts to their dtype under numpy's kind rules (no complex for a
real dtype, ...; numpy values: by safe casting), and are passed as a numpy
scalar of their dtype (booleans as ``int8``: OpenCL has no boolean kernel
arguments).

.. autoclass:: ArgumentSpec
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pymbolic.primitives as prim
import pyopencl.array as cla
from pymbolic import evaluate
from pymbolic.mapper.dependency import DependencyMapper

from pytato.diagnostic import (
    ArgumentContextError,
    ArgumentDTypeError,
    ArgumentLayoutError,
    ArgumentShapeError,
    BoundArgumentError,
    DeviceAllocationError,
    EmptyReductionError,
    MissingArgumentError,
    UnknownArgumentError,
)
from pytato.lazy_imports import lazy_module
from pytato.tags import ForceValueArgTag, NonEmptyReductionLengths


if TYPE_CHECKING:
    import loopy as lp
else:
    lp = lazy_module("loopy")


__all__ = ["ArgumentSpec"]

_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def _deps(expr: Any) -> frozenset[str]:
    if isinstance(expr, (int, np.integer)):
        return frozenset()
    deps: DependencyMapper[[]] = DependencyMapper(
        include_subscripts=False, include_lookups=False, include_calls=False)
    # (variables only, without subscripts, lookups and calls)
    return frozenset(v.name for v in deps(expr)
                     if isinstance(v, prim.Variable))


def _fmt_shape(shape: tuple[object, ...]) -> str:
    return "(" + ", ".join(str(c) for c in shape) + ("," if len(shape) == 1
                                                     else "") + ")"


class ArgumentSpec:
    """The inputs a kernel expects: array arguments (shape expressions in
    value-argument names, dtype) and value arguments.

    .. automethod:: from_kernel
    .. automethod:: process
    .. automethod:: check_device
    """

    #: (defaults of specs pickled without them)
    nonempty: tuple[tuple[Any, str], ...] = ()
    allocated: tuple[tuple[str, str, tuple[Any, ...], int], ...] = ()

    def __init__(self, arrays: Mapping[str, tuple[tuple[Any, ...] | None,
                                                  np.dtype[np.generic] | None]],
                 values: Mapping[str, np.dtype[np.generic] | None],
                 not_inputs: Mapping[str, str],
                 scalars: frozenset[str] = frozenset(),
                 nonempty: tuple[tuple[object, str], ...] = (),
                 allocated: tuple[tuple[str, str, tuple[object, ...], int],
                                  ...] = ()) -> None:
        self.arrays = dict(arrays)
        #: ``(what, name, shape, itemsize)`` of the outputs and global
        #: temporaries that a call allocates (see :meth:`check_device`)
        self.allocated = allocated
        self._allocation_checked: dict[tuple[object, ...], bool] = {}
        #: ``(length, func)`` of the reductions without identity whose
        #: lengths (expressions in the size parameters) must be positive
        self.nonempty = nonempty
        self.values = dict(values)
        self.not_inputs = dict(not_inputs)
        #: the value arguments that are scalar inputs, not size parameters
        self.scalars = scalars
        self._cache: dict[tuple[object, ...], tuple[object, tuple[str, ...],
                                                  dict[str, int]]] = {}
        self._shape_deps = {
            name: tuple(_deps(c) for c in shape) if shape is not None else ()
            for name, (shape, _) in self.arrays.items()}
        # shapes of integer extents only, compared without evaluation
        self._const_shapes = {
            name: tuple(int(c) for c in shape)
            for name, (shape, _) in self.arrays.items()
            if shape is not None and all(
                isinstance(c, (int, np.integer)) for c in shape)}

    @classmethod
    def from_kernel(cls, kernel: Any) -> ArgumentSpec:
        """Read the spec off a :class:`loopy.LoopKernel`."""
        def dtype_of(arg: Any) -> np.dtype[np.generic] | None:
            dt = arg.dtype
            if dt is None or dt is lp.auto:
                return None
            return np.dtype(dt.numpy_dtype)

        arrays: dict[str, Any] = {}
        values: dict[str, Any] = {}
        not_inputs: dict[str, str] = {}
        allocated: list[tuple[str, str, Any, Any]] = []
        scalars = set()
        for arg in kernel.args:
            if isinstance(arg, lp.ValueArg):
                values[arg.name] = dtype_of(arg)
                if any(isinstance(t, ForceValueArgTag) for t in arg.tags):
                    scalars.add(arg.name)
            elif arg.is_input:
                shape = arg.shape
                if shape is lp.auto or shape is None:
                    shape = None
                arrays[arg.name] = (shape, dtype_of(arg))
            else:
                not_inputs[arg.name] = "an output"
                allocated.append(("output", arg.name, arg.shape, arg.dtype))
        for name, tv in kernel.temporary_variables.items():
            not_inputs[name] = "a temporary"
            if tv.address_space == lp.AddressSpace.GLOBAL:
                allocated.append(("temporary", name, tv.shape, tv.dtype))
        nonempty = tuple(length for tag in kernel.tags
                         if isinstance(tag, NonEmptyReductionLengths)
                         for length in tag.lengths)
        sized = tuple(
            (what, name, tuple(shape), dt.numpy_dtype.itemsize)
            for what, name, shape, dt in allocated
            if isinstance(shape, tuple) and dt is not None
            and dt is not lp.auto)
        return cls(arrays, values, not_inputs, frozenset(scalars), nonempty,
                   sized)

    # {{{ processing

    def _check_names(self, kwargs: Mapping[str, object],
                     bound: Mapping[str, object]) -> None:
        for name in kwargs:
            if name in bound:
                raise BoundArgumentError(
                    f"argument '{name}' is bound to the program (it is the "
                    "data of a DataWrapper) and cannot be passed")
            what = self.not_inputs.get(name)
            if what is not None:
                raise UnknownArgumentError(
                    f"'{name}' is {what} of the program, not an input")

    def _as_array(self, name: str, value: object, ndim: int | None,
                  dtype: np.dtype[np.generic] | None) -> object:
        if not (hasattr(value, "shape") and hasattr(value, "dtype")):
            if ndim == 0 and dtype is not None and isinstance(
                    value, (bool, int, float, complex)):
                kind = np.result_type(value).kind
                if _KIND_RANK[kind] > _KIND_RANK[dtype.kind]:
                    raise ArgumentDTypeError(
                        f"argument '{name}': a {type(value).__name__} cannot "
                        f"be passed for an array of dtype {dtype}")
                value = np.asarray(value, dtype=dtype)
            else:
                value = np.asarray(value)
        elif isinstance(value, np.generic):
            value = np.asarray(value)
        elif isinstance(value, cla.Array) and not value.flags.c_contiguous \
                and value.size > 1:
            raise ArgumentLayoutError(
                f"argument '{name}': a device array of strides "
                f"{value.strides} (shape {tuple(value.shape)}), not "
                "C-contiguous: pass a C-contiguous copy (numpy arrays are "
                "copied, device arrays are not)")
        if ndim is not None and len(value.shape) != ndim:
            raise ArgumentShapeError(
                f"argument '{name}': expected an array of {ndim} dimensions, "
                f"got shape {tuple(value.shape)}")
        if dtype is not None and np.dtype(value.dtype) != dtype:
            raise ArgumentDTypeError(
                f"argument '{name}': expected dtype {dtype}, got "
                f"{np.dtype(value.dtype)}")
        if isinstance(value, np.ndarray) and not value.flags.c_contiguous:
            value = np.ascontiguousarray(value)
        return value

    def _scalar_value(self, name: str, value: Any) -> object:
        """*value* passed for the scalar input *name*, as a numpy scalar of
        its dtype."""
        dtype = self.values[name]
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            if tuple(value.shape) != ():
                raise ArgumentShapeError(
                    f"argument '{name}' is passed by value (ForceValueArgTag): "
                    f"expected a scalar, got shape {tuple(value.shape)}")
            if not isinstance(value, (np.ndarray, np.generic)):
                value = value.get()  # a 0-d device array
            value = np.asarray(value)
            if dtype is not None and value.dtype != dtype:
                if not np.can_cast(value.dtype, dtype, "safe"):
                    raise ArgumentDTypeError(
                        f"argument '{name}': expected dtype {dtype}, got "
                        f"{value.dtype}")
                value = value.astype(dtype)
            return value[()]
        if not isinstance(value, (bool, int, float, complex)):
            raise ArgumentDTypeError(
                f"argument '{name}' is passed by value (ForceValueArgTag): "
                f"expected a scalar, got {type(value).__name__}")
        if dtype is None:
            return value
        kind = np.result_type(value).kind
        if _KIND_RANK[kind] > _KIND_RANK[dtype.kind]:
            raise ArgumentDTypeError(
                f"argument '{name}': a {type(value).__name__} cannot be passed "
                f"for dtype {dtype}")
        try:
            return np.asarray(value, dtype=dtype)[()]
        except OverflowError:
            raise ArgumentDTypeError(
                f"argument '{name}': {value!r} does not fit dtype "
                f"{dtype}") from None

    def _values(self, kwargs: Mapping[str, object]) -> dict[str, Any]:
        result = {}
        for name in self.values:
            if name not in kwargs:
                continue
            v = kwargs[name]
            if name in self.scalars:
                result[name] = self._scalar_value(name, v)
                continue
            if isinstance(v, np.ndarray) and v.shape == ():
                v = v[()]
            if not isinstance(v, (int, np.integer)) or isinstance(
                    v, (bool, np.bool_)):
                raise ArgumentDTypeError(
                    f"size parameter '{name}' must be an integer, got "
                    f"{type(v).__name__}")
            if v < 0:
                raise ArgumentShapeError(
                    f"size parameter '{name}' must be non-negative, got {v}")
            result[name] = int(v)
        return result

    def _infer(self, arrays: Mapping[str, Any], values: dict[str, int],
               source: dict[str, str]) -> None:
        """Solve shape components of one unknown, affine, for it."""
        if not self.values:
            return
        progress = True
        while progress:
            progress = False
            for name, ary in arrays.items():
                shape, _ = self.arrays[name]
                for c, deps, actual in zip(shape or (), self._shape_deps[name],
                                           ary.shape, strict=True):
                    unknown = [d for d in deps if d not in values]
                    if len(unknown) != 1:
                        continue
                    (var,) = unknown
                    sol = _solve_affine(c, var, int(actual), values)
                    if sol is not None:
                        values[var] = sol
                        source[var] = f"from the shape of '{name}'"
                        progress = True

    def _verify(self, arrays: Mapping[str, Any], values: Mapping[str, int],
                source: Mapping[str, str]) -> None:
        for name, ary in arrays.items():
            const = self._const_shapes.get(name)
            if const is not None and tuple(ary.shape) == const:
                continue
            shape, _ = self.arrays[name]
            if shape is None:
                continue
            expected = tuple(evaluate(c, values) for c in shape)
            if tuple(int(n) for n in ary.shape) != tuple(int(n)
                                                         for n in expected):
                params = sorted({p for d in self._shape_deps[name] for p in d})
                at = (" with " + ", ".join(f"{p}={values[p]} ({source[p]})"
                                           for p in params)
                      if params else "")
                declared = _fmt_shape(shape)
                evaluated = _fmt_shape(expected)
                # (the evaluated shape only where it says more)
                ie = f", i.e. {evaluated}" if evaluated != declared else ""
                raise ArgumentShapeError(
                    f"argument '{name}': expected shape {declared}"
                    f"{at}{ie}, got {tuple(ary.shape)}")

    def _cache_key(self, kwargs: Mapping[str, Any]) -> tuple[object, ...] | None:
        """What the outcome of :meth:`process` depends on, for arguments
        that are arrays (numpy or device; by type, shape, dtype and strides)
        or Python ints; *None* for other arguments (not cached)."""
        parts: list[object] = []
        arrays = self.arrays
        values = self.values
        for name, v in kwargs.items():
            t = type(v)
            if t is int:
                parts.append((name, v))
            elif name in arrays:
                if t not in _CACHED_ARRAY_TYPES:
                    return None
                parts.append((name, t, v.shape, v.dtype, v.strides))
            elif name in values:
                return None
            else:
                parts.append(name)
        return tuple(parts)

    def process(self, kwargs: Mapping[str, object], bound: Mapping[str, object]
                ) -> tuple[dict[str, object], dict[str, int]]:
        """Check *kwargs* (the caller's arguments) with the *bound* ones.

        Successful checks of arguments that need no conversion are cached
        (by the names, types, shapes, dtypes and strides of the arguments
        and the values of integers), so that repeated calls of the same
        kind are cheap.

        :returns: ``(arrays, values)``: the caller's array arguments
            (converted where needed) and the values of all value arguments.
        """
        if not _CACHED_ARRAY_TYPES:
            _init_cached_array_types()
        key = self._cache_key(kwargs)
        if key is not None:
            hit = self._cache.get((id(bound), key))
            if hit is not None and hit[0] is bound:
                return {n: kwargs[n] for n in hit[1]}, dict(hit[2])
        arrays, values = self._process(kwargs, bound)
        if key is not None and all(v is kwargs[n] for n, v in arrays.items()):
            if len(self._cache) >= 128:
                self._cache.clear()
            self._cache[id(bound), key] = (bound, tuple(arrays), dict(values))
        return arrays, values

    def _process(self, kwargs: Mapping[str, object], bound: Mapping[str, object]
                 ) -> tuple[dict[str, object], dict[str, int]]:
        self._check_names(kwargs, bound)
        user_arrays: dict[str, object] = {}
        all_arrays: dict[str, object] = {}
        missing = []
        for name, (shape, dtype) in self.arrays.items():
            if name in bound:
                all_arrays[name] = bound[name]
            elif name in kwargs:
                ndim = len(shape) if shape is not None else None
                user_arrays[name] = all_arrays[name] = self._as_array(
                    name, kwargs[name], ndim, dtype)
            else:
                missing.append(name)
        if missing:
            ignored = sorted(set(kwargs) - set(self.arrays) - set(self.values))
            hint = (f" (passed arguments that are not inputs: "
                    f"{', '.join(ignored)})" if ignored else "")
            raise MissingArgumentError(
                f"missing argument{'s' if len(missing) > 1 else ''} "
                f"{', '.join(repr(m) for m in missing)}{hint}")
        values = self._values(kwargs)
        source = dict.fromkeys(values, "passed")
        self._infer(all_arrays, values, source)
        not_inferred = [n for n in self.values
                        if n not in values and n not in bound]
        if not_inferred:
            raise MissingArgumentError(
                "missing size parameter"
                f"{'s' if len(not_inferred) > 1 else ''} "
                f"{', '.join(repr(n) for n in not_inferred)}: pass "
                f"{'them' if len(not_inferred) > 1 else 'it'} explicitly, it "
                "cannot be inferred from the shapes of the arguments")
        self._verify(all_arrays, values, source)
        if self.nonempty:
            self._check_nonempty(values, source)
        return user_arrays, values

    def check_device(self, queue: Any, arrays: Mapping[str, object],
                     values: Mapping[str, int]) -> None:
        """Check the processed arguments (:meth:`process`'s result) of a
        call on *queue*: the device arrays among *arrays* belong to the
        queue's context, and the outputs and global temporaries, of the
        sizes given by *values*, fit in one buffer of the queue's device
        (checked once per device and sizes).

        :raises pytato.diagnostic.ArgumentContextError: naming the array.
        :raises pytato.diagnostic.DeviceAllocationError: naming the output
            or temporary, its shape and the device's limit.
        """
        context = None
        for name, v in arrays.items():
            if isinstance(v, cla.Array):
                if context is None:
                    context = queue.context
                if v.context != context:
                    raise ArgumentContextError(
                        f"argument '{name}': a device array of another "
                        "OpenCL context than the queue of the call (OpenCL "
                        "forbids using it there): transfer it, or call on a "
                        "queue of its context")
        if not self.allocated:
            return
        device = queue.device
        key = (device.int_ptr, *sorted(values.items()))
        if key in self._allocation_checked:
            return
        limit = device.max_mem_alloc_size
        for what, name, shape, itemsize in self.allocated:
            extents = [int(evaluate(c, values)) for c in shape]
            nbytes = itemsize * int(np.prod(extents, dtype=object))
            if nbytes > limit:
                raise DeviceAllocationError(
                    f"the {what} '{name}' of shape {_fmt_shape(tuple(extents))}"
                    f" ({nbytes} bytes) is larger than the largest buffer "
                    f"device '{device.name}' allocates ({limit} bytes, its "
                    "max_mem_alloc_size)")
        if len(self._allocation_checked) >= 128:
            self._allocation_checked.clear()
        self._allocation_checked[key] = True

    def _check_nonempty(self, values: Mapping[str, int],
                        source: Mapping[str, str]) -> None:
        for length, func in self.nonempty:
            if int(evaluate(length, values)) > 0:
                continue
            params = sorted(_deps(length))
            at = ", ".join(f"{p}={values[p]} ({source.get(p, 'passed')})"
                           for p in params)
            raise EmptyReductionError(
                f"{func}: cannot reduce over an axis of length {length} = 0 "
                f"(with {at}) without an 'initial' value: zero-size array "
                "to a reduction without identity (pass 'initial' to allow "
                "empty axes)")

    # }}}


_CACHED_ARRAY_TYPES: set[type] = set()


def _init_cached_array_types() -> None:
    """Array types whose checks :meth:`ArgumentSpec.process` caches (their
    shape, dtype and strides determine the outcome)."""
    _CACHED_ARRAY_TYPES.add(np.ndarray)
    _CACHED_ARRAY_TYPES.add(cla.Array)


def _solve_affine(expr: Any, var: str, actual: int,
                  values: Mapping[str, int]) -> int | None:
    """Solve ``expr(var) == actual`` if *expr* is affine in *var* with an
    integer solution."""
    try:
        f0 = int(evaluate(expr, {**values, var: 0}))
        f1 = int(evaluate(expr, {**values, var: 1}))
        f2 = int(evaluate(expr, {**values, var: 2}))
    except Exception:
        return None
    slope = f1 - f0
    if slope == 0 or f2 - f1 != slope or (actual - f0) % slope:
        return None
    sol = (actual - f0) // slope
    return sol if sol >= 0 else None
