"""Creation of the loopy kernel of a lowered graph, without
:func:`loopy.make_kernel`'s generic passes.

:func:`loopy.make_kernel` accepts kernels written by hand: instructions as
strings, arguments and temporaries to be guessed, inames to be found from
expressions, dependencies given as patterns, common subexpressions to
expand. It runs a pass over all instructions for each of these (about
fifteen), which took a large part of
:func:`~pytato.target.loopy.generate_loopy` for large graphs. The lowering in
:mod:`pytato.target.loopy.lower.graph` gives all of it explicitly: instruction
objects with their loops and dependencies, every argument and temporary
with its shape and type, every instruction with its dependencies on the
instructions storing what it reads (so loopy's single-writer dependency
heuristic adds none). What is left to do is what
:func:`make_translation_unit` does: parse the domains, order the
arguments' axes (C order) and wrap the kernel in a translation unit.

The result is the kernel :func:`loopy.make_kernel` would create (the test
suite checks equality on a set of graphs); where loopy's internals it uses
are missing (another loopy version), :func:`loopy.make_kernel` is called.

.. autofunction:: make_translation_unit
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import islpy as isl
import loopy as lp
import numpy as np
from constantdict import constantdict
from loopy.types import NumpyType


try:
    # loopy internals: where another loopy version lacks them, the kernel
    # is made by loopy.make_kernel
    from loopy.kernel import LoopKernel, _get_inames_from_domains
    from loopy.kernel.creation import apply_default_order_to_args, parse_domains
    from loopy.kernel.data import Iname
    from loopy.kernel.tools import get_outer_params
    from loopy.translation_unit import make_program
except ImportError:  # pragma: no cover
    _HAVE_LOOPY_INTERNALS = False
else:
    _HAVE_LOOPY_INTERNALS = True


__all__ = ["make_translation_unit"]


def make_translation_unit(domains: Sequence[str],
                          instructions: Sequence[
                              lp.InstructionBase | lp.SubstitutionRule],
                          kernel_data: Sequence[
                              lp.KernelArgument | lp.TemporaryVariable], *,
                          name: str,
                          target: lp.TargetBase, options: lp.Options,
                          assumptions: str,
                          index_dtype: np.dtype[Any] | None = None
                          ) -> lp.TranslationUnit:
    """The translation unit of :func:`loopy.make_kernel` called with these
    arguments (and ``lang_version=(2018, 2)``), for lowered graphs:
    *instructions* are :class:`loopy.Assignment` objects (and
    :class:`loopy.SubstitutionRule` objects) with explicit loops, all
    arguments and temporaries in *kernel_data* have shapes and types.
    *index_dtype* is the kernel's index type (loopy's default, ``int32``,
    if *None*)."""
    if not _HAVE_LOOPY_INTERNALS:  # pragma: no cover (another loopy version)
        return _with_make_kernel(domains, instructions, kernel_data,
                                 name=name, target=target, options=options,
                                 assumptions=assumptions,
                                 index_dtype=index_dtype)

    doms = parse_domains(list(domains))
    insns = [i for i in instructions if not isinstance(i, lp.SubstitutionRule)]
    rules = {r.name: r for r in instructions
             if isinstance(r, lp.SubstitutionRule)}
    args = [a for a in kernel_data if not isinstance(a, lp.TemporaryVariable)]
    temps = {t.name: t for t in kernel_data
             if isinstance(t, lp.TemporaryVariable)}
    ctx = doms[0].get_ctx()
    params = ",".join(get_outer_params(doms))
    assumption_set = isl.BasicSet.read_from_str(
        ctx, f"[{params}] -> {{ : {assumptions or ''} }}")
    kernel = LoopKernel(
        doms, insns, args, temporary_variables=temps,
        substitutions=constantdict(rules), silenced_warnings=frozenset(),
        options=options, target=target, tags=frozenset(),
        inames={n: Iname(n, frozenset())
                for n in _get_inames_from_domains(doms)},
        assumptions=assumption_set, name=name,
        iname_slab_increments=constantdict(), applied_iname_rewrites=(),
        **({"index_dtype": NumpyType(np.dtype(index_dtype))}
           if index_dtype is not None else {}))
    kernel = apply_default_order_to_args(kernel, "C")
    return make_program(kernel).with_entrypoints(name)


def _with_make_kernel(domains: Sequence[str],
                      instructions: Sequence[
                          lp.InstructionBase | lp.SubstitutionRule],
                      kernel_data: Sequence[
                          lp.KernelArgument | lp.TemporaryVariable], *,
                      name: str,
                      target: lp.TargetBase, options: lp.Options,
                      assumptions: str,
                      index_dtype: np.dtype[Any] | None = None
                      ) -> lp.TranslationUnit:
    """:func:`make_translation_unit` through :func:`loopy.make_kernel`."""
    return lp.make_kernel(list(domains), list(instructions), list(kernel_data),
                          name=name, target=target, options=options,
                          lang_version=(2018, 2), assumptions=assumptions,
                          **({"index_dtype": np.dtype(index_dtype)}
                             if index_dtype is not None else {}))
