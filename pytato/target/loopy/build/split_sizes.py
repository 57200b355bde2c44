"""Sizes of the split path's sub-units hoisted into value arguments.

In the canonical form of a sub-unit (:mod:`pytato.target.loopy.build.split`),
the constants that only size it (the extents of its loops over work
groups, the guards of a loop nest fused with longer ones, the outermost
size of its global arrays) become value arguments named after their
values (:func:`hoisted_name`), which the host side passes at launch, so
that one operator applied to element groups of other sizes is one
sub-unit. This module finds and rewrites them (:func:`_hoist`), and holds
the readers of kernel parts shared with the split (names of instructions,
arguments by name, unambiguous expression texts).

.. autodata:: HOISTED_PREFIX
.. autofunction:: hoisted_name
.. autofunction:: hoisted_value
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pymbolic.primitives as prim
from pymbolic.mapper.coefficient import CoefficientCollector

from pytato.lazy_imports import lazy_module


if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    import islpy as isl
    import loopy as lp
    import loopy.kernel.data as _kdata
    import loopy.kernel.instruction as _kinsn
    import loopy.symbolic as _symbolic
else:
    # (imported at first use: see pytato.lazy_imports)
    isl = lazy_module("islpy")
    _kdata = lazy_module("loopy.kernel.data")
    _kinsn = lazy_module("loopy.kernel.instruction")
    _symbolic = lazy_module("loopy.symbolic")


__all__ = ["HOISTED_PREFIX", "hoisted_name", "hoisted_value"]


# {{{ reading kernels

_NAMES: dict[int, tuple[Any, frozenset[str]]] = {}


def _insn_names(insn: Any) -> frozenset[str]:
    """The variables and inames *insn* names (memoized by identity while
    a kernel is split: :func:`split_kernel` clears the memo)."""
    entry = _NAMES.get(id(insn))
    if entry is None or entry[0] is not insn:
        entry = _NAMES[id(insn)] = (insn, _names_of(insn))
    return entry[1]


def _names_of(insn: Any) -> frozenset[str]:
    # (a walk by a stack over an assignment's expressions where it can,
    # a third of loopy's dependency analysis; else loopy's)
    from pytato.target.loopy.loopy_walk import expression_names
    if type(insn) is _kinsn.Assignment:
        names = expression_names((insn.assignee, insn.expression,
                                  *insn.predicates))
        if names is not None:
            return frozenset(names | insn.within_inames)
    return frozenset(insn.dependency_names() | insn.within_inames
                     | insn.reduction_inames())


_ARG_DICTS: dict[int, tuple[Any, dict[str, Any]]] = {}


def _arg_dict(knl: lp.LoopKernel) -> dict[str, Any]:
    """The arguments of *knl* by name (one dictionary per kernel: loopy's
    ``arg_dict`` hashes the kernel)."""
    entry = _ARG_DICTS.get(id(knl))
    if entry is None or entry[0] is not knl:
        _ARG_DICTS.clear()
        entry = _ARG_DICTS[id(knl)] = (knl, {a.name: a for a in knl.args})
    return entry[1]


_STRINGIFY: list[Any] = []


def _expr_text(value: Any) -> str:
    """An unambiguous text of *value* (expressions with typed constants;
    :func:`repr` abbreviates deep expressions)."""
    if isinstance(value, (tuple, list)):
        return "(" + ",".join(_expr_text(v) for v in value) + ")"
    if isinstance(value, (frozenset, set)):
        return "{" + ",".join(sorted(_expr_text(v) for v in value)) + "}"
    if isinstance(value, (prim.ExpressionNode, np.generic, int, float,
                          complex)) and not isinstance(value, bool):
        if not _STRINGIFY:
            class _Typed(_symbolic.StringifyMapper):
                def map_constant(self, expr: Any, *args: Any) -> str:
                    return f"{type(expr).__name__}({expr!r})"

            _STRINGIFY.append(_Typed())
        return str(_STRINGIFY[0](value))
    return repr(value)

# }}}


# {{{ sizes hoisted into value arguments

#: Prefix of the value arguments holding the constants hoisted out of a
#: sub-unit (see :func:`hoisted_value`): followed by the value.
HOISTED_PREFIX = "_pt_hoisted_"


def hoisted_name(value: int) -> str:
    """The name of the value argument holding the hoisted constant
    *value* (a positive integer)."""
    return f"{HOISTED_PREFIX}{value}"


def hoisted_value(name: str) -> int | None:
    """The value of the hoisted constant *name* (see :func:`hoisted_name`),
    or None if *name* is not one."""
    if name.startswith(HOISTED_PREFIX):
        digits = name[len(HOISTED_PREFIX):]
        if digits.isdigit():
            return int(digits)
    return None


_PARALLEL: dict[int, tuple[Any, frozenset[str], frozenset[str]]] = {}


def _parallel_inames(knl: lp.LoopKernel) -> tuple[frozenset[str],
                                                   frozenset[str]]:
    """The inames of *knl* mapped to work groups, and to work items of a
    work group (one pair per kernel)."""
    entry = _PARALLEL.get(id(knl))
    if entry is None or entry[0] is not knl:
        _PARALLEL.clear()
        group = frozenset(n for n, iname in knl.inames.items()
                          if any(isinstance(t, _kdata.GroupInameTag)
                                 for t in iname.tags))
        local = frozenset(n for n, iname in knl.inames.items()
                          if any(isinstance(t, _kdata.LocalInameTag)
                                 for t in iname.tags))
        entry = _PARALLEL[id(knl)] = (knl, group, local)
    return entry[1], entry[2]


def _int(value: Any) -> int | None:
    if isinstance(value, (int, np.integer)) and not isinstance(
            value, (bool, np.bool_)):
        return int(value)
    return None


def _affine(expr: Any, inames: frozenset[str]) -> dict[str, int] | None:
    """The integer coefficients of *expr* if it is a linear combination
    (without constant term) of *inames*, else None."""
    try:
        coefs = CoefficientCollector()(expr)
    except (RuntimeError, AssertionError, ValueError, TypeError):
        return None
    result = {}
    for var, coef in coefs.items():
        c = _int(coef)
        if (c is None or not isinstance(var, prim.Variable)
                or var.name not in inames):
            return None
        result[var.name] = c
    return result or None


def _size_bound(pred: Any, group: frozenset[str], parallel: frozenset[str]
                ) -> tuple[dict[str, int], int] | None:
    """``(coefficients, extent)`` if the predicate *pred* is ``e < extent``
    or ``e <= extent - 1`` with ``e`` a linear combination of the inames
    of *parallel* naming one of *group*, the extent a positive integer."""
    if not isinstance(pred, prim.Comparison) or pred.operator not in (
            "<", "<="):
        return None
    rhs = _int(pred.right)
    if rhs is None:
        return None
    extent = rhs if pred.operator == "<" else rhs + 1
    coefs = _affine(pred.left, parallel)
    if extent < 1 or coefs is None or not set(coefs) & group:
        return None
    return coefs, extent


@dataclass
class _Hoisted:
    """A sub-unit's domains, instructions and array shapes with its sizes
    hoisted into value arguments (the names of :attr:`params`)."""

    domains: list[Any]
    insns: list[Any]
    shapes: dict[str, tuple[Any, ...]]
    params: set[str]


def _constraints(dom: Any) -> list[tuple[bool, dict[str, int], int]]:
    result = []
    for c in dom.get_constraints():
        coefs = {n: int(v.to_python())
                 for n, v in c.get_coefficients_by_name().items()}
        const = coefs.pop(1, 0)  # type: ignore[call-overload]
        result.append((c.is_equality(), coefs, const))
    return result


def _joint_bound(cons: list[tuple[bool, dict[str, int], int]],
                 group: frozenset[str], local: frozenset[str]
                 ) -> list[tuple[bool, dict[str, int], int]]:
    """The constraints *cons* of a domain, with the bound ``g <= K - 1``
    of a box ``0 <= g <= K - 1, 0 <= l <= W - 1`` (``g`` a work-group
    iname, ``l`` a work-item one: a loop of ``K W`` iterations split into
    work groups, as loopy leaves it when ``W`` divides the extent) written
    ``W g + l <= K W - 1`` (the same set), the form loopy gives the other
    extents."""
    if len(cons) != 4 or any(eq for eq, _, _ in cons):
        return cons
    names = {n for _, c, _ in cons for n in c}
    if len(names) != 2 or len(names & group) != 1 or len(names & local) != 1:
        return cons
    (g,) = names & group
    (loc,) = names & local
    forms = {(tuple(sorted(c.items())), k): i for i, (_, c, k) in enumerate(cons)}
    upper = [(i, k) for (c, k), i in forms.items() if c == ((g, -1),)]
    width = [k + 1 for (c, k) in forms if c == ((loc, -1),)]
    if (((((g, 1),), 0) not in forms) or (((loc, 1),), 0) not in forms
            or len(upper) != 1 or len(width) != 1):
        return cons
    (i, k), (w,) = upper[0], width
    result = list(cons)
    result[i] = (False, {g: -w, loc: -1}, (k + 1) * w - 1)
    return result


def _hoist(knl: lp.LoopKernel, insns: Sequence[Any],
           domains: Sequence[Any], arrays: Iterable[str]) -> _Hoisted:
    """The sizes of the sub-unit of *knl* with *insns*, *domains* and the
    global arrays *arrays* (arguments and global temporaries) hoisted into
    value arguments where that is free (see the module documentation):

    * a box ``0 <= g <= K - 1, 0 <= l <= W - 1`` of a work-group iname
      ``g`` and a work-item iname ``l`` is written with ``W g + l <= K W -
      1`` (:func:`_joint_bound`), as loopy writes the extents that ``W``
      does not divide;
    * a predicate ``e < N`` of every instruction in a domain of work-group
      inames that writes more than private temporaries (the guard of a
      loop nest fused with longer ones, see
      :mod:`pytato.target.loopy.schedule.outputs`) tightens the domain's
      bound ``e <= M`` to ``e <= min(M, N - 1)`` and is dropped (the
      other instructions there write private temporaries only; ``e``
      names only work-group and work-item inames, so a work item runs
      all of its iterations or none; not in sub-units with barriers or
      local temporaries);
    * the bound ``e <= N - 1`` of a linear combination ``e`` with positive
      coefficients of work-group and work-item inames (naming one of the
      first) becomes ``e <= P - 1`` and a remaining predicate ``e <
      N`` becomes ``e < P``, with ``P`` the value argument
      :func:`hoisted_name` of ``N`` (``N >= 1``);
    * the size of the outermost axis of a global array with constant
      strides (the one that no stride depends on) becomes ``P``.

    Constants of sequential loops, work-group sizes, strides and index
    expressions stay.
    """
    group, local = _parallel_inames(knl)
    parallel = group | local
    # (values the index type holds)
    limit = int(np.iinfo(knl.index_dtype.numpy_dtype).max)
    temps = knl.temporary_variables
    insns = list(insns)
    params: set[str] = set()
    if not group:
        return _Hoisted(list(domains), insns, {}, params)

    def private_only(insn: Any) -> bool:
        return all(n in temps and temps[n].address_space == _kdata.AddressSpace.PRIVATE
                   for n in insn.assignee_var_names())

    # domains with work-group inames: tightened by the predicates all of
    # their writing instructions share, sizes hoisted
    unit_names = {n for insn in insns for n in _insn_names(insn)}
    may_tighten = not any(
        isinstance(insn, _kinsn.BarrierInstruction) for insn in insns) and not any(
        temps[n].address_space == _kdata.AddressSpace.LOCAL
        for n in unit_names if n in temps)
    new_domains = []
    for dom in domains:
        dnames = frozenset(dom.get_var_names(isl.dim_type.set))
        if not dnames & group:
            new_domains.append(dom)
            continue
        cons = _joint_bound(_constraints(dom), group, local)
        if may_tighten:
            inside = [i for i in insns if i.within_inames & dnames]
            writers = [i for i in inside if not private_only(i)]
            common = (frozenset.intersection(*(frozenset(i.predicates)
                                               for i in writers))
                      if writers else frozenset())
            dropped = set()
            for pred in sorted(common, key=_expr_text):
                bound = _size_bound(pred, group, parallel & dnames)
                if bound is None:
                    continue
                coefs, extent = bound
                neg = {n: -v for n, v in coefs.items()}
                for k, (eq, ccoefs, const) in enumerate(cons):
                    if not eq and ccoefs == neg:
                        cons[k] = (eq, ccoefs, min(const, extent - 1))
                        dropped.add(pred)
                        break
            if dropped:
                insns = [i.copy(predicates=frozenset(i.predicates) - dropped)
                         if i.within_inames & dnames
                         and set(i.predicates) & dropped else i
                         for i in insns]
        space = dom.get_space()
        hoisted_cons = []
        for eq, ccoefs, const in cons:
            if (not eq and 0 <= const < limit and ccoefs
                    and set(ccoefs) <= parallel and set(ccoefs) & group
                    and all(v < 0 for v in ccoefs.values())):
                name = hoisted_name(const + 1)
                params.add(name)
                ccoefs = {**ccoefs, name: 1}
                const = -1
            hoisted_cons.append((eq, ccoefs, const))
        # a canonical order of the constraints and of the new parameters
        # (not that of the hoisted values)
        hoisted_cons.sort(key=lambda c: (c[0], sorted(
            ("" if hoisted_value(n) is not None else n, v)
            for n, v in c[1].items()), c[2]))
        old_params = set(dom.get_var_names(isl.dim_type.param)) | dnames
        new_params: list[str] = []
        for _, ccoefs, _ in hoisted_cons:
            new_params.extend(n for n in sorted(ccoefs)
                              if n not in old_params and n not in new_params)
        if new_params:
            nparam = space.dim(isl.dim_type.param)
            space = space.add_dims(isl.dim_type.param, len(new_params))
            for k, name in enumerate(new_params):
                space = space.set_dim_name(isl.dim_type.param, nparam + k, name)
        new_dom = isl.BasicSet.universe(space)
        for eq, ccoefs, const in hoisted_cons:
            make = (isl.Constraint.eq_from_names if eq
                    else isl.Constraint.ineq_from_names)
            new_dom = new_dom.add_constraint(make(space, {**ccoefs, 1: const}))
        new_domains.append(new_dom)

    # the remaining predicates bounding work-group inames
    def hoist_pred(pred: Any) -> Any:
        bound = _size_bound(pred, group, parallel)
        if bound is None or pred.operator != "<" or bound[1] > limit:
            return pred
        name = hoisted_name(bound[1])
        params.add(name)
        return prim.Comparison(pred.left, "<", prim.Variable(name))

    insns = [i.copy(predicates=frozenset(hoist_pred(p) for p in i.predicates))
             if any(_size_bound(p, group, parallel) for p in i.predicates)
             else i for i in insns]

    # the outermost axes of the global arrays
    shapes: dict[str, tuple[Any, ...]] = {}
    args = _arg_dict(knl)
    for name in arrays:
        var = args.get(name)
        if var is None:
            var = temps[name]
        shape = var.shape
        if not isinstance(shape, tuple) or not shape \
                or var.dim_tags is None:
            continue
        sizes = [_int(s) for s in shape]
        strides = [_int(getattr(t, "stride", None)) for t in var.dim_tags]
        if any(s is None for s in sizes) or any(s is None for s in strides) \
                or len(strides) != len(sizes):
            continue
        outer = [k for k in range(len(sizes)) if all(
            strides[k] >= strides[j] * sizes[j]  # type: ignore[operator]
            for j in range(len(sizes)) if j != k)]
        if len(outer) != 1 or not (
                1 <= sizes[outer[0]] <= limit):  # type: ignore[operator]
            continue
        k = outer[0]
        pname = hoisted_name(sizes[k])  # type: ignore[arg-type]
        params.add(pname)
        shapes[name] = (*shape[:k], prim.Variable(pname), *shape[k + 1:])
    return _Hoisted(new_domains, insns, shapes, params)

# }}}
