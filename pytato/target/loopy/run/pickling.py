"""Pickling programs without their device state.

A :class:`~pytato.target.loopy.BoundPyOpenCLProgram` pickles as what
:func:`~pytato.generate_loopy` made: its translation unit (the lowered one
for a program scheduled per device), its bound data, its target and its
key in the program store. What its calls made on a
:class:`pyopencl.Context` (executors, bound data on the device, the
schedules per device, the launch plans of the repeated calls) is left out:
the unpickled program schedules and builds again at its first call (or
finds its compiled code in the program store). So a program pickles the
same before and after it was called.

A target with a :class:`pyopencl.Device` pickles with the
:class:`~pytato.target.loopy.device.DeviceInfo` describing it (the
schedule and the loopy target depend on nothing more). Bound data on the
device (:class:`pyopencl.array.Array`) and executables bound to a context
(:class:`~pytato.target.loopy.BoundPyOpenCLExecutable`) do not pickle:
:class:`~pytato.diagnostic.UnsupportedOperationError`, naming them.

.. autofunction:: picklable_bound_arguments
.. autofunction:: rebuild_program
.. autofunction:: executable_not_picklable
"""

from __future__ import annotations

from collections.abc import Mapping

import pyopencl as cl
import pyopencl.array as cla

from pytato.diagnostic import UnsupportedOperationError


__all__ = ["executable_not_picklable", "picklable_bound_arguments",
           "rebuild_program"]


def picklable_bound_arguments(bound: Mapping[str, object]) -> dict[str, object]:
    """*bound* as a :class:`dict`, checked to hold no device data.

    :raises pytato.diagnostic.UnsupportedOperationError: naming a bound
        argument that is a :class:`pyopencl.array.Array` or a
        :class:`pyopencl.MemoryObject`.
    """
    for name, value in bound.items():
        if isinstance(value, (cla.Array, cl.MemoryObjectHolder)):
            raise UnsupportedOperationError(
                f"cannot pickle the program: its bound data '{name}' is on "
                "an OpenCL device (a pyopencl array); bind a numpy array "
                "(make_data_wrapper(x.get())) to pickle it")
    return dict(bound)


def rebuild_program(cls: type, fields: dict[str, object]) -> object:
    """The program of class *cls* made of the init *fields* that its
    ``__reduce__`` kept (unpickling)."""
    return cls(**fields)


def executable_not_picklable(executable: object) -> object:
    """Refuse to pickle the executable *executable*.

    :raises pytato.diagnostic.UnsupportedOperationError: always.
    """
    raise UnsupportedOperationError(
        f"cannot pickle a {type(executable).__name__}: it is bound to a "
        "pyopencl context (device state); pickle the BoundPyOpenCLProgram "
        "it was bound from, and call bind_to_context after unpickling")
