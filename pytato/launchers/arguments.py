"""Kernel arguments, work sizes and memory regions: the checks and
conversions that the launchers share.

Values given to launchers are checked here and turned into what
:mod:`pyopencl` takes (:meth:`pyopencl.Kernel.set_arg`,
:func:`pyopencl.enqueue_nd_range_kernel`, :func:`pyopencl.enqueue_copy`);
bad values raise the typed errors of :mod:`pytato.diagnostic`, naming the
argument.

.. autodata:: WorkSize
.. autodata:: ParameterType
.. autodata:: ParameterSpec
.. autodata:: WaitFor
.. autodata:: KernelArg
.. autodata:: DeviceMemory
.. autofunction:: wait_list
.. autofunction:: as_work_size
.. autofunction:: convert_kernel_arg
.. autofunction:: normalize_parameter_type
.. autofunction:: check_parameter
.. autofunction:: device_region
.. autofunction:: host_region
.. autofunction:: is_device_memory
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeAlias, TypeGuard, cast

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from pytato.diagnostic import InvalidArgumentError, InvalidArgumentTypeError


__all__ = [
    "DeviceMemory",
    "KernelArg",
    "ParameterSpec",
    "ParameterType",
    "WaitFor",
    "WorkSize",
    "as_work_size",
    "check_parameter",
    "convert_kernel_arg",
    "device_region",
    "host_region",
    "is_device_memory",
    "normalize_parameter_type",
    "wait_list",
]

#: A work size: one :class:`int` per dimension (a bare :class:`int` means 1D).
WorkSize: TypeAlias = int | Sequence[int]

#: The type of a per-call kernel parameter: a :class:`numpy.dtype` (or anything
#: :class:`numpy.dtype` accepts, such as ``np.float32``) for scalar
#: arguments, or a class (or tuple of classes) such as :class:`pyopencl.Buffer`
#: or :class:`pyopencl.array.Array` for memory arguments.
ParameterType: TypeAlias = "np.dtype[np.generic] | type | tuple[type, ...] | str"

#: A normalized parameter type (see :func:`normalize_parameter_type`): a
#: :class:`numpy.dtype` for scalar arguments, a tuple of classes for memory.
ParameterSpec: TypeAlias = "np.dtype[np.generic] | tuple[type, ...]"

#: The wait list accepted by launchers: events (``None`` entries are ignored).
WaitFor: TypeAlias = "Sequence[cl.Event | None] | None"

#: A value that :meth:`pyopencl.Kernel.set_arg` takes.
KernelArg: TypeAlias = ("np.generic | cl.LocalMemory | cl.MemoryObjectHolder "
                        "| cl.SVMPointer | None")

#: Device memory that launchers copy from and to.
DeviceMemory: TypeAlias = "cl.Buffer | cla.Array"


def wait_list(wait_for: WaitFor) -> list[cl.Event] | None:
    """Return the events of *wait_for* without its *None* entries, or
    *None* if there are none (as :mod:`pyopencl` takes wait lists)."""
    if not wait_for:
        return None
    events = [evt for evt in wait_for if evt is not None]
    return events or None


def as_work_size(size: WorkSize | None, what: str) -> tuple[int, ...] | None:
    """Return *size* as a tuple of non-negative :class:`int` (*None* stays
    *None*).

    :arg what: a description of the size for error messages.
    """
    if size is None:
        return None
    if isinstance(size, int | np.integer):
        result: tuple[int, ...] = (int(size),)
    else:
        try:
            result = tuple(int(s) for s in size)
        except TypeError:
            raise InvalidArgumentTypeError(
                               f"{what} must be an int or a sequence of ints, "
                               f"got {type(size).__name__}") from None
    if not result or any(s < 0 for s in result):
        raise InvalidArgumentError(f"{what} must be non-empty and non-negative, "
                                   f"got {result}")
    return result


def _type_names(types: type | tuple[type, ...]) -> str:
    if isinstance(types, tuple):
        return " or ".join(t.__name__ for t in types)
    return types.__name__


def convert_kernel_arg(arg: object, what: str) -> KernelArg:
    """Return the value to hand to :meth:`pyopencl.Kernel.set_arg` for *arg*
    (a :class:`pyopencl.array.Array` becomes its buffer, a 0-d array its
    scalar).

    :arg what: a description of the argument for error messages.
    """
    if arg is None or isinstance(arg, np.generic | cl.LocalMemory
                                 | cl.MemoryObjectHolder):
        return arg
    if isinstance(arg, cla.Array):
        if arg.offset != 0:
            raise InvalidArgumentError(
                f"{what}: pyopencl.array.Array has a nonzero offset "
                f"({arg.offset} bytes), which a kernel argument cannot carry; "
                "pass a buffer of its own or an offset argument")
        return arg.base_data
    if isinstance(arg, np.ndarray) and arg.ndim == 0:
        return cast("np.generic", arg[()])
    if isinstance(arg, bool | int | float | complex):
        raise InvalidArgumentTypeError(
            f"{what}: got a Python {type(arg).__name__} ({arg!r}); pass a "
            "numpy scalar of the kernel argument's type instead, e.g. "
            "np.int32(...) or np.float64(...)")
    raise InvalidArgumentTypeError(
        f"{what}: unsupported kernel argument type {type(arg).__name__}; "
        "expected a numpy scalar, a pyopencl Buffer or Array, a "
        "pyopencl.LocalMemory or None")


def normalize_parameter_type(
        spec: ParameterType, name: str) -> ParameterSpec:
    """Return the parameter type *spec* of the parameter *name* as a
    :class:`numpy.dtype` (scalars) or a tuple of classes (memory)."""
    if isinstance(spec, np.dtype):
        return spec
    if isinstance(spec, str) or (isinstance(spec, type)
                                 and issubclass(spec, np.generic)):
        return np.dtype(spec)
    if isinstance(spec, type):
        return (spec,)
    if (isinstance(spec, tuple) and spec
            and all(isinstance(t, type) for t in spec)):
        return spec
    raise InvalidArgumentTypeError(
        f"parameter {name!r}: invalid parameter type {spec!r}; "
        "expected a numpy dtype or a class (or tuple of classes)")


def _convert_scalar(value: object, dtype: np.dtype[np.generic],
                    what: str) -> np.generic:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, np.generic):
        if value.dtype != dtype:
            raise InvalidArgumentTypeError(f"{what} expects a {dtype} scalar, got a "
                                           f"{value.dtype} scalar ({value!r})")
        return value
    if isinstance(value, bool):
        ok = dtype.kind == "b"
    elif isinstance(value, int):
        ok = dtype.kind in "fc"
        if dtype.kind in "iu":
            # (an integer dtype: its kind says so)
            info = np.iinfo(cast("np.dtype[np.integer]", dtype))
            ok = info.min <= value <= info.max
    elif isinstance(value, float):
        ok = dtype.kind in "fc"
    elif isinstance(value, complex):
        ok = dtype.kind == "c"
    else:
        raise InvalidArgumentTypeError(f"{what} expects a {dtype} scalar, got "
                                       f"{type(value).__name__}")
    if not ok:
        raise InvalidArgumentTypeError(
            f"{what} expects a {dtype} scalar, got the Python "
            f"{type(value).__name__} {value!r}, which does not fit")
    return dtype.type(value)


def check_parameter(value: object, spec: ParameterSpec,
                    what: str) -> KernelArg:
    """Check *value* against a normalized parameter type (see
    :func:`normalize_parameter_type`), return the value to hand to
    :meth:`pyopencl.Kernel.set_arg`: a Python scalar that fits a dtype
    becomes a numpy scalar of that dtype.
    """
    if isinstance(spec, np.dtype):
        return _convert_scalar(value, spec, what)
    accepts_array = (isinstance(value, cla.Array)
                     and not any(issubclass(cla.Array, t) for t in spec)
                     and any(issubclass(cl.Buffer, t) for t in spec))
    if not accepts_array and not isinstance(value, spec):
        raise InvalidArgumentTypeError(f"{what} expects {_type_names(spec)}, got "
                                       f"{type(value).__name__}")
    return convert_kernel_arg(value, what)


def device_region(mem: object, offset: int | None,
                  what: str
                  ) -> tuple[cl.MemoryObjectHolder | cl.SVMPointer, int, int]:
    """Return ``(buffer, byte offset, bytes available)`` of the device
    memory *mem* (a :class:`pyopencl.Buffer` or contiguous
    :class:`pyopencl.array.Array`) from the byte *offset* on."""
    offset = 0 if offset is None else int(offset)
    if offset < 0:
        raise InvalidArgumentError(f"{what}: negative device offset {offset}")
    if isinstance(mem, cla.Array):
        if not mem.flags.forc:
            raise InvalidArgumentError(f"{what}: pyopencl array is not contiguous")
        if mem.base_data is None:
            raise InvalidArgumentError(f"{what}: pyopencl array has no data")
        base, base_offset, nbytes = mem.base_data, mem.offset, mem.nbytes
    elif isinstance(mem, cl.Buffer):
        base, base_offset, nbytes = mem, 0, mem.size
    else:
        raise InvalidArgumentTypeError(
            f"{what}: expected a pyopencl Buffer or Array, got "
            f"{type(mem).__name__}")
    if offset > nbytes:
        raise InvalidArgumentError(f"{what}: device offset {offset} is past the end "
                                   f"of the memory ({nbytes} bytes)")
    return base, base_offset + offset, nbytes - offset


def host_region(ary: object, byte_count: int | None, writeable: bool,
                what: str) -> np.ndarray:
    """Return the contiguous host array *ary* (which must be writeable if
    *writeable* is *True*), or a byte view of its first *byte_count* bytes
    when *byte_count* is given and less than its size."""
    if not isinstance(ary, np.ndarray):
        raise InvalidArgumentTypeError(f"{what}: expected a numpy array, got "
                                       f"{type(ary).__name__}")
    if not (ary.flags.c_contiguous or ary.flags.f_contiguous):
        raise InvalidArgumentError(f"{what}: host array is not contiguous")
    if writeable and not ary.flags.writeable:
        raise InvalidArgumentError(f"{what}: host array is not writeable")
    if byte_count is None or byte_count == ary.nbytes:
        return ary
    if not 0 <= byte_count <= ary.nbytes:
        raise InvalidArgumentError(f"{what}: byte_count {byte_count} is outside the "
                                   f"host array's {ary.nbytes} bytes")
    order: Literal["C", "F"] = "C" if ary.flags.c_contiguous else "F"
    return ary.reshape(-1, order=order).view(np.uint8)[:byte_count]


def is_device_memory(obj: object) -> TypeGuard[cl.Buffer | cla.Array]:
    """Return *True* if *obj* is device memory that launchers copy."""
    return isinstance(obj, cl.Buffer | cla.Array)


# vim: foldmethod=marker
