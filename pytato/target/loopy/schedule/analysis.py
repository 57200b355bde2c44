"""What the schedule reads from a :mod:`loopy` kernel, shared by the
modules of :mod:`pytato.target.loopy.schedule`: the constant extents and
implementation tags of inames, the reductions of an instruction and the
inames of its contiguous (last) indices, and the output inames of a plain
store. Queries only: nothing here changes a kernel.

.. autofunction:: box_extent

The constant extent of an iname is read from its domain where that has
no parameters, and whether an instruction holds a reduction by a walk by
a stack: loopy's bounds analysis and its mappers, memoized per kernel
object, started over on each of the many copies of the kernel that the
schedule's passes make (about a third of a second of the GPU schedule of
the 10 000-node DAG of ``benchmarks/bench_codegen.py``).
"""

from __future__ import annotations

from collections.abc import Iterable

import islpy as isl
import loopy as lp
import pymbolic.primitives as prim
from loopy.kernel.data import InameImplementationTag
from loopy.symbolic import DependencyMapper, Reduction as LoopyReduction
from pymbolic.typing import ArithmeticExpression, Expression

from pytato.target.loopy.loopy_walk import (
    UncachedLoopyWalkMapper,
    holds_reduction,
)


__all__ = ["box_extent"]


def _has_impl_tag(kernel: lp.LoopKernel, iname: str) -> bool:
    return any(isinstance(t, InameImplementationTag)
               for t in kernel.iname_tags(iname))


def _box_length(kernel: lp.LoopKernel, iname: str) -> int | None:
    """The constant length of *iname* read from its domain where that has
    no parameters (then neither parent domains nor assumptions bound it,
    and it is what :meth:`loopy.LoopKernel.get_constant_iname_length`
    gives, with a tenth of the work); None where this does not tell."""
    try:
        dom = kernel.domains[kernel.get_home_domain_index(iname)]
    except Exception:
        return None
    if dom.dim(isl.dim_type.param):
        return None
    dt, idx = dom.get_var_dict()[iname]
    if dt != isl.dim_type.set:
        return None
    dset = isl.Set.from_basic_set(dom) if isinstance(dom, isl.BasicSet) \
        else dom
    bounds = []
    for bound in (dset.dim_min(idx), dset.dim_max(idx)):
        pieces = bound.get_pieces()
        if len(pieces) != 1 or not pieces[0][1].is_cst():
            return None
        value = pieces[0][1].get_constant_val()
        if not value.is_int():
            return None
        bounds.append(value.to_python())
    return bounds[1] - bounds[0] + 1


def _constant_length(kernel: lp.LoopKernel, iname: str) -> int | None:
    length = _box_length(kernel, iname)
    if length is not None:
        return length
    try:
        return int(kernel.get_constant_iname_length(iname))
    except Exception:
        return None


def box_extent(kernel: lp.LoopKernel, iname: str) -> int | None:
    """The extent ``n`` of *iname* if its domain is its own and is
    ``0 <= iname < n`` for a constant ``n`` (else None)."""
    dom = kernel.domains[kernel.get_home_domain_index(iname)]
    if dom.get_var_names(isl.dim_type.set) != [iname] \
            or dom.dim(isl.dim_type.param):
        return None
    n = _constant_length(kernel, iname)
    if n is None:
        return None
    box = isl.BasicSet(f"{{ [{iname}] : 0 <= {iname} < {n} }}")
    dom = dom.set_tuple_name(None) if dom.get_tuple_name() else dom  # type: ignore[arg-type]  # islpy: None clears the name
    return n if dom.is_equal(box) else None


class _ContiguousIndexCollector(UncachedLoopyWalkMapper):
    """Collects the variables of the last index of array accesses into
    *out* (descending into reductions)."""

    def __init__(self, out: set[str]) -> None:
        super().__init__()
        self.out = out

    def map_subscript(self, e: prim.Subscript) -> None:
        idx = e.index if isinstance(e.index, tuple) else (e.index,)
        if idx:
            deps = DependencyMapper(composite_leaves=False)(idx[-1])
            self.out.update(d.name for d in deps
                            if isinstance(d, prim.Variable))
        self.rec(e.index)

    def map_reduction(self, e: LoopyReduction) -> None:
        self.rec(e.expr)


class _ReductionCollector(UncachedLoopyWalkMapper):
    """Collects the outermost reductions of expressions (each distinct one
    once, in the order they are first met), and the inames appearing in
    the last index of array accesses inside them (contiguous access)."""

    def __init__(self) -> None:
        super().__init__()
        self.reductions: list[LoopyReduction] = []
        self.contiguous: set[str] = set()
        self._seen: set[LoopyReduction] = set()

    def map_reduction(self, expr: LoopyReduction, *args: object) -> None:
        if expr in self._seen:
            return
        self._seen.add(expr)
        self.reductions.append(expr)
        # nested reductions stay sequential: do not collect them
        _ContiguousIndexCollector(self.contiguous)(expr.expr)


class _ReductionFinder(UncachedLoopyWalkMapper):
    """Finds whether an expression holds a reduction (stops walking once
    it has found one)."""

    found = False

    def visit(self, expr: object, *args: object) -> bool:
        return not self.found

    def map_reduction(self, expr: LoopyReduction, *args: object) -> None:
        self.found = True


def _reduction_inames(insn: lp.InstructionBase) -> frozenset[str]:
    """``insn.reduction_inames()``, without :mod:`loopy`'s analysis of
    the dependencies of *insn* (which comes with it) where the expression
    holds no reduction: a walk, visiting all nodes that analysis visits,
    finds out first."""
    found = holds_reduction(getattr(insn, "expression", None))
    if found is None:
        finder = _ReductionFinder()
        try:
            finder(insn.expression)
        except Exception:
            found = True
        else:
            found = finder.found
    return frozenset(insn.reduction_inames()) if found else frozenset()


def _output_inames(insn: lp.InstructionBase) -> list[str] | None:
    """The inames indexing the assignee of *insn*, in order, if the
    instruction is a plain store over exactly those inames."""
    if not isinstance(insn, lp.Assignment):
        return None
    lhs = insn.assignee
    if isinstance(lhs, prim.Variable):
        idx: tuple[Expression, ...] = ()
    elif isinstance(lhs, prim.Subscript):
        idx = lhs.index if isinstance(lhs.index, tuple) else (lhs.index,)
    else:
        return None
    names = []
    for i in idx:
        if not isinstance(i, prim.Variable):
            return None
        names.append(i.name)
    if len(set(names)) != len(names) or set(names) != set(insn.within_inames):
        return None
    return names


def _own_domain(kernel: lp.LoopKernel, inames: Iterable[str]
                ) -> isl.BasicSet | None:
    """The domain of *inames* if they have one home domain over exactly
    them, else None."""
    names = set(inames)
    homes = {kernel.get_home_domain_index(i) for i in names}
    if len(homes) != 1:
        return None
    dom = kernel.domains[homes.pop()]
    if set(dom.get_var_names(isl.dim_type.set)) != names:
        return None
    return dom


def var_shape(kernel: lp.LoopKernel, name: str
              ) -> tuple[ArithmeticExpression, ...]:
    """The shape of the array *name* of *kernel* (the lowering gives every
    array one)."""
    shape = kernel.get_var_descriptor(name).shape
    assert isinstance(shape, tuple)
    return tuple(shape)


def _prod(values: Iterable[int | None]) -> int:
    result = 1
    for v in values:
        assert v is not None
        result *= v
    return result
