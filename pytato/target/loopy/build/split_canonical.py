"""The canonical form of a sub-unit of a split kernel: the phases of a
kernel (the runs of instructions between global barriers), and the text,
with names renamed in order of appearance, that keys a sub-unit of
:mod:`pytato.target.loopy.build.split` (equal texts: equal device code).
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any

from pytato.lazy_imports import lazy_module
from pytato.target.loopy.build.split_sizes import (
    _arg_dict,
    _expr_text,
    hoisted_value,
)


if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    import loopy as lp
    import loopy.kernel.data as _kdata
    import loopy.kernel.instruction as _kinsn
else:
    # (imported at first use: see pytato.lazy_imports)
    _kdata = lazy_module("loopy.kernel.data")
    _kinsn = lazy_module("loopy.kernel.instruction")


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _is_global_barrier(insn: Any) -> bool:
    return (isinstance(insn, _kinsn.BarrierInstruction)
            and insn.synchronization_kind == "global")


def _phases(knl: lp.LoopKernel) -> dict[str, int]:
    """The phase of each instruction that is not a global barrier: the
    most global barriers on a dependency path ending in it."""
    by_id = knl.id_to_insn
    phase: dict[str, int] = {}
    # iterative depth-first walk (no recursion)
    for root in by_id:
        if root in phase:
            continue
        stack = [(root, False)]
        while stack:
            iid, done = stack.pop()
            if iid in phase:
                continue
            deps = [d for d in by_id[iid].depends_on if d in by_id]
            if not done:
                stack.append((iid, True))
                stack.extend((d, False) for d in deps if d not in phase)
                continue
            p = 0
            for d in deps:
                p = max(p, phase[d] + (1 if _is_global_barrier(by_id[d]) else 0))
            phase[iid] = p
    return {iid: p for iid, p in phase.items()
            if not _is_global_barrier(by_id[iid])}


def _declaration_text(knl: lp.LoopKernel, name: str, as_arg: bool,
                      written: bool, dtypes: Mapping[str, Any],
                      shapes: Mapping[str, tuple[Any, ...]]) -> str:
    """The declaration of *name* in a sub-unit of *knl* (an argument if
    *as_arg*, written there if *written*; arrays of *shapes* with that
    shape)."""
    if hoisted_value(name) is not None:
        return f"hoisted value {knl.index_dtype!r}"
    if name in knl.inames:
        return f"iname {sorted(map(repr, knl.inames[name].tags))}"
    var = _arg_dict(knl).get(name)
    if var is None:
        var = knl.temporary_variables[name]
    if isinstance(var, _kdata.ValueArg):
        return f"value {var.dtype!r}"
    kind = ("arg" if as_arg else f"temp {var.address_space!r} "
            f"{getattr(var, 'initializer', None) is not None} "
            f"{getattr(var, 'read_only', None)!r}")
    dtype = var.dtype if var.dtype is not None else dtypes.get(name)
    return (f"{kind} {dtype!r} {shapes.get(name, var.shape)!r} "
            f"{var.dim_tags!r} {getattr(var, 'offset', None)!r} {written}")


_FIELDS: dict[type, list[str]] = {}


def _fields(insn: Any) -> list[str]:
    """The fields of the instruction *insn* that enter its canonical
    form, sorted."""
    tp = type(insn)
    fields = _FIELDS.get(tp)
    if fields is None:
        fields = _FIELDS[tp] = sorted(
            f for f in insn.get_copy_kwargs() if f not in _INSN_SKIP)
    return fields


_INSN_SKIP = frozenset({"id", "depends_on", "happens_after",
                        "within_inames_is_final", "depends_on_is_final"})


def _unit_priorities(priorities: Iterable[tuple[str, ...]],
                     inames: set[str]) -> frozenset[tuple[str, ...]]:
    """The loop priorities *priorities* (of a kernel) for its sub-unit
    with the loops *inames*: each restricted to those inames (in its
    order), kept where two or more are left."""
    result = set()
    for prio in priorities:
        kept = tuple(n for n in prio if n in inames)
        if len(kept) > 1:
            result.add(kept)
    return frozenset(result)


def _canonical(knl: lp.LoopKernel, insns: Sequence[Any],
               domains: Sequence[Any], names: set[str], as_args: set[str],
               written: set[str], dtypes: Mapping[str, Any],
               shapes: Mapping[str, tuple[Any, ...]],
               priorities: Iterable[tuple[str, ...]] = ()
               ) -> tuple[str, tuple[str, ...]]:
    """The hash of the canonical form of the sub-unit of *knl* with the
    instructions *insns*, *domains* and loop *priorities* (names in
    *names* renamed by order of first appearance; those in *as_args* are
    arguments, those in *written* written; arrays of *shapes* with that
    shape) and the names by canonical position."""
    canon: dict[str, str] = {}
    order: list[str] = []

    def rename(text: str) -> str:
        def sub(m: re.Match[str]) -> str:
            word = m.group(0)
            if word not in names:
                return word
            c = canon.get(word)
            if c is None:
                c = canon[word] = f"n{len(order)}"
                order.append(word)
            return c
        return _IDENT.sub(sub, text)

    ids = {insn.id: f"i{k}" for k, insn in enumerate(insns)}
    # names are numbered in the order they appear in the instructions'
    # expressions, then in the domains, then in sets (e.g. within_inames:
    # set order is not canonical; names first seen there are numbered in
    # sorted order)
    parts = []
    sets = []
    for insn in insns:
        fields = []
        for f in _fields(insn):
            value = getattr(insn, f)
            if isinstance(value, (frozenset, set)):
                sets.append((f, value))
                continue
            fields.append(f"{f}={rename(_expr_text(value))}")
        deps = sorted(ids[d] for d in insn.depends_on if d in ids)
        parts.append(f"{type(insn).__name__}({';'.join(fields)};deps={deps})")
    parts.extend(rename(str(dom)) for dom in domains)
    for f, value in sets:
        texts = sorted(_expr_text(v) for v in value)
        parts.append(f"{f}={sorted(rename(t) for t in texts)!r}")
    # (their inames are in the domains: numbered already)
    parts.append("priorities="
                 + repr(sorted(rename(" ".join(p)) for p in priorities)))
    k = 0
    while k < len(order):  # declarations may name further names
        name = order[k]
        parts.append(f"{canon[name]}:"
                     + rename(_declaration_text(knl, name, name in as_args,
                                                name in written, dtypes,
                                                shapes)))
        k += 1
    opts = knl.options
    parts.append(repr((knl.index_dtype, type(knl.target).__name__,
                       opts.return_dict, opts.no_numpy,
                       opts.enforce_variable_access_ordered,
                       opts.build_options, sorted(knl.silenced_warnings))))
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()
    return digest, tuple(order)
