"""Small contractions shared across elements on GPUs: one work-item per
element, the outputs of an element in private accumulators.

``out[e, i] = sum_{f, j} L[i, f, j] * X(e, f, j)`` applies one small
matrix ``L`` (the *shared* factors, indexed by no batch axis) to values
``X`` of every element ``e`` (the *per-element* factors, indexed by no
output axis ``i``): the lift of a DG operator (``einsum("ifj,fej->ei")``),
often with ``X`` the numerical flux *inlined* (face values gathered by
index arrays, an upwind choice) and the sum inside a larger expression
(``rhs = volume - lift(flux)``). One output per work-item, the ordinary
schedule, computes ``X(e, f, j)`` once per *output* ``(e, i)``: the flux
of each face node as many times as the element has volume nodes. The
tiling of :mod:`~pytato.target.loopy.schedule.tiling` takes sums over
one reduction iname only, and stages plain array accesses only: a
per-element factor computed from them is computed once per output there
too.

Here the loops are turned around, per work-group of :attr:`group_size
<GpuContraction.group_size>` work-items (``l.0``) and ``K`` (the plan's
:attr:`~GpuContraction.elements_per_item`) elements per work-item:

.. code-block:: text

    acc[k, :] = 0                                  (k < K, unrolled)
    for f, j:                                      (the reduction's loops)
        fac[k] = X(e_k, f, j)                      (once per element and term)
        acc[k, i] = acc[k, i] + L[i, f, j]*fac[k]  (i and k unrolled)
    out[e_k, i] = expression(acc[k, i])

with the element ``e_k = G*K*group + G*k + t`` of work-item ``t``, so
that consecutive work-items read consecutive elements. Each per-element
factor is computed once per element and term, all outputs of an element
reuse it from a register, the shared factors are read at addresses that
are the same for all work-items of the group (served by the cache, one
value for the whole warp), and each of them serves the ``K`` elements of
a work-item (register blocking). The accumulators are indexed by
constants only (all their loops unrolled): registers. Per-element
factors that use some of the output inames (``u[e, j, k]`` of
``ij,ejk->eik``) are computed once per element, term and value of those
inames, the loops of the other output inames inside.

With :data:`STAGE_OUTPUTS` (the default) the stores go through local
memory: the work-items write their sums into a local array of the
group's block of elements (``G K`` rows of the outputs of an element,
padded to an odd length so that the writes of a warp hit distinct
banks), and after a barrier the group computes the outputs of the block
in the order of the result, consecutive work-items on consecutive
outputs: the stores, and the reads of the rest of the expression (the
volume term of ``volume - lift(flux)``), coalesced, where one work-item
per element would access them at a stride of the element's outputs.
Without it (or where the block does not fit the local memory), each
work-item stores its element's outputs itself.

A loop nest qualifies (:func:`plan_gpu_contraction`) when it is one
assignment over exactly its output inames, without predicates, holding
exactly one sum (not in a branch of a conditional) over reduction inames
of constant extents (product at most :data:`MAX_TERMS`), whose term is a
product of factors each indexed by no batch iname (shared) or by batch
inames (per-element), at least one of each; the output axes are batch
axes (leading; the first extent may be symbolic) and inner axes (the
longest suffix of constant extents of product at most
:data:`MAX_OUTPUTS`, outputs times terms at most :data:`MAX_WORK`), some
inner axis not used by the per-element factors; the output and reduction
domains are boxes starting at 0; and the sum's type is a floating-point
or complex one. The default schedule
(:mod:`~pytato.target.loopy.schedule.default`) applies it on GPUs to
nests that the tiling does not take, and in place of the tiling where
the tiling would compute a per-element factor per output (several
reduction inames, or a per-element factor that is not a plain array
access: :attr:`GpuContraction.over_tiling`); with
:data:`REPLACE_TILING`, to all nests that qualify. Such a nest gets a
device kernel of its own. Elements past the end of the batch (in the
last group) compute the factors of the last element (the index is
clamped, so that no read goes past the end of an array) and store
nothing. Results are those of the sequential sum up to the order of
the factors of each term (shared ones first).

.. autodata:: GROUP_SIZE
.. autodata:: MIN_GROUP_SIZE
.. autodata:: ACCUMULATOR_BYTES
.. autodata:: MAX_ELEMENTS_PER_ITEM
.. autodata:: MIN_GROUPS_PER_UNIT
.. autodata:: STAGE_OUTPUTS
.. autodata:: LOCAL_MEMORY_BUDGET
.. autodata:: MAX_UNROLLED_STEPS
.. autodata:: MAX_OUTPUTS
.. autodata:: MAX_TERMS
.. autodata:: MAX_WORK
.. autodata:: REPLACE_TILING
.. autoclass:: GpuContraction
.. autofunction:: plan_gpu_contraction

:func:`~pytato.target.loopy.schedule.gpu_contraction_code.apply_gpu_contractions`
writes the plans.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import loopy as lp
import pymbolic.primitives as prim
from loopy.library.reduction import SumReductionOperation
from loopy.symbolic import (
    Reduction as LoopyReduction,
    WalkMapper,
    get_dependencies,
)
from loopy.type_inference import TypeReader
from loopy.types import LoopyType
from pymbolic.typing import ArithmeticExpression, Expression

from pytato.target.loopy.lower.expr_types import arithmetic_tuple
from pytato.target.loopy.schedule.analysis import _has_impl_tag, _prod
from pytato.target.loopy.schedule.tiling_plan import _box_lengths, _ints
from pytato.tuning import record_defaults


if TYPE_CHECKING:
    from loopy.translation_unit import CallablesTable

    from pytato.target.loopy.device import DeviceInfo


__all__ = [
    "ACCUMULATOR_BYTES",
    "GROUP_SIZE",
    "LOCAL_MEMORY_BUDGET",
    "MAX_ELEMENTS_PER_ITEM",
    "MAX_OUTPUTS",
    "MAX_TERMS",
    "MAX_UNROLLED_STEPS",
    "MAX_WORK",
    "MIN_GROUPS_PER_UNIT",
    "MIN_GROUP_SIZE",
    "REPLACE_TILING",
    "STAGE_OUTPUTS",
    "GpuContraction",
    "plan_gpu_contraction",
]

#: Work-items per group (elements of a block per element of a
#: work-item), lowered (halved, down to :data:`MIN_GROUP_SIZE`) where the
#: block's outputs do not fit :data:`LOCAL_MEMORY_BUDGET`.
GROUP_SIZE = 128

#: Fewest work-items per group when the outputs are staged in local
#: memory (else the outputs are stored by each work-item).
MIN_GROUP_SIZE = 32

#: Bytes of the accumulators of a work-item (``K`` elements times the
#: outputs of an element): registers. 40 ``double`` values.
ACCUMULATOR_BYTES = 320

#: Most elements per work-item (``K``, register blocking: each load of a
#: shared factor serves ``K`` elements).
MAX_ELEMENTS_PER_ITEM = 4

#: ``K`` is lowered so that, with a constant number of elements, at least
#: this many work-groups per compute unit remain.
MIN_GROUPS_PER_UNIT = 4

#: Whether the outputs go through local memory, stored in the order of
#: the result (see the module documentation).
STAGE_OUTPUTS = True

#: Bytes of local memory that the staged outputs of a block may take (at
#: most the device's local memory less 2 KiB).
LOCAL_MEMORY_BUDGET = 24 * 1024

#: The steps of the stores of a block (``K`` times the outputs of an
#: element per work-item) are unrolled up to this many.
MAX_UNROLLED_STEPS = 64

#: Most outputs per element (product of the inner output extents).
MAX_OUTPUTS = 64

#: Most terms of each sum (product of the reduction extents).
MAX_TERMS = 64

#: Most products per element (outputs times terms): the size of the
#: unrolled code.
MAX_WORK = 4096

#: Whether nests that the tiling takes (one reduction iname, plain
#: per-element accesses) are computed here too (False: the tiling's).
REPLACE_TILING = False


@dataclass(frozen=True)
class GpuContraction:
    """The plan of a small contraction on a GPU (made by
    :func:`plan_gpu_contraction`, written by
    :func:`~pytato.target.loopy.schedule.gpu_contraction_code.apply_gpu_contractions`).

    .. attribute:: insn_id
    .. attribute:: batch

        The batch output inames (their flat index: the elements).

    .. attribute:: inner

        The inner output inames (the outputs of an element, in private
        accumulators).

    .. attribute:: lengths

        The extents of the output inames (ints; the first batch extent
        may be an expression in the kernel's parameters).

    .. attribute:: n_batch

        The number of elements.

    .. attribute:: reduction

        The reduction inames (sequential loops inside the work-item).

    .. attribute:: shared

        The factors of the term indexed by no batch iname.

    .. attribute:: per_element

        The other factors, computed once per element and term.

    .. attribute:: element_inner

        The inner inames that the per-element factors use (loops around
        the accumulators' updates, the other inner inames inside).

    .. attribute:: acc_dtype
    .. attribute:: factor_dtype
    .. attribute:: group_size
    .. attribute:: elements_per_item
    .. attribute:: staged

        Whether the outputs go through local memory.

    .. attribute:: over_tiling

        Whether the nest is computed here in place of the tiling: the
        tiling would recompute a per-element factor per output.
    """

    insn_id: str
    batch: tuple[str, ...]
    inner: tuple[str, ...]
    lengths: dict[str, ArithmeticExpression]
    n_batch: ArithmeticExpression
    reduction: tuple[str, ...]
    shared: tuple[Expression, ...]
    per_element: tuple[Expression, ...]
    element_inner: tuple[str, ...]
    acc_dtype: LoopyType
    factor_dtype: LoopyType
    group_size: int
    elements_per_item: int
    staged: bool
    over_tiling: bool

    @property
    def n_inner(self) -> int:
        return _prod(_ints(self.lengths[v] for v in self.inner))

    @property
    def block(self) -> int:
        """Elements per work-group."""
        return self.group_size * self.elements_per_item

    @property
    def padded_outputs(self) -> int:
        """The row length of the local array of staged outputs: odd."""
        n = self.n_inner
        return n + 1 if n % 2 == 0 else n

    @property
    def cut(self) -> bool:
        """Whether the last group's block may end past the batch."""
        return not (isinstance(self.n_batch, int)
                    and self.n_batch % self.block == 0)


# {{{ planning

class _Sums(WalkMapper):
    """The reductions of an expression, and whether one is in a branch of
    a conditional."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[LoopyReduction] = []
        self.in_branch = False
        self._depth = 0

    def map_reduction(self, expr: LoopyReduction, *args: object) -> None:
        self.found.append(expr)
        if self._depth:
            self.in_branch = True
        self.rec(expr.expr, *args)

    def map_if(self, expr: prim.If, *args: object) -> None:
        self.rec(expr.condition, *args)
        self._depth += 1
        self.rec(expr.then, *args)
        self.rec(expr.else_, *args)
        self._depth -= 1


def _factors(expr: Expression) -> list[Expression]:
    if isinstance(expr, prim.Product):
        return [f for c in expr.children for f in _factors(c)]
    return [expr]


def _product(factors: Sequence[Expression]) -> Expression:
    if len(factors) == 1:
        return factors[0]
    return prim.Product(arithmetic_tuple(factors))


def _plain_access(expr: Expression) -> bool:
    if not isinstance(expr, prim.Subscript) \
            or not isinstance(expr.aggregate, prim.Variable):
        return False
    idx = expr.index if isinstance(expr.index, tuple) else (expr.index,)
    return all(isinstance(i, prim.Variable) for i in idx)


class _Values(WalkMapper):
    """The names of the variables whose values an expression computes
    with: not those only in indices or in conditions."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()
        self._index = 0

    def map_variable(self, expr: prim.Variable, *args: object) -> None:
        if not self._index:
            self.names.add(expr.name)

    def map_subscript(self, expr: prim.Subscript, *args: object) -> None:
        self.rec(expr.aggregate, *args)
        self._index += 1
        self.rec(expr.index, *args)
        self._index -= 1

    def map_if(self, expr: prim.If, *args: object) -> None:
        self._index += 1
        self.rec(expr.condition, *args)
        self._index -= 1
        self.rec(expr.then, *args)
        self.rec(expr.else_, *args)

    def map_call(self, expr: prim.Call, *args: object) -> None:
        for p in expr.parameters:
            self.rec(p, *args)


def _type(kernel: lp.LoopKernel, reader: TypeReader, expr: Expression,
          fallback: LoopyType) -> LoopyType | None:
    """The type of *expr*; where loopy cannot read it (calls to functions
    that are not resolved yet, as ``sin``), *fallback* if all variables
    whose values *expr* computes with are of that type."""
    try:
        dtype: object = reader(expr)
    except Exception:
        values = _Values()
        try:
            values(expr)
        except Exception:
            return None
        for name in values.names:
            var = kernel.arg_dict.get(name) \
                or kernel.temporary_variables.get(name)
            if name in kernel.all_inames():
                continue
            if var is None or var.dtype != fallback:
                return None
        return fallback
    if isinstance(dtype, (list, tuple)):
        dtype = dtype[0] if len(dtype) == 1 else None
    if not isinstance(dtype, LoopyType) \
            or getattr(dtype, "numpy_dtype", None) is None:
        return None
    return dtype


def _sizes(n_inner: int, itemsize: int, n_batch: ArithmeticExpression,
           info: DeviceInfo) -> tuple[int, int, bool]:
    """(work-items per group, elements per work-item, staged) of a nest of
    *n_inner* outputs per element of *itemsize* bytes each."""
    per_item = max(1, min(MAX_ELEMENTS_PER_ITEM,
                          ACCUMULATOR_BYTES // (n_inner * itemsize)))
    top = max(1, min(GROUP_SIZE, info.max_work_group_size))
    if isinstance(n_batch, int) and info.compute_units:
        while per_item > 1 and -(-n_batch // (top * per_item)) \
                < MIN_GROUPS_PER_UNIT * info.compute_units:
            per_item -= 1
    if STAGE_OUTPUTS:
        padded = n_inner + 1 if n_inner % 2 == 0 else n_inner
        budget = min(LOCAL_MEMORY_BUDGET, info.local_mem_size - 2048)
        for k in range(per_item, 0, -1):
            size = top
            while size >= MIN_GROUP_SIZE:
                if k * size * padded * itemsize <= budget:
                    return size, k, True
                size //= 2
    return top, per_item, False


def plan_gpu_contraction(kernel: lp.LoopKernel, insn: lp.InstructionBase,
                         inames: Sequence[str], info: DeviceInfo,
                         callables_table: CallablesTable | None
                         ) -> GpuContraction | None:
    """The plan of the loop nest of the instruction *insn* alone over its
    output inames *inames* (in order) as a small contraction on the GPU
    *info* (see the module documentation); None if it does not
    qualify."""
    if not info.is_gpu or callables_table is None \
            or not isinstance(insn, lp.Assignment) or insn.predicates \
            or len(inames) < 2 or set(insn.within_inames) != set(inames):
        return None
    lhs = insn.assignee
    if not isinstance(lhs, prim.Subscript) \
            or not isinstance(lhs.aggregate, prim.Variable):
        return None
    idx = lhs.index if isinstance(lhs.index, tuple) else (lhs.index,)
    if tuple(getattr(i, "name", None) for i in idx) != tuple(inames):
        return None
    sums = _Sums()
    try:
        sums(insn.expression)
    except Exception:
        return None
    if len(sums.found) != 1 or sums.in_branch:
        return None
    red, = sums.found
    if not isinstance(red.operation, SumReductionOperation):
        return None
    if any(_has_impl_tag(kernel, i) for i in (*inames, *red.inames)):
        return None
    out_lengths = _box_lengths(kernel, list(inames))
    if out_lengths is None or 0 in out_lengths:
        return None
    red_lengths = []
    for r in red.inames:
        n = _box_lengths(kernel, [r])
        if n is None or not isinstance(n[0], int) or n[0] < 1:
            return None
        red_lengths.append(n[0])
    n_terms = _prod(red_lengths)
    split = len(inames)
    while split > 1 and isinstance(out_lengths[split - 1], int) \
            and _prod(_ints(out_lengths[split - 1:])) <= MAX_OUTPUTS:
        split -= 1
    if split == len(inames):
        return None
    batch, inner = tuple(inames[:split]), tuple(inames[split:])
    n_inner = _prod(_ints(out_lengths[split:]))
    if n_terms > MAX_TERMS or n_inner * n_terms > MAX_WORK:
        return None

    shared: list[Expression] = []
    per_element: list[Expression] = []
    used: set[str] = set()
    for factor in _factors(red.expr):
        deps = set(get_dependencies(factor))
        if deps & set(batch):
            per_element.append(factor)
            used |= deps & set(inner)
        else:
            shared.append(factor)
    element_inner = tuple(v for v in inner if v in used)
    if not shared or not per_element or len(element_inner) == len(inner):
        return None

    out_var = kernel.arg_dict.get(lhs.aggregate.name) \
        or kernel.temporary_variables.get(lhs.aggregate.name)
    if out_var is None or out_var.dtype in (None, lp.auto):
        return None
    reader = TypeReader(kernel, callables_table)
    term_dtype = _type(kernel, reader, red.expr, out_var.dtype)
    factor_dtype = _type(kernel, reader, _product(per_element),
                         out_var.dtype)
    if term_dtype is None or factor_dtype is None:
        return None
    acc_dtype, = red.operation.result_dtypes(term_dtype)
    if acc_dtype is None or acc_dtype.numpy_dtype.kind not in "fc":
        return None

    n_rest = _prod(_ints(out_lengths[1:split]))
    n_batch = out_lengths[0] * n_rest if n_rest > 1 else out_lengths[0]
    group_size, per_item, staged = _sizes(
        n_inner, acc_dtype.numpy_dtype.itemsize, n_batch, info)
    return GpuContraction(
        insn_id=insn.id, batch=batch, inner=inner,
        lengths=dict(zip(inames, out_lengths, strict=True)),
        n_batch=n_batch, reduction=tuple(red.inames), shared=tuple(shared),
        per_element=tuple(per_element), element_inner=element_inner,
        acc_dtype=acc_dtype, factor_dtype=factor_dtype,
        group_size=group_size, elements_per_item=per_item, staged=staged,
        over_tiling=len(red.inames) > 1 or not all(
            _plain_access(f) for f in per_element))

# }}}


# (the constants above as written, for the program store's keys)
record_defaults(__name__, globals())
