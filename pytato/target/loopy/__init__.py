"""Code generation to :mod:`loopy` and execution with :mod:`pyopencl`.

:func:`generate_loopy` lowers an array graph to a
:class:`loopy.TranslationUnit` (see :mod:`pytato.target.loopy.codegen`) and
binds it, with the data of the graph's data wrappers, into a
:class:`BoundPyOpenCLProgram`.

:mod:`loopy` is imported on first use, so that importing :mod:`pytato` stays
cheap.

.. autofunction:: generate_loopy
.. autoclass:: ImplSubstitution

See :mod:`pytato.target.loopy.programs` for :class:`LoopyTarget`,
:class:`LoopyPyOpenCLTarget`, :class:`BoundPyOpenCLProgram` and
:class:`BoundPyOpenCLExecutable`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytato.array.base import Array
from pytato.array.results import DictOfNamedArrays
from pytato.tags import ImplementationStrategy, ImplStored, Named, PrefixNamed, Tag
from pytato.target.loopy.programs import (
    BoundPyOpenCLExecutable,
    BoundPyOpenCLProgram,
    LoopyPyOpenCLTarget,
    LoopyTarget,
)


if TYPE_CHECKING:
    import loopy as lp
    import pyopencl as cl

    from pytato.target import BoundProgram


__all__ = [
    "BoundPyOpenCLExecutable", "BoundPyOpenCLProgram", "ImplSubstitution",
    "LoopyPyOpenCLTarget", "LoopyTarget", "generate_loopy",
]


@dataclass(frozen=True)
class ImplSubstitution(ImplementationStrategy):
    """An :class:`~pytato.tags.ImplementationStrategy` that lowers the array
    expression as a :class:`loopy.SubstitutionRule` invocation."""


def generate_loopy(
        result: Array | DictOfNamedArrays | Mapping[str, Array],
        target: LoopyTarget | None = None,
        options: lp.Options | None = None,
        *,
        function_name: str = "_pt_kernel",
        cl_device: cl.Device | None = None,
        array_tag_t_to_not_propagate: frozenset[type[Tag]] = frozenset(
            {ImplStored, Named, PrefixNamed}),
        axis_tag_t_to_not_propagate: frozenset[type[Tag]] = frozenset(),
        ) -> BoundProgram:
    """Code generation entry point.

    :arg result: the outputs of the computation: an array, a
        :class:`~pytato.DictOfNamedArrays` or a :class:`dict` of arrays.
    :arg target: the code generation target (by default a
        :class:`LoopyPyOpenCLTarget` for *cl_device*).
    :arg options: :class:`loopy.Options` of the kernel. If *result* is a
        dict and *options* is not given, ``return_dict`` is set; if it is
        given, it must set ``return_dict``.
    :returns: a :class:`pytato.target.BoundProgram` (a
        :class:`BoundPyOpenCLProgram` for the default target) wrapping the
        generated :class:`loopy.TranslationUnit`.

    Metadata is carried over to :mod:`loopy`:

    * the inames indexing an array's axis in the instruction computing it
      are tagged with the tags of the :class:`~pytato.Axis` (except
      instances of *axis_tag_t_to_not_propagate*); the inames of a
      reduction with the tags of its
      :class:`~pytato.ReductionDescriptor`;
    * the tags of inputs and outputs are copied to the corresponding
      :class:`loopy.ArrayArg`, those of stored intermediate arrays
      (:class:`~pytato.tags.ImplStored`) to the
      :class:`loopy.TemporaryVariable` (except instances of
      *array_tag_t_to_not_propagate*).

    :raises pytato.diagnostic.CannotBeLoweredToLoopyError: for graphs with
        nodes that cannot be lowered (naming the node type).
    """
    import loopy as lp

    from pytato.codegen import preprocess

    # calls, loopy calls, foreign functions and sparse products lower
    # through the extended mapper of pytato.target.loopy.calls
    from pytato.target.loopy.calls import (
        build_translation_unit_with_calls as build_translation_unit,
    )

    is_dict = not isinstance(result, Array)
    if target is None:
        target = LoopyPyOpenCLTarget(device=cl_device)
    elif cl_device is not None and getattr(target, "device", None) not in (
            None, cl_device):
        raise ValueError("'cl_device' differs from the device of 'target'")
    if options is None:
        options = lp.Options(return_dict=is_dict)
    elif not isinstance(options, lp.Options):
        raise TypeError(f"'options' must be a loopy.Options, got "
                        f"{type(options).__name__}")
    elif is_dict and not options.return_dict:
        raise ValueError("for a dict result, 'options' must set "
                         "return_dict=True")

    from pytato.diagnostic import CannotBeLoweredToLoopyError
    from pytato.transform.mappers import UnsupportedNodeError
    try:
        prep = preprocess(result)
    except UnsupportedNodeError as e:
        raise CannotBeLoweredToLoopyError(str(e)) from e
    t_unit = build_translation_unit(
        prep.outputs, target=target.get_loopy_target(), options=options,
        function_name=function_name,
        array_tag_t_to_not_propagate=frozenset(array_tag_t_to_not_propagate),
        axis_tag_t_to_not_propagate=frozenset(axis_tag_t_to_not_propagate))
    return target.bind_program(t_unit, prep.bound_arguments)

