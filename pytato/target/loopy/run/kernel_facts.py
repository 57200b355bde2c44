"""What running a scheduled kernel needs of it, as plain data.

The executor of the split path
(:class:`~pytato.target.loopy.run.split_executor.SplitExecutor`) and its
launch plan read a kernel's arguments, temporaries and options, not its
instructions. :func:`kernel_facts` takes those from a
:class:`loopy.LoopKernel` as :class:`KernelFacts`: numpy types, pymbolic
shapes and strides, flags. The program store keeps them with each
scheduled unit (:class:`~pytato.target.loopy.run.stored_unit.RunFacts`),
so that a process finding a program there unpickles them, and runs the
program, without importing :mod:`loopy`.

.. autoclass:: OptionFacts
.. autoclass:: ArgFacts
.. autoclass:: TemporaryFacts
.. autoclass:: KernelFacts
.. autofunction:: kernel_facts
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from pytato.target.loopy.run.arguments import ArgumentSpec
from pytato.target.loopy.run.launcher import zeroed_temporaries


if TYPE_CHECKING:
    import loopy as lp


__all__ = ["ArgFacts", "KernelFacts", "OptionFacts", "TemporaryFacts",
           "kernel_facts"]


#: the options of :class:`loopy.Options` that :class:`OptionFacts` keeps,
#: with the value taken where a kernel's options lack one
_OPTIONS: dict[str, Any] = {
    "return_dict": False,
    "no_numpy": False,
    "build_options": (),
    "write_code": False,
    "edit_code": False,
    "write_wrapper": False,
    "skip_arg_checks": False,
    "cl_exec_manage_array_events": True,
}


@dataclass(frozen=True)
class OptionFacts:
    """The options of a kernel that running it reads, by the names of
    :class:`loopy.Options`.

    .. attribute:: return_dict
    .. attribute:: no_numpy
    .. attribute:: build_options
    .. attribute:: write_code
    .. attribute:: edit_code
    .. attribute:: write_wrapper
    .. attribute:: skip_arg_checks
    .. attribute:: cl_exec_manage_array_events
    """

    return_dict: bool
    no_numpy: bool
    build_options: tuple[str, ...]
    write_code: bool
    edit_code: bool
    write_wrapper: bool
    skip_arg_checks: bool
    cl_exec_manage_array_events: bool


@dataclass(frozen=True)
class ArgFacts:
    """An argument of a kernel.

    .. attribute:: name
    .. attribute:: kind

        ``"value"`` (a :class:`loopy.ValueArg`), ``"array"`` (a
        :class:`loopy.ArrayArg`) or the name of the argument's class.

    .. attribute:: dtype

        Its :class:`numpy.dtype` (None where the kernel leaves it open).

    .. attribute:: shape

        The shape of an array (pymbolic expressions of the value
        arguments), else None.

    .. attribute:: is_output
    .. attribute:: strides

        The strides of an output array, in elements (pymbolic
        expressions), else None.
    """

    name: str
    kind: str
    dtype: np.dtype[Any] | None
    shape: tuple[Any, ...] | None
    is_output: bool
    strides: tuple[Any, ...] | None


@dataclass(frozen=True)
class TemporaryFacts:
    """A temporary variable of a kernel.

    .. attribute:: shape
    .. attribute:: dtype

        Its :class:`numpy.dtype` (None where the kernel leaves it open).

    .. attribute:: zeroed

        Whether it is tagged
        :class:`~pytato.target.loopy.schedule.reductions.ZeroedTemporary`.
    """

    shape: tuple[Any, ...] | None
    dtype: np.dtype[Any] | None
    zeroed: bool


@dataclass(frozen=True)
class KernelFacts:
    """What the split path's executor reads of the entrypoint kernel of a
    scheduled unit (see the module documentation).

    .. attribute:: name

        The entrypoint.

    .. attribute:: single_kernel

        Whether the unit has no kernel but its one entrypoint.

    .. attribute:: preprocessed

        Whether the unit is preprocessed (or further).

    .. attribute:: packs_arguments

        Whether the unit's target packs overflowing arguments
        (``limit_arg_size_nbytes``).

    .. attribute:: pyopencl_target

        Whether the unit's target is a :class:`loopy.PyOpenCLTarget`.

    .. attribute:: ninstructions
    .. attribute:: options

        :class:`OptionFacts`.

    .. attribute:: index_dtype
    .. attribute:: args

        :class:`ArgFacts`, in the kernel's order.

    .. attribute:: temporaries

        :class:`TemporaryFacts` by name.

    .. attribute:: arg_spec

        The kernel's
        :class:`~pytato.target.loopy.run.arguments.ArgumentSpec`.
    """

    name: str
    single_kernel: bool
    preprocessed: bool
    packs_arguments: bool
    pyopencl_target: bool
    ninstructions: int
    options: OptionFacts
    index_dtype: np.dtype[Any]
    args: tuple[ArgFacts, ...]
    temporaries: dict[str, TemporaryFacts]
    arg_spec: ArgumentSpec


def _dtype(dtype: Any) -> np.dtype[Any] | None:
    numpy_dtype = getattr(dtype, "numpy_dtype", None)
    return None if numpy_dtype is None else np.dtype(numpy_dtype)


def _shape(shape: Any) -> tuple[Any, ...] | None:
    return shape if isinstance(shape, tuple) else None


def kernel_facts(t_unit: lp.TranslationUnit, entrypoint: str
                 ) -> KernelFacts:
    """The :class:`KernelFacts` of the kernel *entrypoint* of *t_unit*."""
    # (loopy, here where a unit is at hand: the facts are read without it)
    import loopy as lp
    from loopy.kernel import KernelState
    from loopy.kernel.array import get_strides

    from pytato.target.loopy.build.preprocessing import _single_kernel

    knl = t_unit[entrypoint]
    options = OptionFacts(**{
        name: (tuple(getattr(knl.options, name, default) or ())
               if name == "build_options"
               else bool(getattr(knl.options, name, default)))
        for name, default in _OPTIONS.items()})
    args = []
    for arg in knl.args:
        kind = ("value" if isinstance(arg, lp.ValueArg)
                else "array" if isinstance(arg, lp.ArrayArg)
                else type(arg).__name__)
        is_output = bool(getattr(arg, "is_output", False))
        args.append(ArgFacts(
            arg.name, kind, _dtype(arg.dtype),
            _shape(getattr(arg, "shape", None)) if kind != "value" else None,
            is_output,
            tuple(get_strides(arg)) if kind == "array" and is_output
            else None))
    zeroed = zeroed_temporaries(knl, knl.temporary_variables)
    return KernelFacts(
        name=entrypoint,
        single_kernel=_single_kernel(t_unit) == entrypoint,
        preprocessed=t_unit.state >= KernelState.PREPROCESSED,
        packs_arguments=getattr(t_unit.target, "limit_arg_size_nbytes",
                                None) is not None,
        pyopencl_target=isinstance(t_unit.target, lp.PyOpenCLTarget),
        ninstructions=len(knl.instructions),
        options=options,
        index_dtype=np.dtype(knl.index_dtype.numpy_dtype),
        args=tuple(args),
        temporaries={
            name: TemporaryFacts(_shape(tv.shape), _dtype(tv.dtype),
                                 name in zeroed)
            for name, tv in knl.temporary_variables.items()},
        arg_spec=ArgumentSpec.from_kernel(knl))
