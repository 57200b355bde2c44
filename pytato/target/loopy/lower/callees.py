"""Callee kernels of a translation unit, and the state their lowering
shares.

Function calls, loopy calls and sparse products
(:mod:`pytato.target.loopy.lower.calls`,
:mod:`pytato.target.loopy.lower.sparse`) are lowered to call instructions
of callee kernels. A :class:`Callee` is such a kernel with its calling
interface; a :class:`CallBuildState` holds what all kernels of one
translation unit share (how to build them, the callees built so far, the
depth of nesting). The call-lowering mapper receives it explicitly
(:class:`~pytato.target.loopy.lower.calls.CallCodeGenMapper`) and passes it
on to the mappers lowering function bodies.

.. autoclass:: CalleeOutput
.. autoclass:: Callee
.. autoclass:: CallBuildState
.. autofunction:: is_parallel_kernel
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import loopy as lp
import numpy as np
from loopy.kernel.data import HardwareConcurrentTag
from pymbolic.typing import Expression
from pytools.tag import Tag

from pytato.codegen import NameGenerator


if TYPE_CHECKING:
    from loopy.translation_unit import CallableId

    from pytato.function import FunctionDefinition


__all__ = ["CallBuildState", "Callee", "CalleeOutput", "is_parallel_kernel"]


@dataclass(frozen=True)
class CalleeOutput:
    """An output argument of a callee kernel: a result (*result* names it)
    or a scratch array (*result* is None)."""

    arg_name: str
    result: str | None
    shape: tuple[Expression, ...]
    dtype: lp.types.LoopyType | np.dtype[np.generic] | None


@dataclass(frozen=True)
class Callee:
    """A kernel registered as a callable, and how to call it.

    .. attribute:: inputs

        The names of the input arguments, in call order, each with whether
        it is a value argument.
    """

    name: str
    kernel: lp.LoopKernel
    inputs: tuple[tuple[str, bool], ...]
    outputs: tuple[CalleeOutput, ...]
    extra_callables: Mapping[CallableId, lp.InKernelCallable] = field(
        default_factory=dict)

    @property
    def parallel(self) -> bool:
        """Whether the kernel maps loops onto work-groups or work-items (it
        must then be called from the entrypoint, between global
        barriers)."""
        return is_parallel_kernel(self.kernel)


def is_parallel_kernel(knl: lp.LoopKernel) -> bool:
    """Whether *knl* maps loops onto work-groups or work-items."""
    return any(isinstance(t, HardwareConcurrentTag)
               for iname in knl.all_inames() for t in knl.iname_tags(iname))


def _as_callee_kernel(knl: lp.LoopKernel, name: str) -> lp.LoopKernel:
    """*knl* renamed to *name*, with its global temporaries turned into
    output arguments (loopy cannot allocate them inside callee kernels)."""
    glob = [tv for tv in knl.temporary_variables.values()
            if tv.address_space == lp.AddressSpace.GLOBAL]
    if glob:
        knl = knl.copy(
            args=[*knl.args, *(lp.ArrayArg(
                tv.name, tv.dtype, shape=tv.shape,
                address_space=lp.AddressSpace.GLOBAL,
                is_input=False, is_output=True) for tv in glob)],
            temporary_variables={
                k: tv for k, tv in knl.temporary_variables.items()
                if tv.address_space != lp.AddressSpace.GLOBAL})
    return knl.copy(name=name)


def _interface(knl: lp.LoopKernel, results: Mapping[str, str]) -> tuple[
        tuple[tuple[str, bool], ...], tuple[CalleeOutput, ...]]:
    inputs = tuple((a.name, isinstance(a, lp.ValueArg)) for a in knl.args
                   if a.is_input)
    outputs = tuple(CalleeOutput(a.name, results.get(a.name), tuple(a.shape),
                                 a.dtype)
                    for a in knl.args if a.is_output)
    return inputs, outputs


@dataclass
class CallBuildState:
    """What the kernels of one translation unit share: how to build
    kernels (*target*, *options*, the tag types not to propagate), the
    names of the callees, the callees built so far (keyed by function
    definition, by loopy translation unit and entrypoint, and by a key of
    their own for others, e.g. sparse products) and *depth*, the nesting
    of the function body being lowered (0 for the entrypoint)."""

    target: lp.TargetBase
    options: lp.Options
    array_tag_t_to_not_propagate: frozenset[type[Tag]]
    axis_tag_t_to_not_propagate: frozenset[type[Tag]]
    callee_names: NameGenerator = field(default_factory=NameGenerator)
    functions: dict[FunctionDefinition, Callee] = field(default_factory=dict)
    loopy_kernels: dict[tuple[lp.TranslationUnit, str], Callee] = field(
        default_factory=dict)
    other_callees: dict[Hashable, Callee] = field(default_factory=dict)
    depth: int = 0
