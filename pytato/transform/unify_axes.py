"""Axis-tag propagation: equal axes across the graph share their tags.

An axis of a node and an axis of one of its children are *equal* when the
node reads the child along that axis index for index. The edges used:

* :class:`~pytato.array.IndexLambda`: a binding subscripted by an output
  index ``_i`` at position ``j`` (axis ``j`` of the binding equals output
  axis ``i``); binding axes subscripted by the same reduction index are
  equal to each other;
* :class:`~pytato.array.Einsum`: operand axes with the same descriptor are
  equal (to each other, and to the output axis for element-wise
  descriptors), except operand axes of length 1 that broadcast;
* :class:`~pytato.array.Stack`, :class:`~pytato.array.Concatenate`: the
  non-stacked / non-concatenated axes;
* :class:`~pytato.array.AxisPermutation`: permuted axes;
  :class:`~pytato.array.Roll` and send holders (their passthrough data):
  all axes;
* :class:`~pytato.array.Reshape`: axes that the reshape keeps (same length
  and same product of the faster-varying axes);
* indexing: axes taken by full slices, and index-array axes to the output
  axes they broadcast to.

Equal axes form classes (a union-find over ``(node, axis)`` pairs, built in
one pass over the graph); every axis receives the tags of its class. The
pass is linear in the size of the graph (up to the inverse Ackermann
factor of union-find).

Node types without a ``map_<node>`` method in
:class:`AxisEquivalenceCollector` contribute no edges (inputs do not, and
calls can add a method relating call bindings to function parameters).

.. autoclass:: AxisEquivalenceCollector
.. autoclass:: AxesTagsEquationCollector
.. autoclass:: AxisIgnoredForPropagationTag
.. autofunction:: unify_axes_tags
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pymbolic.primitives as prim
from constantdict import constantdict
from pytools.tag import Tag

from pytato.array.base import (
    Array,
    Axis,
    ReductionDescriptor,
    ShapeComponent,
    _flatten,
    check_unique_tags,
    flatten_for_pickle,
    topological_order,
    unflatten,
)
from pytato.array.lambdas import (
    Einsum,
    EinsumElementwiseAxis,
    EinsumReductionAxis,
    IndexLambda,
)
from pytato.array.remapping import (
    AdvancedIndexInContiguousAxes,
    AdvancedIndexInNoncontiguousAxes,
    AxisPermutation,
    BasicIndex,
    Concatenate,
    IndexBase,
    NormalizedSlice,
    Reshape,
    Roll,
    Stack,
)
from pytato.array.results import DictOfNamedArrays
from pytato.array.shape import (
    are_shape_components_equal,
    shape_component_to_expr,
)
from pytato.diagnostic import (
    InvalidArgumentTypeError,
    NonAffineShapeError,
    NonUniqueTagError,
)
from pytato.scalar_expr import WalkMapper, distribute_arithmetic
from pytato.transform._identity_cache import IdentityCachedCopyMapper
from pytato.transform.mappers import ArrayOrNames, ArrayOrNamesOrDictTc, Mapper


if TYPE_CHECKING:
    from pymbolic.typing import ArithmeticExpression

    from pytato.array.remapping import IndexExpr
    from pytato.distributed.nodes import DistributedSendRefHolder
    from pytato.function import FunctionDefinition
    from pytato.scalar_expr import ScalarExpression


__all__ = ["AxesTagsEquationCollector", "AxisEquivalenceCollector",
           "AxisIgnoredForPropagationTag",
           "unify_axes_tags"]


class BindingSubscriptsCollector(WalkMapper[[]]):
    """Called on a scalar expression, returns, for each variable that is
    subscripted in it, the set of index tuples it is subscripted with
    (used to relate the axes of an :class:`~pytato.array.IndexLambda`'s
    bindings to its indices)."""

    def __init__(self) -> None:
        super().__init__()
        self._result: dict[str, set[tuple[object, ...]]] = {}

    rec = WalkMapper.__call__

    def __call__(self, expr: Any, *args: Any, **kwargs: Any  # type: ignore[override]
                 ) -> dict[str, set[tuple[Any, ...]]]:
        self._result = {}
        WalkMapper.__call__(self, expr)
        return self._result

    def map_subscript(self, expr: prim.Subscript, *args: object) -> None:
        if isinstance(expr.aggregate, prim.Variable):
            self._result.setdefault(expr.aggregate.name, set()).add(
                expr.index_tuple)
        for i in expr.index_tuple:
            self.rec(i)

    def map_foreign(self, expr: object, *args: object) -> None:
        pass

    def map_constant(self, expr: object, *args: object) -> None:
        pass


# {{{ union-find over (node, axis) slots

class _UnionFind:
    def __init__(self) -> None:
        self.parent: list[int] = []

    def add(self, n: int) -> int:
        start = len(self.parent)
        self.parent.extend(range(start, start + n))
        return start

    def find(self, i: int) -> int:
        parent = self.parent
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(self, i: int, j: int) -> None:
        ri, rj = self.find(i), self.find(j)
        if ri != rj:
            if ri < rj:
                ri, rj = rj, ri
            self.parent[ri] = rj

# }}}


def _eq(a: ShapeComponent, b: ShapeComponent) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    try:
        return are_shape_components_equal(a, b)
    except NonAffineShapeError:
        return False


class _SubscriptCollector(WalkMapper[[]]):
    """Collects ``(binding name, index tuple)`` of subscripted bindings."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = frozenset(names)
        self.accesses: list[tuple[str, tuple[ScalarExpression, ...]]] = []

    def map_subscript(self, expr: prim.Subscript, *args: object) -> None:
        agg = expr.aggregate
        if isinstance(agg, prim.Variable) and agg.name in self.names:
            self.accesses.append((agg.name, expr.index_tuple))
        else:
            self.rec(agg)
        for i in expr.index_tuple:
            self.rec(i)

    def map_foreign(self, expr: object, *args: object) -> None:
        pass

    def map_constant(self, expr: object, *args: object) -> None:
        pass


def _index_name(i: object) -> str | None:
    return i.name if isinstance(i, prim.Variable) else None


class AxisEquivalenceCollector(Mapper[None, None, []]):
    """Records which axes of a node equal axes of its children. Each
    ``map_<node>(expr)`` calls :meth:`unify` for the equal axes it knows
    of; the default for other node types records nothing."""

    def __init__(self, unify: Callable[[Array, int, Array, int], None],
                 skip_node_types: tuple[type, ...] = ()) -> None:
        self.unify = unify
        self.skip_node_types = skip_node_types

    def rec(self, expr: ArrayOrNames, *args: object, **kwargs: object) -> None:
        if isinstance(expr, self.skip_node_types):
            return None
        return super().rec(expr, *args, **kwargs)

    def map_array(self, expr: Array) -> None:
        pass

    def map_dict_of_named_arrays(self, expr: DictOfNamedArrays) -> None:
        pass

    def _unify_checked(self, a: Array, i: int, b: Array, j: int) -> None:
        if _eq(a.shape[i], b.shape[j]):
            self.unify(a, i, b, j)

    def map_index_lambda(self, expr: IndexLambda) -> None:
        collector = _SubscriptCollector(expr.bindings)
        collector(expr.expr)
        out_index = {f"_{i}": i for i in range(expr.ndim)}
        redn_anchor: dict[str, tuple[Array, int]] = {}
        for name, idx in collector.accesses:
            b = expr.bindings[name]
            if len(idx) != b.ndim:
                continue
            for j, i in enumerate(idx):
                iname = _index_name(i)
                if iname is None:
                    continue
                if iname in out_index:
                    self._unify_checked(b, j, expr, out_index[iname])
                elif iname in expr.var_to_reduction_descr:
                    anchor = redn_anchor.setdefault(iname, (b, j))
                    self._unify_checked(b, j, *anchor)

    def map_einsum(self, expr: Einsum) -> None:
        redn_anchor: dict[EinsumReductionAxis, tuple[Array, int]] = {}
        for acc, arg in zip(expr.access_descriptors, expr.args, strict=True):
            for j, d in enumerate(acc):
                if isinstance(d, EinsumElementwiseAxis):
                    self._unify_checked(arg, j, expr, d.dim)
                elif (isinstance(d, EinsumReductionAxis)
                        and _eq(arg.shape[j], expr.reduction_axis_length(d))):
                    anchor = redn_anchor.setdefault(d, (arg, j))
                    self.unify(arg, j, *anchor)

    def map_stack(self, expr: Stack) -> None:
        for a in expr.arrays:
            for j in range(a.ndim):
                self.unify(a, j, expr, j if j < expr.axis else j + 1)

    def map_concatenate(self, expr: Concatenate) -> None:
        for a in expr.arrays:
            for j in range(a.ndim):
                if j != expr.axis:
                    self.unify(a, j, expr, j)

    def map_roll(self, expr: Roll) -> None:
        for j in range(expr.ndim):
            self.unify(expr.array, j, expr, j)

    def map_axis_permutation(self, expr: AxisPermutation) -> None:
        for i, j in enumerate(expr.axis_permutation):
            self.unify(expr.array, j, expr, i)

    def map_distributed_send_ref_holder(self, expr: DistributedSendRefHolder
                                        ) -> None:
        for j in range(expr.ndim):
            self.unify(expr.passthrough_data, j, expr, j)

    def map_reshape(self, expr: Reshape) -> None:
        for j, i in _kept_reshape_axes(expr.array.shape, expr.shape,
                                       expr.order):
            self.unify(expr.array, j, expr, i)

    def _slice_axes(self, expr: IndexBase, indices: Sequence[IndexExpr],
                    positions: Iterable[tuple[int, int]]) -> None:
        for j, i in positions:
            idx = indices[j]
            assert isinstance(idx, NormalizedSlice)
            if _is_full_slice(idx, expr.array.shape[j]):
                self.unify(expr.array, j, expr, i)

    def _index_array_axes(self, expr: Array, indices: Sequence[IndexExpr],
                          first_out: int, nadv: int) -> None:
        for idx in indices:
            if not isinstance(idx, Array):
                continue
            off = first_out + nadv - idx.ndim
            for j in range(idx.ndim):
                self._unify_checked(idx, j, expr, off + j)

    def map_basic_index(self, expr: BasicIndex) -> None:
        positions = []
        out = 0
        for j, idx in enumerate(expr.indices):
            if isinstance(idx, NormalizedSlice):
                positions.append((j, out))
                out += 1
        self._slice_axes(expr, expr.indices, positions)

    def map_contiguous_advanced_index(
            self, expr: AdvancedIndexInContiguousAxes) -> None:
        adv = [j for j, idx in enumerate(expr.indices)
               if not isinstance(idx, NormalizedSlice)]
        first, last = adv[0], adv[-1]
        nadv = expr.ndim - (len(expr.indices) - 1 - last) - first
        positions = [(j, j) for j in range(first)]
        positions += [(j, j - last - 1 + first + nadv)
                      for j in range(last + 1, len(expr.indices))]
        self._slice_axes(expr, expr.indices, positions)
        self._index_array_axes(expr, expr.indices, first, nadv)

    def map_non_contiguous_advanced_index(
            self, expr: AdvancedIndexInNoncontiguousAxes) -> None:
        slices = [j for j, idx in enumerate(expr.indices)
                  if isinstance(idx, NormalizedSlice)]
        nadv = expr.ndim - len(slices)
        self._slice_axes(expr, expr.indices,
                         [(j, nadv + k) for k, j in enumerate(slices)])
        self._index_array_axes(expr, expr.indices, 0, nadv)


def _is_full_slice(idx: NormalizedSlice, length: ShapeComponent) -> bool:
    if idx.step == 1:
        return _eq(idx.start, 0) and _eq(idx.stop, length)
    if idx.step == -1 and isinstance(length, int):
        return idx.start == length - 1 and idx.stop == -1
    return False


# {{{ reshape: which axes survive

def _expr(c: ShapeComponent) -> ArithmeticExpression:
    return shape_component_to_expr(c)


def _same_size(a: ArithmeticExpression, b: ArithmeticExpression) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return bool(distribute_arithmetic(a - b) == 0)


def _faster_products(shape: Sequence[ShapeComponent], order: str
                     ) -> list[ArithmeticExpression]:
    """For each axis, the product of the lengths of the axes varying faster
    than it (those after it in C order, before it in F order)."""
    exprs = [_expr(c) for c in shape]
    n = len(exprs)
    result: list[ArithmeticExpression] = [1] * n
    acc: ArithmeticExpression = 1
    axes = range(n - 1, -1, -1) if order == "C" else range(n)
    for k in axes:
        result[k] = acc
        acc = acc * exprs[k]
    return result


def _is_unit(e: object) -> bool:
    return isinstance(e, int) and e == 1


def _kept_reshape_axes(old: Sequence[ShapeComponent],
                       new: Sequence[ShapeComponent],
                       order: str) -> list[tuple[int, int]]:
    """Pairs (old axis, new axis) along which a reshape is the identity: the
    axes have equal lengths and equal products of faster-varying axes."""
    try:
        old_p = _faster_products(old, order)
        new_p = _faster_products(new, order)
        old_e = [_expr(c) for c in old]
        new_e = [_expr(c) for c in new]
    except NonAffineShapeError:
        return []
    pairs = []
    for j in range(len(old)):
        if _is_unit(old_e[j]):
            continue
        for k in range(len(new)):
            if (not _is_unit(new_e[k]) and _same_size(new_e[k], old_e[j])
                    and _same_size(new_p[k], old_p[j])):
                pairs.append((j, k))
                break
    return pairs

# }}}


def _reduction_axes(n: Array) -> tuple[
        str, dict[EinsumReductionAxis | str, list[tuple[Array, int]]]] | None:
    """The field holding *n*'s reduction descriptors, and for each reduction
    the child axes it runs over."""
    if isinstance(n, Einsum) and n.redn_axis_to_redn_descr:
        axes_of: dict[EinsumReductionAxis | str, list[tuple[Array, int]]] = {}
        for acc, arg in zip(n.access_descriptors, n.args, strict=True):
            for j, d in enumerate(acc):
                if isinstance(d, EinsumReductionAxis):
                    axes_of.setdefault(d, []).append((arg, j))
        return "redn_axis_to_redn_descr", axes_of
    if isinstance(n, IndexLambda) and n.var_to_reduction_descr:
        subscripts = BindingSubscriptsCollector()(n.expr)
        axes_of = {}
        for name, idx_tuples in subscripts.items():
            b = n.bindings.get(name)
            if b is None:
                continue
            for idx in idx_tuples:
                for j, i in enumerate(idx):
                    r = _index_name(i)
                    if (r is not None and r in n.var_to_reduction_descr
                            and j < b.ndim):
                        axes_of.setdefault(r, []).append((b, j))
        return "var_to_reduction_descr", axes_of
    return None


class _AxesRetagger(IdentityCachedCopyMapper):
    def __init__(self, new_axes: dict[int, tuple[Axis, ...]],
                 new_redns: dict[int, tuple[
                     str, Mapping[EinsumReductionAxis | str, ReductionDescriptor]]]
                 | None = None) -> None:
        super().__init__()
        self.new_axes = new_axes
        self.new_redns = new_redns or {}

    def clone_for_callee(self, function: FunctionDefinition) -> _AxesRetagger:
        # the bodies of called functions are scopes of their own, whose
        # nodes the caller's analysis does not see: kept as they are
        return _AxesRetagger({}, {})

    def map_array(self, expr: Array) -> Array:
        kids = expr._pt_kids
        new_kids = tuple(self.rec(k) for k in kids)
        axes = self.new_axes.get(id(expr), expr.axes)
        redn = self.new_redns.get(id(expr))
        if axes is expr.axes and redn is None and all(
                a is b for a, b in zip(kids, new_kids, strict=True)):
            return expr
        names, skel = flatten_for_pickle(expr)
        if axes is not expr.axes:
            skel = tuple(axes if n == "axes" else s
                         for n, s in zip(names, skel, strict=True))
        if redn is not None:
            field, descrs = redn
            flat = _flatten(descrs, [])
            skel = tuple(flat if n == field else s
                         for n, s in zip(names, skel, strict=True))
        return unflatten(type(expr), names, skel, new_kids,
                         expr.non_equality_tags)


class AxisIgnoredForPropagationTag(Tag):
    """An axis tagged with this takes no part in :func:`unify_axes_tags`:
    tags are neither propagated to it nor from it."""


class AxesTagsEquationCollector(AxisEquivalenceCollector):
    """The collector of axis equalities used by :func:`unify_axes_tags`
    (upstream's name and constructor). Subclass it and pass the subclass as
    ``equations_collector_t`` to relate more axes: a ``map_<node>`` method
    calls :meth:`record_equation` (or ``self.unify(a, i, b, j)``) for each
    pair of equal axes.

    .. attribute:: tag_t

        The type of the axis tags being propagated.

    .. automethod:: get_var_for_axis
    .. automethod:: record_equation
    """

    def __init__(self, tag_t: type[Tag]) -> None:
        super().__init__(self._record_axes)
        self.tag_t = tag_t
        self.equations: list[tuple[str, str]] = []
        self._axis_vars: dict[tuple[int, int], str] = {}
        self._var_axes: dict[str, tuple[Array, int]] = {}
        self._unify_hook: Callable[[Array, int, Array, int], None] | None = None

    def get_var_for_axis(self, expr: Array, iaxis: int) -> str:
        """The name standing for axis *iaxis* of *expr* in equations."""
        key = (id(expr), iaxis)
        var = self._axis_vars.get(key)
        if var is None:
            var = f"_pt_axis_{len(self._axis_vars)}"
            self._axis_vars[key] = var
            self._var_axes[var] = (expr, iaxis)
        return var

    def record_equation(self, lhs: str, rhs: str) -> None:
        """Record that the axes named *lhs* and *rhs* (see
        :meth:`get_var_for_axis`) are equal."""
        self.equations.append((lhs, rhs))
        if self._unify_hook is not None:
            a, i = self._var_axes[lhs]
            b, j = self._var_axes[rhs]
            self._unify_hook(a, i, b, j)

    def _record_axes(self, a: Array, i: int, b: Array, j: int) -> None:
        if self._unify_hook is not None:
            self._unify_hook(a, i, b, j)
        else:
            self.equations.append((self.get_var_for_axis(a, i),
                                   self.get_var_for_axis(b, j)))


def unify_axes_tags(
        expr: ArrayOrNamesOrDictTc,
        *,
        tag_t_to_not_propagate: Iterable[type[Tag]] = frozenset(),
        node_t_to_not_propagate_through: Iterable[type[Array]] = frozenset(),
        tag_t: type[Tag] = Tag,
        equations_collector_t: type[AxesTagsEquationCollector] | None = None,
        unify_redn_descrs: bool = True,
        ) -> ArrayOrNamesOrDictTc:
    """Return *expr* (an array, a :class:`~pytato.DictOfNamedArrays` or a
    :class:`dict` of arrays) with the tags of each axis copied to all axes
    equal to it (see :mod:`pytato.transform.unify_axes`).

    :arg tag_t_to_not_propagate: axis tags of these types stay where they
        are.
    :arg node_t_to_not_propagate_through: node types whose axes are not
        related to their children's (e.g. ``{Reshape}``).
    :arg tag_t: only axis tags of this type are propagated (upstream's
        keyword; default: all).
    :arg equations_collector_t: a subclass of
        :class:`AxesTagsEquationCollector` (constructed with *tag_t*) to
        relate more axes than the default does.
    :arg unify_redn_descrs: also give the reduction descriptors of
        einsums and index lambdas the (propagated) tags of the child axes
        they reduce over.
    :raises NonUniqueTagError: if an equivalence class of axes would carry
        two different :class:`~pytools.tag.UniqueTag` instances of one type.
    """
    if isinstance(expr, dict):
        return dict(unify_axes_tags(
            DictOfNamedArrays(expr),
            tag_t_to_not_propagate=tag_t_to_not_propagate,
            node_t_to_not_propagate_through=node_t_to_not_propagate_through,
            tag_t=tag_t,
            equations_collector_t=equations_collector_t,
            unify_redn_descrs=unify_redn_descrs)._data)
    if not (isinstance(tag_t, type) and issubclass(tag_t, Tag)):
        raise InvalidArgumentTypeError(
            f"unify_axes_tags: 'tag_t' must be a subclass of "
            f"pytools.tag.Tag, got {tag_t!r}")
    if equations_collector_t is None:
        equations_collector_t = AxesTagsEquationCollector
    elif not (isinstance(equations_collector_t, type) and issubclass(
            equations_collector_t, AxesTagsEquationCollector)):
        raise InvalidArgumentTypeError(
            "unify_axes_tags: 'equations_collector_t' must be a subclass of "
            f"AxesTagsEquationCollector, got {equations_collector_t!r}")
    no_prop = tuple(tag_t_to_not_propagate)
    order = [n for n in topological_order([expr]) if isinstance(n, Array)]
    uf = _UnionFind()
    offset: dict[int, int] = {}
    for n in order:
        offset[id(n)] = uf.add(n.ndim)

    def unify(a: Array, i: int, b: Array, j: int) -> None:
        if (a.axes[i].tags_of_type(AxisIgnoredForPropagationTag)
                or b.axes[j].tags_of_type(AxisIgnoredForPropagationTag)):
            return
        uf.union(offset[id(a)] + i, offset[id(b)] + j)

    collector = equations_collector_t(tag_t)
    collector._unify_hook = unify
    collector.skip_node_types = tuple(node_t_to_not_propagate_through)
    for n in order:
        collector.rec(n)

    class_tags: dict[int, set[Tag]] = {}
    for n in order:
        base = offset[id(n)]
        for i, ax in enumerate(n.axes):
            ax_tags = [t for t in ax.tags
                       if isinstance(t, tag_t) and not isinstance(t, no_prop)]
            if ax_tags:
                class_tags.setdefault(uf.find(base + i), set()).update(ax_tags)
    if not class_tags:
        return expr
    frozen: dict[int, frozenset[Tag]] = {}
    for root, tags in class_tags.items():
        try:
            frozen[root] = check_unique_tags(frozenset(tags), "axis")
        except NonUniqueTagError as e:
            raise NonUniqueTagError(
                f"unify_axes_tags: equal axes carry conflicting tags: {e}"
            ) from None

    new_redns: dict[int, tuple[
        str, Mapping[EinsumReductionAxis | str, ReductionDescriptor]]] = {}
    if unify_redn_descrs:
        for n in order:
            found = _reduction_axes(n)
            if not found:
                continue
            field, axes_of = found
            descrs = getattr(n, field)
            new_d = {}
            changed = False
            for r, descr in descrs.items():
                extra: set[Tag] = set()
                for b, j in axes_of.get(r, ()):
                    extra.update(frozen.get(
                        uf.find(offset[id(b)] + j), frozenset()))
                if extra and not frozenset(extra) <= descr.tags:
                    descr = ReductionDescriptor(descr.tags | frozenset(extra))
                    changed = True
                new_d[r] = descr
            if changed:
                new_redns[id(n)] = (field, constantdict(new_d))

    new_axes: dict[int, tuple[Axis, ...]] = {}
    for n in order:
        base = offset[id(n)]
        axes = []
        changed = False
        for i, ax in enumerate(n.axes):
            more = frozen.get(uf.find(base + i))
            if more is not None and not more <= ax.tags:
                ax = Axis(ax.tags | more)
                changed = True
            axes.append(ax)
        if changed:
            new_axes[id(n)] = tuple(axes)
    return _AxesRetagger(new_axes, new_redns)(expr)
