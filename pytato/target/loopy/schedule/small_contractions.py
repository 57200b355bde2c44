"""Small contractions shared across many elements, as CPU vector code.

``einsum("ij,ej->ei", D, u)`` applies one small matrix ``D`` to the values
of every element ``e``: the local operator of discontinuous Galerkin
codes (differentiation, mass and lift matrices). With one output per
work-item (the ordinary schedule), PoCL runs the sum over ``j`` of each
output as a scalar loop reading ``D[i, j]`` and ``u[e, j]`` at strides of
the reduction's extent, far from the memory's bandwidth that a small
GEMM reaches: PoCL vectorizes across the work-items of a group only
loops without inner loops, and the gathers and scatters it makes then
(elements on the lanes, rows of the reduction's extent apart) are slow
too.

Here the nest is computed as the small dense product it is: each
work-item computes :data:`ELEMENTS_PER_ITEM` consecutive elements, a
block of up to :data:`MAX_ELEMENT_BLOCK` at a time (register blocking:
at most :data:`ACCUMULATORS` vector accumulators, the rest one by one);
the outputs of an element (the flat index over the *inner* output axes,
contiguous in the result) are held in OpenCL vectors of
:data:`DOUBLE_WIDTH` (``double``) or :data:`FLOAT_WIDTH` (``float``) lanes
(the last ones narrower: 20 = 8 + 8 + 4), and each term of the sum (all
reduction indices, unrolled) is, per vector, one load of

* the term's values of the *shared* operands (those indexed by no batch
  axis: ``D``), a vector over the outputs, loaded with ``vloadW`` from the
  L1 cache where its lanes are consecutive in memory (the default
  schedule first copies ``D`` in that order,
  :mod:`~pytato.target.loopy.schedule.contraction_split`: ``D[j, i]``),
  else gathered once per work-item before the element loop,

and, for each element of the block, one vector ``fma`` with

* the term's values of the *per-element* operands (``u[e, j]``): each
  value loaded once per element into a scalar, then broadcast
  (``(double8)(u_j)``), or loaded as a vector (``vload8``) where the
  lanes read consecutive addresses, or gathered from the scalars;

then stored with ``vstoreW`` (contiguous). A work-item's elements read
and write consecutive memory, the matrix stays in the L1 cache, each load
of it serves the elements of a block, and all arithmetic is vector
arithmetic. Why each part (hand-written variants measured against each
other on PoCL, ``benchmarks/README.md``, "DG einsums and reductions"):
the vectors over the outputs keep the loads and stores contiguous; the
matrix in lane order makes each of its vectors one load from the L1
cache, where gathering it into registers once per work-item spills them
and the compiler reloads them lane by lane; blocks of elements reuse each
such load, the accumulators of a block staying in the vector registers;
64 elements per work-item and 4 work-items per group amortize the
work-item's start and leave enough groups for the cores.

The code carries the reduction's structure, not its spelling:
``ij,ej->ei``, ``ji,ej->ei``, ``ij,ejk->eik`` (outputs ``(i, k)`` flat),
and the face variant ``ifj,fej->ei`` (two reduction axes; the element
axis in the middle of ``u``) are all the same code with other offsets.

The code is one :class:`loopy.CInstruction` per nest, over ``ceil(n /
ELEMENTS_PER_ITEM)`` work-items on a flat pair of hardware inames (as
:mod:`~pytato.target.loopy.schedule.vector_calls` does, whose
:func:`~pytato.target.loopy.schedule.vector_calls.apply_vector_nests`
writes it); the last work-item's elements stop at the end of the batch
(symbolic numbers of elements included), so no access goes past the end
of an array.

A loop nest qualifies (:func:`plan_small_contraction`) when

* the device is a CPU whose
  :attr:`~pytato.target.loopy.device.DeviceInfo.vector_calls` is on (never
  for an unknown device; on GPUs,
  :mod:`~pytato.target.loopy.schedule.tiling` stages such nests in local
  and private memory instead, or
  :mod:`~pytato.target.loopy.schedule.gpu_contractions` computes them one
  work-item per element);
* it is one plain store over exactly its output inames, without
  predicates, whose expression is one sum over reduction inames of
  constant extents (product at most :data:`MAX_TERMS`) of a product of
  array accesses indexed by plain inames;
* the output axes are *batch* axes (leading; the first extent may be
  symbolic, the others constant) and *inner* axes, the longest suffix of
  constant extents of product at most :data:`MAX_OUTPUTS` (at least one
  output axis each), and outputs times terms are at most
  :data:`MAX_WORK`;
* at least one operand is shared (the small matrix) and one is
  per-element;
* all arrays are global, of one dtype (``float32`` or ``float64``), with
  fixed strides (constant along the inner and reduction axes where those
  index them) and no offset; the domain of the output inames is their own
  box, and so is each reduction iname's;
* the number of elements is symbolic or at least :data:`MIN_ELEMENTS`.

Such a nest gets a device kernel of its own (in a kernel shared with
other nests of the same dependency level, its code would run in a branch
of their work-items, of another group size).

Anything else (complex numbers, reductions other than sums, batched
operands only: ``eij,ej->ei`` already streams at the memory's bandwidth
one output per work-item) is left to the ordinary schedule. Results are
those of the sequential sum up to the rounding of the ``fma`` and the
order of the terms (the same order: reduction indices row-major).

.. autodata:: ELEMENTS_PER_ITEM
.. autodata:: GROUP_SIZE
.. autodata:: DOUBLE_WIDTH
.. autodata:: FLOAT_WIDTH
.. autodata:: MAX_ELEMENT_BLOCK
.. autodata:: ACCUMULATORS
.. autodata:: MAX_OUTPUTS
.. autodata:: MAX_TERMS
.. autodata:: MAX_WORK
.. autodata:: MIN_ELEMENTS
.. autoclass:: SmallContraction
.. autofunction:: plan_small_contraction
.. autofunction:: drop_reduction_inames
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import islpy as isl
import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from loopy.kernel.array import FixedStrideArrayDimTag
from loopy.library.reduction import SumReductionOperation
from loopy.symbolic import Reduction as LoopyReduction

from pytato.target.loopy.build.vector_code import (
    _BASE,
    _INDEX_TYPES,
    _NotVectorizable,
)
from pytato.target.loopy.schedule.analysis import (
    _box_length,
    _has_impl_tag,
    _own_domain,
)
from pytato.target.loopy.schedule.vector_calls import (
    VectorNest,
    _c_size,
    _is_box,
    _size_params,
    _vector_domain,
)
from pytato.tuning import record_defaults


if TYPE_CHECKING:
    from collections.abc import Sequence

    from loopy.kernel.data import KernelArgument
    from pymbolic.typing import Expression

    from pytato.target.loopy.device import DeviceInfo


__all__ = [
    "ACCUMULATORS",
    "DOUBLE_WIDTH",
    "ELEMENTS_PER_ITEM",
    "FLOAT_WIDTH",
    "GROUP_SIZE",
    "MAX_ELEMENT_BLOCK",
    "MAX_OUTPUTS",
    "MAX_TERMS",
    "MAX_WORK",
    "MIN_ELEMENTS",
    "SmallContraction",
    "drop_reduction_inames",
    "plan_small_contraction",
]

#: Elements computed one after the other by a work-item (they share the
#: loads of the shared operands).
ELEMENTS_PER_ITEM = 64

#: Work-items per group.
GROUP_SIZE = 4

#: Most elements computed together by a work-item, each load of a vector
#: of the shared operands used for all of them (register blocking).
MAX_ELEMENT_BLOCK = 4

#: Most vector accumulators of the elements computed together (the
#: elements of a block times the vectors over an element's outputs): 12
#: of the 32 vector registers of AVX-512.
ACCUMULATORS = 12

#: Lanes of the ``double`` vectors over an element's outputs.
DOUBLE_WIDTH = 8

#: Lanes of the ``float`` vectors over an element's outputs.
FLOAT_WIDTH = 16

#: Most outputs per element (product of the inner output extents).
MAX_OUTPUTS = 64

#: Most terms of each sum (product of the reduction extents).
MAX_TERMS = 64

#: Most products per element (outputs times terms): the size of the
#: unrolled code.
MAX_WORK = 4096

#: Fewest elements (constant numbers) for which the nest is planned here.
#: Below, the nest takes microseconds either way; and the code of a
#: planned nest holds its number of elements (the end of the last
#: work-item's elements), which the split path's hoisting of sizes
#: (:mod:`pytato.target.loopy.run.split_sizes`) does not rewrite: element
#: groups of different sizes share their sub-units only where they are
#: left to the ordinary schedule.
MIN_ELEMENTS = 1024

#: the names of the C code (a prefix no pytato name starts with)
_PREFIX = "_pt_sc"


@dataclass(frozen=True)
class SmallContraction(VectorNest):
    """The plan of a small contraction (made by
    :func:`plan_small_contraction`): a
    :class:`~pytato.target.loopy.schedule.vector_calls.VectorNest` whose
    work-items each compute :attr:`lanes` elements, and whose reduction
    inames, no longer used once it is written, are removed by
    :func:`drop_reduction_inames`.

    .. attribute:: reduction_inames
    """

    reduction_inames: tuple[str, ...] = ()


def drop_reduction_inames(kernel: lp.LoopKernel,
                          plans: Sequence[VectorNest]) -> lp.LoopKernel:
    """*kernel*, in which the plans of *plans* that are
    :class:`SmallContraction` have been written, without the domains and
    inames of their reductions (domains of their own, checked by
    :func:`plan_small_contraction`)."""
    names = {r for p in plans if isinstance(p, SmallContraction)
             for r in p.reduction_inames}
    if not names:
        return kernel
    domains = [d for d in kernel.domains
               if not set(d.get_var_names(isl.dim_type.set)) <= names]
    inames = {k: v for k, v in kernel.inames.items() if k not in names}
    return kernel.copy(domains=domains, inames=inames)


@dataclass(frozen=True)
class _Operand:
    """An array access of the sum: the array *name* and, per axis, the
    iname indexing it."""

    name: str
    inames: tuple[str, ...]
    strides: tuple[Expression, ...]

    def shared(self, batch: Sequence[str]) -> bool:
        return not set(self.inames) & set(batch)


def _chunks(n: int, width: int) -> list[tuple[int, int]]:
    """(start, width) of the vectors over *n* outputs: *width* lanes, the
    last ones narrower (powers of 2)."""
    result = []
    start = 0
    w = width
    while start < n:
        while w > n - start:
            w //= 2
        result.append((start, w))
        start += w
    return result


def _unflatten(flat: int, extents: Sequence[int]) -> list[int]:
    result = []
    for n in reversed(extents):
        result.append(flat % n)
        flat //= n
    return result[::-1]


def _float_variable(kernel: lp.LoopKernel, name: str
                    ) -> tuple[KernelArgument | lp.TemporaryVariable,
                               np.dtype[Any]] | None:
    """The argument or temporary *name* of *kernel* and its dtype, if that
    is ``float32`` or ``float64`` (else, or if unknown, *None*)."""
    var = kernel.arg_dict.get(name) or kernel.temporary_variables.get(name)
    if var is None or var.dtype is None or var.dtype is lp.auto:
        return None
    dtype = var.dtype.numpy_dtype
    if dtype not in (np.float32, np.float64):
        return None
    return var, dtype


def _strides(kernel: lp.LoopKernel, name: str, dtype: np.dtype
             ) -> tuple[Expression, ...] | None:
    """The strides of the global array *name* (of *dtype*, no offset)."""
    var: lp.KernelArgument | lp.TemporaryVariable | None = (
        kernel.arg_dict.get(name))
    if var is None:
        var = kernel.temporary_variables.get(name)
        if var is None or var.address_space != lp.AddressSpace.GLOBAL \
                or var.base_storage is not None:
            return None
    elif not isinstance(var, lp.ArrayArg) \
            or var.address_space != lp.AddressSpace.GLOBAL:
        return None
    if var.dtype is None or var.dtype is lp.auto \
            or var.dtype.numpy_dtype != dtype:
        return None
    if var.shape is None or var.offset != 0 or var.dim_tags is None:
        return None
    if not all(isinstance(t, FixedStrideArrayDimTag) for t in var.dim_tags):
        return None
    return tuple(t.stride for t in var.dim_tags)


def _plain(index: Expression) -> tuple[str, ...] | None:
    idx = index if isinstance(index, tuple) else (index,)
    if not all(isinstance(i, prim.Variable) for i in idx):
        return None
    return tuple(i.name for i in idx if isinstance(i, prim.Variable))


def _int(n: Expression) -> int:
    """The extent *n*, known to be an integer."""
    assert isinstance(n, (int, np.integer))
    return int(n)


def _factors(expr: Expression) -> list[Expression]:
    if isinstance(expr, prim.Product):
        return [f for c in expr.children for f in _factors(c)]
    return [expr]


@dataclass
class _Code:
    """The C text of a planned nest, built by :func:`_emit`."""

    lines: list[str]
    read: set[str]


def _emit(kernel: lp.LoopKernel, operands: list[_Operand], out: _Operand,
          batch: list[str], batch_extents: list[Expression],
          inner: list[str], inner_extents: list[int],
          red: list[str], red_extents: list[int],
          ctype: str, width: int, per_item: int, size_c: str,
          index_c: str) -> _Code:
    """The statements of a work-item (see the module documentation)."""
    read: set[str] = set()
    n_inner = int(np.prod(inner_extents))
    n_terms = int(np.prod(red_extents))
    chunks = _chunks(n_inner, width)
    block = _element_block(len(chunks))

    def c_int(expr: Expression) -> str:
        read.update(_size_params(expr))
        return _c_size(kernel, expr)

    def vtype(w: int) -> str:
        return ctype if w == 1 else f"{ctype}{w}"

    def offset(op: _Operand, values: dict[str, int]) -> tuple[str, int]:
        """The offset in *op* of the non-batch indices *values*: its
        symbolic text (from strides in the size parameters) and its
        constant part."""
        const = 0
        symbolic = []
        for iname, stride in zip(op.inames, op.strides, strict=True):
            if iname in batch:
                continue
            v = values[iname]
            if isinstance(stride, (int, np.integer)):
                const += v * int(stride)
            elif v:
                symbolic.append(f"{v}*{c_int(stride)}")
        return " + ".join(symbolic), const

    def address(sym: str, const: int) -> str:
        return f"{sym} + {const}" if sym else str(const)

    def contiguous(addrs: list[tuple[str, int]]) -> bool:
        return all(s == addrs[0][0] and o == addrs[0][1] + c
                   for c, (s, o) in enumerate(addrs))

    lanes = [dict(zip(inner, _unflatten(f, inner_extents), strict=True))
             for f in range(n_inner)]
    terms = [dict(zip(red, _unflatten(t, red_extents), strict=True))
             for t in range(n_terms)]
    pointer_name: dict[_Operand, str] = {}
    for op in operands:
        if not op.shared(batch) and op not in pointer_name:
            pointer_name[op] = f"{_PREFIX}_p{len(pointer_name)}"
            read.add(op.name)
    pointer_name[out] = f"{_PREFIX}_pout"

    # shared vectors whose lanes are not contiguous: gathered once per
    # work-item; contiguous ones are loaded where used (the L1 cache)
    prologue: list[str] = []
    shared_vars: dict[tuple[str, tuple[tuple[str, int], ...]], str] = {}

    def shared_vector(op: _Operand, addrs: list[tuple[str, int]]) -> str:
        read.add(op.name)
        w = len(addrs)
        if w > 1 and contiguous(addrs):
            return f"vload{w}(0, {op.name} + {address(*addrs[0])})"
        key = (op.name, tuple(addrs))
        var = shared_vars.get(key)
        if var is None:
            var = f"{_PREFIX}_s{len(shared_vars)}"
            shared_vars[key] = var
            vals = [f"{op.name}[{address(s, o)}]" for s, o in addrs]
            value = vals[0] if w == 1 else \
                f"({vtype(w)})({', '.join(vals)})"
            prologue.append(f"const {vtype(w)} {var} = {value};")
        return var

    def body(n_el: int, e: str) -> list[str]:
        """The statements computing elements ``e, ..., e + n_el - 1``."""
        lines: list[str] = []
        for k in range(n_el):
            element = e if k == 0 else f"({e} + {k})"
            for d in range(len(batch)):
                stride = int(np.prod([_int(n) for n in batch_extents[d + 1:]]))
                value = element if stride == 1 else f"{element} / {stride}"
                if d > 0:
                    value = f"({value}) % {_int(batch_extents[d])}"
                lines.append(f"const {index_c} {_PREFIX}_b{k}_{d} = {value};")
            for op, name in pointer_name.items():
                offsets = [f"{_PREFIX}_b{k}_{batch.index(i)}*{c_int(st)}"
                           for i, st in zip(op.inames, op.strides, strict=True)
                           if i in batch]
                const = "" if op is out else "const "
                lines.append(f"__global {const}{ctype} *{name}_{k} = "
                             f"{op.name} + {' + '.join(offsets) or '0'};")
        accs = [[f"{_PREFIX}_acc{k}_{c}" for c in range(len(chunks))]
                for k in range(n_el)]
        for k in range(n_el):
            for c, (_, w) in enumerate(chunks):
                lines.append(f"{vtype(w)} {accs[k][c]} = ({vtype(w)})(0);")
        scalars: dict[tuple[int, str, str, int], str] = {}

        def scalar(k: int, op: _Operand, s: str, o: int) -> str:
            key = (k, pointer_name[op], s, o)
            var = scalars.get(key)
            if var is None:
                var = f"{_PREFIX}_v{len(scalars)}"
                scalars[key] = var
                lines.append(f"const {ctype} {var} = "
                             f"{pointer_name[op]}_{k}[{address(s, o)}];")
            return var

        for term in terms:
            for c, (start, w) in enumerate(chunks):
                shared: list[tuple[_Operand, list[tuple[str, int]]]] = []
                per_element: list[tuple[_Operand, list[tuple[str, int]]]] = []
                for op in operands:
                    addrs = [offset(op, {**lanes[start + i], **term})
                             for i in range(w)]
                    (shared if op.shared(batch) else per_element).append(
                        (op, addrs))
                mv = [shared_vector(op, addrs) for op, addrs in shared]
                if len(mv) == 1 and "vload" in mv[0]:
                    # loaded once for the elements of the block
                    name = f"{_PREFIX}_m{len(lines)}"
                    lines.append(f"const {vtype(w)} {name} = {mv[0]};")
                    mv = [name]
                for k in range(n_el):
                    factors = list(mv)
                    for op, addrs in per_element:
                        if w > 1 and contiguous(addrs):
                            factors.append(f"vload{w}(0, {pointer_name[op]}_"
                                           f"{k} + {address(*addrs[0])})")
                            continue
                        vals = [scalar(k, op, s, o) for s, o in addrs]
                        if w == 1:
                            factors.append(vals[0])
                        elif len(set(vals)) == 1:
                            factors.append(f"(({vtype(w)})({vals[0]}))")
                        else:
                            factors.append(f"(({vtype(w)})"
                                           f"({', '.join(vals)}))")
                    acc = accs[k][c]
                    if len(factors) == 2:
                        lines.append(f"{acc} = fma({factors[0]}, "
                                     f"{factors[1]}, {acc});")
                    else:
                        lines.append(f"{acc} += {' * '.join(factors)};")
        for k in range(n_el):
            for c, (start, w) in enumerate(chunks):
                target = f"{pointer_name[out]}_{k}"
                where = address(*offset(out, lanes[start]))
                if w == 1:
                    lines.append(f"{target}[{where}] = {accs[k][c]};")
                else:
                    lines.append(f"vstore{w}({accs[k][c]}, 0, {target} + "
                                 f"{where});")
        return lines

    e = f"{_PREFIX}_e"
    main = body(block, e)
    lines = [*prologue,
             f"const {index_c} {_PREFIX}_end = min(({index_c}) "
             f"({_BASE} + {per_item}), ({index_c}) ({size_c}));",
             f"{index_c} {e} = {_BASE};",
             f"for (; {e} + {block} <= {_PREFIX}_end; {e} += {block})",
             "{", *("  " + line for line in main), "}"]
    if block > 1:
        tail = body(1, e)
        lines.extend([f"for (; {e} < {_PREFIX}_end; ++{e})", "{",
                      *("  " + line for line in tail), "}"])
    return _Code(lines, read)


def _element_block(n_chunks: int) -> int:
    """Elements computed together (sharing each load of the shared
    vectors), with *n_chunks* vectors of accumulators per element: at
    most :data:`MAX_ELEMENT_BLOCK`, at most :data:`ACCUMULATORS`
    accumulators."""
    return max(1, min(MAX_ELEMENT_BLOCK, ACCUMULATORS // n_chunks))


def plan_small_contraction(kernel: lp.LoopKernel,
                           insns: Sequence[lp.InstructionBase],
                           inames: Sequence[str], info: DeviceInfo
                           ) -> SmallContraction | None:
    """The plan of the loop nest of *insns* over its output inames
    *inames* of *kernel* as a small contraction in vector code (see the
    module documentation), to be written by
    :func:`~pytato.target.loopy.schedule.vector_calls.apply_vector_nests`;
    None if the nest does not qualify or the device is not a CPU with
    :attr:`~pytato.target.loopy.device.DeviceInfo.vector_calls` on."""
    if info.is_gpu or not info.vector_calls or len(insns) != 1 \
            or len(inames) < 2:
        return None
    insn, = insns
    if not isinstance(insn, lp.Assignment) or insn.predicates \
            or set(insn.within_inames) != set(inames):
        return None
    red = insn.expression
    lhs = insn.assignee
    if not isinstance(red, LoopyReduction) \
            or not isinstance(red.operation, SumReductionOperation) \
            or not isinstance(lhs, prim.Subscript) \
            or not isinstance(lhs.aggregate, prim.Variable) \
            or _plain(lhs.index) != tuple(inames):
        return None
    if any(_has_impl_tag(kernel, i) for i in (*inames, *red.inames)):
        return None
    if kernel.index_dtype.numpy_dtype not in _INDEX_TYPES:
        return None
    found = _float_variable(kernel, lhs.aggregate.name)
    if found is None:
        return None
    out_var, dtype = found

    # the extents: the output's shape, the reductions' boxes
    shape = out_var.shape
    if not isinstance(shape, tuple) or len(shape) != len(inames):
        return None
    dom = _own_domain(kernel, inames)
    if dom is None or not _is_box(dom, inames, shape):
        return None
    red_extents = []
    for r in red.inames:
        if _own_domain(kernel, [r]) is None:
            return None
        n = _box_length(kernel, r)
        if n is None or n < 1:
            return None
        red_extents.append(n)
    n_terms = int(np.prod(red_extents))
    split = len(inames)
    while split > 1 and isinstance(shape[split - 1], (int, np.integer)) \
            and int(np.prod([_int(n) for n in shape[split - 1:]])) \
            <= MAX_OUTPUTS:
        split -= 1
    if split == len(inames):
        return None
    batch, inner = list(inames[:split]), list(inames[split:])
    batch_extents = list(shape[:split])
    if not all(isinstance(n, (int, np.integer)) for n in batch_extents[1:]):
        return None
    inner_extents = [_int(n) for n in shape[split:]]
    n_inner = int(np.prod(inner_extents))
    if n_terms > MAX_TERMS or n_inner * n_terms > MAX_WORK:
        return None

    # the operands
    operands = []
    for factor in _factors(red.expr):
        if not isinstance(factor, prim.Subscript) \
                or not isinstance(factor.aggregate, prim.Variable):
            return None
        names = _plain(factor.index)
        if names is None or not set(names) <= {*inames, *red.inames}:
            return None
        strides = _strides(kernel, factor.aggregate.name, dtype)
        if strides is None or len(strides) != len(names):
            return None
        operands.append(_Operand(factor.aggregate.name, names, strides))
    out_strides = _strides(kernel, lhs.aggregate.name, dtype)
    if out_strides is None:
        return None
    out = _Operand(lhs.aggregate.name, tuple(inames), out_strides)
    if not any(op.shared(batch) for op in operands) \
            or all(op.shared(batch) for op in operands) \
            or out.name in {op.name for op in operands}:
        return None
    for op in (*operands, out):
        # constant strides along the inner axes (vectors' lanes)
        for iname, stride in zip(op.inames, op.strides, strict=True):
            if iname in inner and not isinstance(stride, (int, np.integer)):
                return None
    if any(op.inames.count(b) > 1 for op in operands for b in batch):
        return None

    size_expr: Expression = batch_extents[0]
    for extent in batch_extents[1:]:
        size_expr = size_expr * extent
    if isinstance(size_expr, (int, np.integer)):
        if int(size_expr) < MIN_ELEMENTS:
            return None
        size: int | str = int(size_expr)
    else:
        size = str(size_expr)
    params = tuple(sorted(_size_params(size_expr)))
    per_item = ELEMENTS_PER_ITEM
    group_size = GROUP_SIZE
    if isinstance(size, int):
        group_size = max(1, min(group_size, -(-size // per_item)))
    else:
        try:  # an affine number of elements (not n*m)
            _vector_domain(params, "o", "i", group_size, per_item, size)
        except isl.Error:
            return None
    width = DOUBLE_WIDTH if dtype == np.float64 else FLOAT_WIDTH
    index_c = _INDEX_TYPES[kernel.index_dtype.numpy_dtype]
    try:
        size_c = _c_size(kernel, size_expr)
        code = _emit(kernel, operands, out, batch, batch_extents, inner,
                     inner_extents, list(red.inames), red_extents,
                     "double" if dtype == np.float64 else "float", width,
                     per_item, size_c, index_c)
    except _NotVectorizable:
        return None
    body = "\n".join("  " + line for line in code.lines)
    return SmallContraction(
        insn_ids=(insn.id,), inames=tuple(inames), size=size,
        params=params, lanes=per_item, group_size=group_size,
        code=f"{{\n{body}\n}}",
        read_variables=frozenset(code.read) | frozenset(params),
        written=(out.name,), private=frozenset(),
        reduction_inames=tuple(red.inames))


# (the constants above as written, for the program store's keys)
record_defaults(__name__, globals())
