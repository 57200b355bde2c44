"""Elementwise loop nests calling math functions, as OpenCL vector code.

PoCL compiles ``sin(x[i])`` of each work-item to a call of a scalar
library function, across which its compiler cannot vectorize the loop over
a group's work-items: ``sin(x)*2 + x**2 - exp(-x)``
(``benchmarks/bench_user_path.py``) ran at numpy's speed on PoCL (2
cores). PoCL computes ``sin(double8)`` with its vector functions. Here
each work-item of such a nest computes :data:`DOUBLE_LANES` (``double``)
or :data:`FLOAT_LANES` (``float``) consecutive elements: it loads them
with ``vloadW``, applies the nest's expressions to the vectors and stores
the results with ``vstoreW``. The last, partial chunk of the elements
(when their number is not a multiple of the width, symbolic numbers
included) is computed one element after the other by the work-item that
holds it, with the same expressions on scalars; no access goes past the
end of an array.

:func:`plan_vector_nest` decides whether a loop nest qualifies and writes
its code (with the OpenCL C emitter of
:mod:`pytato.target.loopy.build.vector_code`, which also holds the
functions accepted, ``FLOAT_VIA_DOUBLE`` and ``DOUBLE_IN_HALVES``);
:func:`apply_vector_nests` puts the code of the planned nests in
the kernel, each as one :class:`loopy.CInstruction` over a flat pair of
hardware inames (``g.0`` and ``l.0``) covering ``ceil(n / W)`` work-items.
:func:`~pytato.target.loopy.schedule.default.default_schedule` applies
them to the loop nests it schedules when the device's
:attr:`~pytato.target.loopy.device.DeviceInfo.vector_calls` is on (unless
``PYTATO_VECTOR_CALLS=0``,
:data:`~pytato.target.loopy.device.VECTOR_CALLS_ENV`), never for the
description of an unknown device. On GPUs a work-item computes
:data:`GPU_LANES` floats or :data:`GPU_DOUBLE_LANES` doubles (without
PoCL's workarounds): NVIDIA's
compiler does not load an element before the math of the previous one,
and a vector load per work-item reaches copy bandwidth.

A loop nest qualifies when

* its instructions are plain stores without predicates over exactly the
  nest's loops, whose domain is of its own and is the box of the shape of
  the stored arrays (constant or symbolic extents, the number of elements
  affine in the size parameters);
* every array it reads or writes (arguments or global temporaries) has
  exactly that shape, one floating-point dtype (``float32`` or
  ``float64``, the same for all), C order and no offset, and is accessed
  at exactly the nest's loop indices (so that the flat element index of
  the nest is the offset of the element in each array), or is a 0-d array
  of that dtype (e.g. the result of a full reduction, read once by each
  work-item); values kept in private scalars by
  :mod:`pytato.target.loopy.lower.fusion` stay in (vector) variables;
* its expressions use only ``+ - * /``, powers (integer exponents are
  multiplied out as :mod:`loopy` does), constants, the math functions of
  :data:`~pytato.target.loopy.build.vector_code.UNARY_FUNCTIONS` and
  :data:`~pytato.target.loopy.build.vector_code.BINARY_FUNCTIONS`, comparisons,
  logical operations, ``isnan`` and conditional expressions (``where``,
  ``maximum``, ``minimum``);
* it calls at least one of
  :data:`~pytato.target.loopy.build.vector_code.TRANSCENDENTAL_FUNCTIONS` (or
  raises to a non-integer power): other elementwise nests PoCL vectorizes
  by itself;
* on GPUs, it calls :data:`GPU_TRIG_FUNCTIONS` at most
  :data:`GPU_MAX_TRIG_CALLS` times.

Anything else (integers, booleans, complex numbers, gathers, broadcasts,
reductions, shifted or transposed accesses, casts) leaves the nest to the
ordinary schedule. Results are those of the scalar code up to the
rounding of the vector functions (within the tolerances of the math
functions); NaN, infinities and signed zeros go through the same
functions and comparisons.

.. autodata:: DOUBLE_LANES
.. autodata:: FLOAT_LANES
.. autodata:: GPU_LANES
.. autodata:: GPU_DOUBLE_LANES
.. autodata:: GPU_TRIG_FUNCTIONS
.. autodata:: GPU_MAX_TRIG_CALLS
.. autoclass:: VectorNest
.. autofunction:: plan_vector_nest
.. autofunction:: apply_vector_nests
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import islpy as isl
import loopy as lp
import numpy as np
import pymbolic.primitives as prim
from loopy.kernel.array import FixedStrideArrayDimTag
from loopy.kernel.data import GroupInameTag, Iname, LocalInameTag
from pymbolic.mapper import WalkMapper

# (the emitter's private names too, at the path they had before it moved)
from pytato.target.loopy.build.vector_code import (  # noqa: F401
    _BASE,
    _BASE_WORD,
    _C_NAMES,
    _COMPARISONS,
    _ELEMENT,
    _INDEX_TYPES,
    _PREDICATES,
    BINARY_FUNCTIONS,
    DOUBLE_IN_HALVES,
    FLOAT_VIA_DOUBLE,
    TRANSCENDENTAL_FUNCTIONS,
    UNARY_FUNCTIONS,
    _Emitter,
    _NotVectorizable,
    _Value,
)
from pytato.target.loopy.lower.expr_types import arithmetic
from pytato.target.loopy.schedule.analysis import _has_impl_tag, _own_domain
from pytato.target.loopy.schedule.outputs import SILENCED_WRITE_RACES
from pytato.tuning import record_defaults


if TYPE_CHECKING:
    from collections.abc import Sequence

    from pymbolic.typing import ArithmeticExpression, Expression

    from pytato.target.loopy.device import DeviceInfo


__all__ = [
    "BINARY_FUNCTIONS",
    "DOUBLE_IN_HALVES",
    "DOUBLE_LANES",
    "FLOAT_LANES",
    "FLOAT_VIA_DOUBLE",
    "GPU_DOUBLE_LANES",
    "GPU_LANES",
    "GPU_MAX_TRIG_CALLS",
    "GPU_TRIG_FUNCTIONS",
    "TRANSCENDENTAL_FUNCTIONS",
    "UNARY_FUNCTIONS",
    "VectorNest",
    "apply_vector_nests",
    "plan_vector_nest",
]


#: Elements of ``double`` computed by each work-item of a vector nest
#: (``double8``: PoCL's widest vector functions on AVX-512).
DOUBLE_LANES = 8

#: Elements of ``float`` per work-item of a vector nest (on PoCL, ``sin``
#: of floats was faster in ``float8`` than in ``float16``).
FLOAT_LANES = 8

#: Elements of ``float`` per work-item of vector nests on GPUs (on NVIDIA
#: GPUs, ``sin``/``exp`` of floats were faster in ``float4`` than one by
#: one).
GPU_LANES = 4

#: Elements of ``double`` per work-item of vector nests on GPUs: 16 bytes
#: per array and work-item, as for floats. With ``double4``, a nest reading
#: two arrays and writing four (``sin``, ``cos``, ``exp``) ran at about
#: half the copy bandwidth on NVIDIA GPUs, where ``double2`` and scalar code
#: reached it.
GPU_DOUBLE_LANES = 2

#: Functions whose vector code on GPUs is slow where a nest calls many of
#: them (their range reduction, with a slow path for large arguments, is
#: long code, kept for each of a work-item's elements): see
#: :data:`GPU_MAX_TRIG_CALLS`.
GPU_TRIG_FUNCTIONS = frozenset({"sin", "cos", "tan"})

#: Nests calling :data:`GPU_TRIG_FUNCTIONS` more often than this stay
#: scalar code on GPUs. On NVIDIA GPUs (sums of ``sin((k+1)*x)``,
#: ``float4`` / ``double4`` vector code against scalar code), vector
#: code was as fast or faster up to 4 calls and slower beyond (doubles
#: from 5 calls, floats from 8), ever more so with more calls. ``exp`` in
#: vector code was as fast or faster for up to 12 calls.
GPU_MAX_TRIG_CALLS = 4



class _TrigCallCounter(WalkMapper):
    """Counts the calls of :data:`GPU_TRIG_FUNCTIONS` in what it walks."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def visit(self, expr: object, *args: object, **kwargs: object) -> bool:
        if isinstance(expr, prim.Call) \
                and isinstance(expr.function, prim.Variable) \
                and expr.function.name in GPU_TRIG_FUNCTIONS:
            self.count += 1
        return True


def _trig_calls(insns: Sequence[lp.Assignment]) -> int:
    """The number of calls of :data:`GPU_TRIG_FUNCTIONS` in the expressions
    of *insns* (which the vector emitter accepted)."""
    counter = _TrigCallCounter()
    for insn in insns:
        counter(insn.expression)
    return counter.count


@dataclass(frozen=True)
class VectorNest:
    """A loop nest to compute with vector code (see the module
    documentation), planned by :func:`plan_vector_nest`.

    .. attribute:: insn_ids

        The instructions of the nest, replaced by one
        :class:`loopy.CInstruction`.

    .. attribute:: inames

        The nest's loops (output axes, in order), replaced by a flat pair
        of hardware inames.

    .. attribute:: size

        The number of elements: an :class:`int`, or the text of an affine
        expression of the size parameters *params* (isl syntax).

    .. attribute:: params
    .. attribute:: lanes
    .. attribute:: group_size
    .. attribute:: code

        The C code of the work-item whose first element is ``_pt_vc_base``.

    .. attribute:: read_variables
    .. attribute:: written

        The names of the arrays (and size parameters) the code reads, and
        of the arrays it writes.

    .. attribute:: private

        The private temporaries of the nest, local variables of the code.
    """

    insn_ids: tuple[str, ...]
    inames: tuple[str, ...]
    size: int | str
    params: tuple[str, ...]
    lanes: int
    group_size: int
    code: str
    read_variables: frozenset[str]
    written: tuple[str, ...]
    private: frozenset[str]



@dataclass
class _NestInfo:
    """What the emitter checks the arrays of a nest against."""

    kernel: lp.LoopKernel
    index: tuple[prim.Variable, ...]
    shape: tuple[Expression, ...]
    dtype: np.dtype[np.floating]
    ctype: str
    #: the private temporaries, each with whether it holds truth values
    private: dict[str, bool]
    read: set[str]
    written: dict[str, None]
    transcendental: bool = False
    #: whether PoCL's wrong vector functions are worked around (CPUs)
    workarounds: bool = True

    def check_array(self, name: str, scalar: bool = False) -> None:
        """Raise :class:`_NotVectorizable` unless *name* is a global array
        of the nest's shape (0-d with *scalar*) and dtype, in C order
        without offset."""
        knl = self.kernel
        var: lp.KernelArgument | lp.TemporaryVariable | None = (
            knl.arg_dict.get(name))
        if var is None:
            var = knl.temporary_variables.get(name)
            if var is None or var.address_space != lp.AddressSpace.GLOBAL \
                    or var.base_storage is not None:
                raise _NotVectorizable(f"{name} is not a global array")
        elif not isinstance(var, lp.ArrayArg) \
                or var.address_space != lp.AddressSpace.GLOBAL:
            raise _NotVectorizable(f"{name} is not a global array")
        if var.dtype is None or var.dtype.numpy_dtype != self.dtype:
            raise _NotVectorizable(f"dtype of {name}")
        if var.shape is None or var.offset != 0:
            raise _NotVectorizable(f"shape or offset of {name}")
        assert isinstance(var.shape, tuple)  # the lowering's are
        if scalar:
            if tuple(var.shape) != ():
                raise _NotVectorizable(f"{name} is not 0-dimensional")
            return
        if tuple(var.shape) != self.shape or var.dim_tags is None:
            raise _NotVectorizable(f"shape of {name}")
        stride: ArithmeticExpression = 1
        for tag, extent in zip(reversed(var.dim_tags), reversed(self.shape),
                               strict=True):
            if not isinstance(tag, FixedStrideArrayDimTag) \
                    or tag.stride != stride:
                raise _NotVectorizable(f"layout of {name}")
            stride = stride * arithmetic(extent)


def _c_size(kernel: lp.LoopKernel, expr: Expression) -> str:
    """The C text of the size expression *expr* (integers, integer size
    parameters, sums and products)."""
    if isinstance(expr, (int, np.integer)) and not isinstance(expr, bool):
        return str(int(expr))
    if isinstance(expr, prim.Variable):
        arg = kernel.arg_dict.get(expr.name)
        if not isinstance(arg, lp.ValueArg) or arg.dtype is None \
                or arg.dtype.numpy_dtype.kind not in "iu":
            raise _NotVectorizable(f"size parameter {expr.name}")
        return expr.name
    if isinstance(expr, (prim.Sum, prim.Product)):
        op = " + " if isinstance(expr, prim.Sum) else " * "
        return "(" + op.join(_c_size(kernel, c) for c in expr.children) + ")"
    raise _NotVectorizable(f"size {expr!r}")


def _size_params(expr: Expression) -> set[str]:
    if isinstance(expr, prim.Variable):
        return {expr.name}
    if isinstance(expr, (prim.Sum, prim.Product)):
        return set().union(*(_size_params(c) for c in expr.children))
    return set()


def _is_box(dom: isl.BasicSet, inames: Sequence[str],
            shape: Sequence[Expression]) -> bool:
    """Whether *dom* is ``0 <= inames[k] < shape[k]`` for all *k*."""
    names = dom.get_var_names_not_none(isl.dim_type.set)
    params = dom.get_var_names_not_none(isl.dim_type.param)
    extent = dict(zip(inames, shape, strict=True))
    conds = " and ".join(f"0 <= {n} < {extent[n]}" for n in names)
    try:
        box = isl.BasicSet(f"[{', '.join(params)}] -> "
                           f"{{ [{', '.join(names)}] : {conds} }}")
        if dom.get_tuple_name():
            dom = dom.set_tuple_name(None)  # type: ignore[arg-type]  # islpy: None clears the name
        return bool(dom.is_equal(box))
    except isl.Error:
        return False


def plan_vector_nest(kernel: lp.LoopKernel, insns: Sequence[lp.Assignment],
                     inames: Sequence[str], info: DeviceInfo
                     ) -> VectorNest | None:
    """The plan of vector code for the loop nest of *insns* over its output
    inames *inames* (in order) of *kernel*, scheduled for *info*; None if
    the nest does not qualify (see the module documentation) or *info*'s
    :attr:`~pytato.target.loopy.device.DeviceInfo.vector_calls` is off."""
    if not info.vector_calls or not inames:
        return None
    if any(_has_impl_tag(kernel, i) for i in inames):
        return None
    dom = _own_domain(kernel, inames)
    if dom is None:
        return None
    index = tuple(prim.Variable(i) for i in inames)
    stored = None
    for insn in insns:
        if not isinstance(insn, lp.Assignment) or insn.predicates \
                or set(insn.within_inames) != set(inames):
            return None
        lhs = insn.assignee
        if stored is None and isinstance(lhs, prim.Subscript) \
                and isinstance(lhs.aggregate, prim.Variable):
            stored = kernel.arg_dict.get(lhs.aggregate.name) \
                or kernel.temporary_variables.get(lhs.aggregate.name)
    if stored is None or stored.dtype is None or stored.shape is None:
        return None
    dtype = stored.dtype.numpy_dtype
    if dtype not in (np.float32, np.float64) \
            or kernel.index_dtype.numpy_dtype not in _INDEX_TYPES:
        return None
    assert isinstance(stored.shape, tuple)  # the lowering's are
    shape = tuple(stored.shape)
    if len(shape) != len(inames):
        return None
    private = {
        insn.assignee.name: tv.dtype.numpy_dtype.kind == "b"
        for insn in insns
        if isinstance(insn.assignee, prim.Variable)
        and (tv := kernel.temporary_variables.get(insn.assignee.name))
        is not None and tv.address_space == lp.AddressSpace.PRIVATE
        and tv.shape == () and tv.dtype is not None
        and tv.dtype.numpy_dtype in (dtype, np.bool_)}
    nest = _NestInfo(kernel, index, shape, dtype,
                     "double" if dtype == np.float64 else "float", private,
                     set(), {}, workarounds=not info.is_gpu)
    if info.is_gpu:
        lanes = GPU_DOUBLE_LANES if dtype == np.float64 else GPU_LANES
    else:
        lanes = DOUBLE_LANES if dtype == np.float64 else FLOAT_LANES
    size_expr: Expression = shape[0]
    for extent in shape[1:]:
        size_expr = size_expr * extent
    try:
        ordered = _in_order(insns)
        vector = _Emitter(nest, lanes)
        for insn in ordered:
            vector.store(insn)
        # (most nests stop here: the checks below cost more)
        if not nest.transcendental or not _is_box(dom, inames, shape):
            return None
        if info.is_gpu and _trig_calls(ordered) > GPU_MAX_TRIG_CALLS:
            return None
        scalar = _Emitter(nest, 1)
        for insn in ordered:
            scalar.store(insn)
        size_c = _c_size(kernel, size_expr)
    except (_NotVectorizable, RecursionError):
        return None
    params = tuple(sorted(_size_params(size_expr)))
    size: int | str
    if isinstance(size_expr, (int, np.integer)):
        size = int(size_expr)
        if size == 0:
            return None
        group_size = max(1, min(info.group_size, -(-size // lanes)))
    else:
        size = str(size_expr)
        group_size = info.group_size
        try:  # an affine number of elements (not n*m)
            _vector_domain(params, "o", "i", group_size, lanes, size)
        except isl.Error:
            return None
    index_c = _INDEX_TYPES[kernel.index_dtype.numpy_dtype]
    body_v = "\n".join("  " + line for line in vector.lines)
    body_s = "\n".join("    " + line for line in scalar.lines)
    if isinstance(size, int) and size % lanes == 0:
        code = f"{{\n{body_v}\n}}"
    else:
        code = (f"if ({_BASE} + {lanes} <= {size_c})\n{{\n{body_v}\n}}\n"
                f"else\n{{\n  for ({index_c} {_ELEMENT} = {_BASE}; "
                f"{_ELEMENT} < {size_c}; ++{_ELEMENT})\n  {{\n{body_s}\n  }}\n}}")
    return VectorNest(
        insn_ids=tuple(insn.id for insn in insns), inames=tuple(inames),
        size=size, params=params, lanes=lanes, group_size=group_size,
        code=code, read_variables=frozenset(nest.read) | frozenset(params),
        written=tuple(nest.written), private=frozenset(private))


def _vector_domain(params: Sequence[str], outer: str, inner: str,
                   group_size: int, lanes: int, size: int | str
                   ) -> isl.BasicSet:
    """The domain of the work-items ``group_size*outer + inner`` of a
    vector nest of *size* elements, *lanes* per work-item."""
    g, w = group_size, lanes
    return isl.BasicSet(
        f"[{', '.join(params)}] -> {{ [{outer}, {inner}] : "
        f"0 <= {inner} < {g} and 0 <= {g}*{outer} + {inner} and "
        f"{w}*({g}*{outer} + {inner}) < {size} }}")


def _in_order(insns: Sequence[lp.Assignment]) -> list[lp.Assignment]:
    """*insns* in an order where each comes after those of *insns* it
    depends on."""
    ids = {insn.id for insn in insns}
    done: set[str] = set()
    result: list[lp.Assignment] = []
    pending = list(insns)
    while pending:
        ready = [insn for insn in pending
                 if (insn.depends_on & ids) <= done]
        if not ready:
            raise _NotVectorizable("cyclic dependencies")
        result.extend(ready)
        done.update(insn.id for insn in ready)
        pending = [insn for insn in pending if insn.id not in done]
    return result


def apply_vector_nests(kernel: lp.LoopKernel, plans: Sequence[VectorNest]
                       ) -> tuple[lp.LoopKernel, dict[str, str]]:
    """*kernel* with the instructions of each of *plans* replaced by one
    :class:`loopy.CInstruction` (its loops by a flat pair of inames on
    ``g.0`` and ``l.0``), and the id of the new instruction of each plan,
    by the id of the plan's first instruction."""
    if not plans:
        return kernel, {}
    vng = kernel.get_var_name_generator()
    ids = kernel.get_instruction_id_generator()
    domains = list(kernel.domains)
    inames = dict(kernel.inames)
    temporaries = dict(kernel.temporary_variables)
    new_id: dict[str, str] = {}
    replacement: dict[str, lp.CInstruction] = {}
    for plan in plans:
        home = kernel.get_home_domain_index(plan.inames[0])
        base = plan.inames[-1] + ("_flat" if len(plan.inames) > 1 else "")
        outer, inner = vng(f"{base}_vouter"), vng(f"{base}_vinner")
        g, w = plan.group_size, plan.lanes
        domains[home] = _vector_domain(plan.params, outer, inner, g, w,
                                       plan.size)
        for name in plan.inames:
            inames.pop(name, None)
        inames[outer] = Iname(outer, frozenset([GroupInameTag(0)]))
        inames[inner] = Iname(inner, frozenset([LocalInameTag(0)]))
        for name in plan.private:
            temporaries.pop(name, None)
        by_id = kernel.id_to_insn
        members = set(plan.insn_ids)
        deps = frozenset(d for i in plan.insn_ids
                         for d in by_id[i].depends_on if d not in members)
        cid = ids(f"_pt_vector_{plan.insn_ids[0]}")
        flat = prim.Sum((prim.Product((g, prim.Variable(outer))),
                         prim.Variable(inner)))
        # (loopy declares the base in the scope of the kernel's body where
        # the nest needs no guard: several nests of one kernel need names
        # of their own)
        base_name = vng(_BASE)
        code = plan.code if base_name == _BASE else \
            _BASE_WORD.sub(base_name, plan.code)
        replacement[plan.insn_ids[0]] = lp.CInstruction(
            [(base_name, prim.Product((w, flat)))], code,
            read_variables=plan.read_variables,
            assignees=tuple(prim.Variable(n) for n in plan.written),
            id=cid, depends_on=deps,
            within_inames=frozenset({outer, inner}))
        for i in plan.insn_ids:
            new_id[i] = cid
    new_insns = []
    for insn in kernel.instructions:
        c = replacement.get(insn.id)
        if c is not None:
            insn = c
        elif insn.id in new_id:
            continue
        if insn.depends_on & new_id.keys():
            insn = insn.copy(depends_on=frozenset(
                new_id.get(d, d) for d in insn.depends_on))
        new_insns.append(insn)
    kernel = kernel.copy(
        domains=domains, instructions=new_insns, inames=inames,
        temporary_variables=temporaries,
        silenced_warnings=kernel.silenced_warnings | {SILENCED_WRITE_RACES})
    return kernel, {plan.insn_ids[0]: new_id[plan.insn_ids[0]]
                    for plan in plans}


# (the constants above as written, for the program store's keys)
record_defaults(__name__, globals())
