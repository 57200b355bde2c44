"""A program's kernel split into its device kernels, each generated once.

The default schedule (:mod:`pytato.target.loopy.schedule.default`)
separates the loop nests of a program's single :mod:`loopy` kernel with
global barriers; :mod:`loopy` then preprocesses, linearizes and generates
code for the whole kernel at once, and splits it into device kernels at
those barriers. Its cost grows with the number of instructions (about
4.7 ms each for the 10 000-node random DAG of
``benchmarks/bench_codegen.py``), and the nests of an application often
repeat (the same operator applied to many fields).

Here the scheduled kernel is cut at its global barriers instead, before
:mod:`loopy`'s passes (:func:`split_kernel`): each *phase* (the
instructions after the same number of global barriers on their longest
dependency path) becomes a kernel of its own (a :class:`SubUnit`), whose
arguments are the program's arguments and the global temporaries it
shares with other phases. Each sub-unit has a *canonical form* (the text
of its instructions, domains and declarations with every argument,
temporary, iname and instruction id renamed by order of first appearance)
and is keyed by a hash of it: sub-units with equal keys compute the same
thing on other arrays, so :mod:`loopy` preprocesses, linearizes and
generates code for one of them (:func:`compile_sub_units`), and the device
kernels are built once. Distinct sub-units can be generated in worker
processes (:data:`SPLIT_WORKERS_ENV`). Results are kept in the program
store (:mod:`pytato.target.loopy.run.program_store`) under the canonical
key, so that programs sharing a kernel share its code.

The host side (:class:`SplitKernelPlan`, a
:class:`~pytato.target.loopy.run.launch.KernelPlan`) launches the device
kernels of the sub-units in order, each with its own arrays mapped onto
the arguments of the sub-unit that was generated.

This path is off by default: set :data:`SPLIT_ENV` to ``1`` to use it.

.. autodata:: SPLIT_ENV
.. autodata:: SPLIT_WORKERS_ENV
.. autofunction:: split_enabled
.. autoclass:: SubUnit
.. autofunction:: split_kernel
.. autoclass:: CompiledSubUnit
.. autofunction:: compile_sub_units
.. autoclass:: SplitKernelPlan
.. autoclass:: SplitExecutor
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from loopy.kernel.data import AddressSpace, ArrayArg, ValueArg
from loopy.kernel.instruction import BarrierInstruction

from pytato.codegen import FewerCollections, PhaseTimer
from pytato.target.loopy.run.launch import KernelPlan, SubkernelInfo


if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import loopy as lp
    import pyopencl as cl


__all__ = [
    "SPLIT_ENV",
    "SPLIT_WORKERS_ENV",
    "CompiledSubUnit",
    "SplitExecutor",
    "SplitKernelPlan",
    "SubUnit",
    "compile_sub_units",
    "split_enabled",
    "split_kernel",
]

_logger = logging.getLogger("pytato.target.loopy")

#: Environment variable switching the split path on (``1``): programs
#: whose kernel has global barriers are generated as one :mod:`loopy`
#: kernel per phase, each distinct one once (see the module documentation).
SPLIT_ENV = "PYTATO_SPLIT_KERNELS"

#: Environment variable giving the number of worker processes generating
#: the distinct sub-units (default: the usable CPUs; ``1``: in the calling
#: process, which gives the same code).
SPLIT_WORKERS_ENV = "PYTATO_SPLIT_WORKERS"


def split_enabled() -> bool:
    """Whether :data:`SPLIT_ENV` switches the split path on."""
    return os.environ.get(SPLIT_ENV, "").strip() not in ("", "0")


# {{{ splitting

@dataclass(frozen=True)
class SubUnit:
    """One phase of a kernel, as a kernel of its own.

    .. attribute:: kernel

        The :class:`loopy.LoopKernel` (named after its key); None for
        sub-units after the first of their key (not generated).

    .. attribute:: key

        The hash of its canonical form.

    .. attribute:: canonical_names

        The names of its arguments, temporaries and inames, by canonical
        position (the order of first appearance in its canonical form).

    .. attribute:: instructions

        Its instructions, as in the kernel it was cut from.
    """

    kernel: lp.LoopKernel | None
    key: str
    canonical_names: tuple[str, ...]
    instructions: Sequence[Any]


class SplitNotPossible(ValueError):
    """The kernel cannot be split (see :func:`split_kernel`)."""


class _KernelNeeded(LookupError):
    """A sub-unit without its kernel is not in the program store."""


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _is_global_barrier(insn: Any) -> bool:
    return (isinstance(insn, BarrierInstruction)
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


_NAMES: dict[int, tuple[Any, frozenset[str]]] = {}


def _insn_names(insn: Any) -> frozenset[str]:
    """The variables and inames *insn* names (memoized by identity while
    a kernel is split: :func:`split_kernel` clears the memo)."""
    entry = _NAMES.get(id(insn))
    if entry is None or entry[0] is not insn:
        entry = _NAMES[id(insn)] = (insn, frozenset(
            insn.dependency_names() | insn.within_inames
            | insn.reduction_inames()))
    return entry[1]


def _declaration_text(knl: lp.LoopKernel, name: str, as_arg: bool,
                      written: bool, dtypes: Mapping[str, Any]) -> str:
    """The declaration of *name* in a sub-unit of *knl* (an argument if
    *as_arg*, written there if *written*)."""
    if name in knl.inames:
        return f"iname {sorted(map(repr, knl.inames[name].tags))}"
    var = _arg_dict(knl).get(name)
    if var is None:
        var = knl.temporary_variables[name]
    if isinstance(var, ValueArg):
        return f"value {var.dtype!r}"
    kind = ("arg" if as_arg else f"temp {var.address_space!r} "
            f"{getattr(var, 'initializer', None) is not None} "
            f"{getattr(var, 'read_only', None)!r}")
    dtype = var.dtype if var.dtype is not None else dtypes.get(name)
    return (f"{kind} {dtype!r} {var.shape!r} "
            f"{var.dim_tags!r} {getattr(var, 'offset', None)!r} {written}")


_ARG_DICTS: dict[int, tuple[Any, dict[str, Any]]] = {}
_FIELDS: dict[type, list[str]] = {}


def _arg_dict(knl: lp.LoopKernel) -> dict[str, Any]:
    """The arguments of *knl* by name (one dictionary per kernel: loopy's
    ``arg_dict`` hashes the kernel)."""
    entry = _ARG_DICTS.get(id(knl))
    if entry is None or entry[0] is not knl:
        _ARG_DICTS.clear()
        entry = _ARG_DICTS[id(knl)] = (knl, {a.name: a for a in knl.args})
    return entry[1]


def _fields(insn: Any) -> list[str]:
    """The fields of the instruction *insn* that enter its canonical
    form, sorted."""
    tp = type(insn)
    fields = _FIELDS.get(tp)
    if fields is None:
        fields = _FIELDS[tp] = sorted(
            f for f in insn.get_copy_kwargs() if f not in _INSN_SKIP)
    return fields


_STRINGIFY: list[Any] = []


def _expr_text(value: Any) -> str:
    """An unambiguous text of *value* (expressions with typed constants;
    :func:`repr` abbreviates deep expressions)."""
    import pymbolic.primitives as prim
    if isinstance(value, (tuple, list)):
        return "(" + ",".join(_expr_text(v) for v in value) + ")"
    if isinstance(value, (frozenset, set)):
        return "{" + ",".join(sorted(_expr_text(v) for v in value)) + "}"
    if isinstance(value, (prim.ExpressionNode, np.generic, int, float,
                          complex)) and not isinstance(value, bool):
        if not _STRINGIFY:
            from loopy.symbolic import StringifyMapper

            class _Typed(StringifyMapper):
                def map_constant(self, expr: Any, *args: Any) -> str:
                    return f"{type(expr).__name__}({expr!r})"

            _STRINGIFY.append(_Typed())
        return str(_STRINGIFY[0](value))
    return repr(value)


_INSN_SKIP = frozenset({"id", "depends_on", "happens_after",
                        "within_inames_is_final", "depends_on_is_final"})


def _canonical(knl: lp.LoopKernel, insns: Sequence[Any],
               domains: Sequence[Any], names: set[str], as_args: set[str],
               written: set[str], dtypes: Mapping[str, Any]
               ) -> tuple[str, tuple[str, ...]]:
    """The hash of the canonical form of the sub-unit of *knl* with the
    instructions *insns* and *domains* (names in *names* renamed by order
    of first appearance; those in *as_args* are arguments, those in
    *written* written) and the names by canonical position."""
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
    k = 0
    while k < len(order):  # declarations may name further names
        name = order[k]
        parts.append(f"{canon[name]}:"
                     + rename(_declaration_text(knl, name, name in as_args,
                                                name in written, dtypes)))
        k += 1
    opts = knl.options
    parts.append(repr((knl.index_dtype, type(knl.target).__name__,
                       opts.return_dict, opts.no_numpy,
                       opts.enforce_variable_access_ordered,
                       opts.build_options, sorted(knl.silenced_warnings))))
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()
    return digest, tuple(order)


def split_kernel(knl: lp.LoopKernel,
                 dtypes: Mapping[str, Any] | None = None) -> list[SubUnit]:
    """Cut the scheduled, unpreprocessed kernel *knl* into its phases (see
    the module documentation), in order.

    :arg dtypes: the types of the temporaries whose type *knl* leaves
        open (needed for those shared by phases).
    :raises SplitNotPossible: if *knl* has no global barriers, or if a
        phase needs something the split cannot give it (a temporary that
        is not global used in two phases, nested domains, substitution
        rules, loop priorities).
    """

    if not any(_is_global_barrier(i) for i in knl.instructions):
        raise SplitNotPossible("no global barriers")
    if knl.substitutions or knl.loop_priority:
        raise SplitNotPossible("substitution rules or loop priorities")
    if any(len(dom.get_var_names(_param())) and set(
            dom.get_var_names(_param())) & set(knl.inames)
            for dom in knl.domains):
        raise SplitNotPossible("nested domains")
    _NAMES.clear()
    try:
        return _split(knl, dtypes)
    finally:
        _NAMES.clear()


def _split(knl: lp.LoopKernel, dtypes: Mapping[str, Any] | None
           ) -> list[SubUnit]:
    from constantdict import constantdict

    phase = _phases(knl)
    nphases = max(phase.values(), default=-1) + 1
    insns_of: list[list[Any]] = [[] for _ in range(nphases)]
    for insn in knl.instructions:
        if insn.id in phase:
            insns_of[phase[insn.id]].append(insn)
    used: list[set[str]] = [set() for _ in range(nphases)]
    for p, insns in enumerate(insns_of):
        for insn in insns:
            used[p] |= _insn_names(insn)
    users: dict[str, list[int]] = {}
    for p, names in enumerate(used):
        for name in names:
            users.setdefault(name, []).append(p)
    for name, tv in knl.temporary_variables.items():
        if len(users.get(name, ())) > 1 and (
                tv.address_space != AddressSpace.GLOBAL
                or tv.base_storage is not None or tv.initializer is not None):
            raise SplitNotPossible(f"temporary {name!r} used in two phases")

    if dtypes is None:
        dtypes = {}
    for name, tv in knl.temporary_variables.items():
        if len(users.get(name, ())) > 1 and tv.dtype is None \
                and name not in dtypes:
            raise SplitNotPossible(f"the type of {name!r} is not known")
    value_args = [a for a in knl.args if isinstance(a, ValueArg)]
    dom_names = [frozenset(dom.get_var_names(_set())) for dom in knl.domains]
    domains_of: dict[str, list[int]] = {}
    for k, dnames in enumerate(dom_names):
        for n in dnames:
            domains_of.setdefault(n, []).append(k)

    def make_unit(insns: list[Any], build: bool = True) -> SubUnit:
        names: set[str] = set()
        for insn in insns:
            names |= _insn_names(insn)
        dom_ids = sorted({k for n in names for k in domains_of.get(n, ())})
        domains = [knl.domains[k] for k in dom_ids]
        inames = {n for k in dom_ids for n in dom_names[k]}
        written = {w for insn in insns for w in insn.assignee_var_names()}
        shared = {n for n in names if n in knl.temporary_variables
                  and len(users[n]) > 1}
        arg_names = shared | {n for n in names if n in _arg_dict(knl)}
        temp_names = {n for n in names
                      if n in knl.temporary_variables and n not in shared}
        key, order = _canonical(knl, insns, domains,
                                inames | temp_names | arg_names,
                                arg_names, written, dtypes)
        if not build:
            return SubUnit(None, key, order, insns)
        args = []
        for tv_name in sorted(shared):
            tv = knl.temporary_variables[tv_name]
            args.append(ArrayArg(
                tv_name, dtype=tv.dtype if tv.dtype is not None
                else dtypes[tv_name], shape=tv.shape, dim_tags=tv.dim_tags,
                offset=tv.offset, address_space=AddressSpace.GLOBAL,
                is_output=tv_name in written,
                is_input=tv_name not in written))
        for arg in knl.args:
            if arg.name in names and not isinstance(arg, ValueArg):
                args.append(arg.copy(is_output=arg.name in written,
                                     is_input=arg.name not in written))
        temps = {n: knl.temporary_variables[n] for n in sorted(names)
                 if n in knl.temporary_variables and n not in shared}
        # the value arguments the sub-unit may need (its domains'
        # parameters, shapes and expressions)
        if value_args:
            dep_text = " ".join([*(str(d) for d in domains),
                                 *(repr(a.shape) for a in args),
                                 *(repr(t.shape) for t in temps.values())])
            words = set(_IDENT.findall(dep_text)) | names
            args.extend(a for a in value_args if a.name in words)
        ids = {i.id for i in insns}
        new_insns = [i.copy(depends_on=frozenset(d for d in i.depends_on
                                                 if d in ids))
                     for i in insns]
        sub = knl.copy(
            name="_pt_sub", domains=domains, instructions=new_insns,
            args=args, temporary_variables=constantdict(temps),
            inames=constantdict({n: knl.inames[n] for n in sorted(inames)
                                 if n in knl.inames}))
        return SubUnit(sub.copy(name=f"_pt_k{key[:16]}"), key, order, insns)

    # each phase's independent nests (connected by dependencies,
    # temporaries of their own and inames) as sub-units; a phase's nests
    # whose sub-unit occurs once in the program are put back together
    # (one device kernel, as the schedule made it)
    phase_parts: list[list[tuple[list[Any], SubUnit]]] = []
    counts: dict[str, int] = {}
    for insns in insns_of:
        if not insns:
            continue
        comps = _components(knl, insns)
        parts = [(c, make_unit(c, build=False)) for c in comps] \
            if len(comps) > 1 else [(insns, None)]
        for _, u in parts:
            if u is not None:
                counts[u.key] = counts.get(u.key, 0) + 1
        phase_parts.append(parts)  # type: ignore[arg-type]
    order = {i.id: k for k, i in enumerate(knl.instructions)}
    result = []
    built: set[str] = set()
    for parts in phase_parts:
        rest: list[Any] = []
        for insns, u in parts:
            if u is not None and counts[u.key] > 1:
                if u.key not in built:  # the kernel of the first of a key
                    u = make_unit(u.instructions)
                    built.add(u.key)
                result.append(u)
            else:
                rest.extend(insns)
        if rest:
            rest = sorted({i.id: i for i in rest}.values(),
                          key=lambda i: order[i.id])
            result.append(make_unit(rest))
    return result


def _components(knl: lp.LoopKernel, insns: list[Any]) -> list[list[Any]]:
    """*insns* (of one phase) in groups that share no dependency,
    temporary or iname, in order."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        root = x
        while parent.setdefault(root, root) != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb

    ids = {i.id for i in insns}
    temps = knl.temporary_variables
    all_inames = frozenset(knl.inames)
    # instructions that only compute private temporaries from inames
    # (index computations shared by fused nests) are copied into each
    # group that uses them
    copied: dict[str, Any] = {}
    copied_temps: dict[str, str] = {}
    for insn in insns:
        out = insn.assignee_var_names()
        if (not any(d in ids for d in insn.depends_on) and out
                and all(n in temps and temps[n].address_space
                        != AddressSpace.GLOBAL for n in out)
                and not (insn.read_dependency_names() - set(out)
                         - all_inames)):
            copied[insn.id] = insn
            for n in out:
                copied_temps[n] = insn.id
    if len(set(copied_temps.values())) != len(copied) or any(
            n in copied_temps for i in copied.values()
            for n in i.read_dependency_names()):
        copied = {}
        copied_temps = {}
    owner: dict[str, str] = {}
    for insn in insns:
        if insn.id in copied:
            continue
        find(insn.id)
        for d in insn.depends_on:
            if d in ids and d not in copied:
                union(insn.id, d)
        for n in _insn_names(insn):
            if n in temps and n not in copied_temps:
                o = owner.setdefault(n, insn.id)
                union(insn.id, o)
    groups: dict[str, list[Any]] = {}
    for insn in insns:
        if insn.id not in copied:
            groups.setdefault(find(insn.id), []).append(insn)
    if not copied:
        return list(groups.values())
    result = []
    order = {insn.id: k for k, insn in enumerate(insns)}
    for group in groups.values():
        need = {copied_temps[n] for i in group for n in _insn_names(i)
                if n in copied_temps}
        need |= {d for i in group for d in i.depends_on if d in copied}
        group = group + [copied[c] for c in need]
        group.sort(key=lambda i: order[i.id])
        result.append(group)
    result.sort(key=lambda g: order[g[0].id])
    return result


def _param() -> Any:
    import islpy as isl
    return isl.dim_type.param


def _set() -> Any:
    import islpy as isl
    return isl.dim_type.set

# }}}


# {{{ code generation of the distinct sub-units

@dataclass(frozen=True)
class CompiledSubUnit:
    """What the host needs of a generated sub-unit, in canonical names
    (``n0``, ``n1``, ... by canonical position; see :class:`SubUnit`).

    .. attribute:: code

        Its OpenCL code.

    .. attribute:: launches

        Its device kernels in order: ``(name, argument names, group count,
        work group size)``, names and expressions canonical.
    """

    code: str
    launches: tuple[tuple[str, tuple[str, ...], tuple[Any, ...],
                          tuple[Any, ...]], ...]


def _compile_one(t_unit: lp.TranslationUnit,
                 names: Sequence[str]) -> CompiledSubUnit:
    """Preprocess, linearize and generate *t_unit* (one kernel), and
    describe its launches in canonical names (*names* by position)."""
    import loopy as lp
    import pymbolic.primitives as prim
    from loopy.schedule import CallKernel, get_insn_ids_for_block_at
    from loopy.schedule.tools import get_subkernel_arg_info
    from pymbolic.mapper.substitutor import SubstitutionMapper, make_subst_func

    from pytato.target.loopy.run.preprocessing import (
        generate_code,
        preprocess_and_linearize,
    )
    with FewerCollections():
        lin = preprocess_and_linearize(t_unit)
        code = generate_code(lin, cache=False).device_code()
    knl = lin.default_entrypoint
    canon = {n: f"n{k}" for k, n in enumerate(names)}
    subst = SubstitutionMapper(make_subst_func(
        {n: prim.Variable(c) for n, c in canon.items()}))
    launches = []
    sched = knl.linearization
    assert sched is not None
    for idx, item in enumerate(sched):
        if not isinstance(item, CallKernel):
            continue
        ids = get_insn_ids_for_block_at(sched, idx)
        if not ids:
            continue
        info = get_subkernel_arg_info(knl, item.kernel_name)
        if info.passed_inames:
            raise SplitNotPossible("loop indices passed from the host")
        gsize, lsize = knl.get_grid_sizes_for_insn_ids_as_exprs(
            ids, lin.callables_table)
        passed = []
        for n in info.passed_names:
            if n not in canon:
                raise SplitNotPossible(f"argument {n!r} of a device kernel "
                                       "has no canonical name")
            passed.append(canon[n])
        launches.append((item.kernel_name, tuple(passed),
                         tuple(subst(g) for g in gsize),
                         tuple(subst(s) for s in lsize)))
    if isinstance(lin.target, lp.PyOpenCLTarget) \
            and getattr(lin.target, "limit_arg_size_nbytes", None) is not None:
        raise SplitNotPossible("limit_arg_size_nbytes")
    return CompiledSubUnit(code, tuple(launches))


# a worker process: reads (sys.path, [(translation unit, names), ...])
# pickled on stdin, writes the pickled list of CompiledSubUnit on stdout
_WORKER = """
import pickle, sys
path, jobs = pickle.load(sys.stdin.buffer)
sys.path[:0] = path
from pytato.target.loopy.run.split import _compile_one
result = [_compile_one(t_unit, names) for t_unit, names in jobs]
sys.stdout.buffer.write(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
"""


def _compile_in_processes(jobs: Sequence[tuple[lp.TranslationUnit,
                                                Sequence[str]]],
                          nworkers: int) -> list[CompiledSubUnit]:
    """:func:`_compile_one` of each of *jobs* in *nworkers* new Python
    processes (not forked: the calling process may hold an OpenCL
    context), the jobs spread by instruction count."""
    import pickle
    import subprocess
    import sys

    from pytato.target.loopy.run.program_store import _dumps

    loads = [0] * nworkers
    shares: list[list[int]] = [[] for _ in range(nworkers)]
    for i in sorted(range(len(jobs)), key=lambda i: -len(
            jobs[i][0].default_entrypoint.instructions)):
        w = loads.index(min(loads))
        shares[w].append(i)
        loads[w] += len(jobs[i][0].default_entrypoint.instructions) + 1
    procs = []
    try:
        for _share in shares:
            proc = subprocess.Popen(
                [sys.executable, "-c", _WORKER],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE)
            procs.append(proc)
        for proc, share in zip(procs, shares, strict=True):
            assert proc.stdin is not None
            proc.stdin.write(_dumps((list(sys.path),
                                     [jobs[i] for i in share])))
            proc.stdin.close()
        result: list[CompiledSubUnit | None] = [None] * len(jobs)
        for proc, share in zip(procs, shares, strict=True):
            assert proc.stdout is not None and proc.stderr is not None
            out = proc.stdout.read()
            err = proc.stderr.read()
            if proc.wait() != 0:
                raise RuntimeError("code generation process failed: "
                                   + err.decode(errors="replace")[-3000:])
            for i, comp in zip(share, pickle.loads(out), strict=True):
                result[i] = comp
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert all(r is not None for r in result)
    return result  # type: ignore[return-value]


def _workers(njobs: int) -> int:
    env = os.environ.get(SPLIT_WORKERS_ENV, "").strip()
    if env:
        try:
            return max(1, min(int(env), njobs))
        except ValueError:
            _logger.warning("%s=%r is not an integer; ignored",
                            SPLIT_WORKERS_ENV, env)
    from pytato.target.loopy.run.executor import _usable_cpus
    return max(1, min(njobs, _usable_cpus()))


def _sub_key(unit: SubUnit) -> str:
    from loopy.version import DATA_MODEL_VERSION

    from pytato.target.loopy.run import program_store
    return hashlib.sha256(repr((
        "pytato-sub-unit", program_store.STORE_VERSION,
        program_store._source_digest(), DATA_MODEL_VERSION,
        unit.key)).encode()).hexdigest()


#: counts of the work done, for tests: sub-units generated by loopy
STATS = {"generated": 0, "store_hits": 0}


def compile_sub_units(t_unit: lp.TranslationUnit,
                      units: Sequence[SubUnit]) -> dict[str, CompiledSubUnit]:
    """The :class:`CompiledSubUnit` of each distinct key of *units*
    (sub-units of the kernel of *t_unit*), from the program store where it
    is there, else generated by :mod:`loopy`, in worker processes
    (:data:`SPLIT_WORKERS_ENV`) where there are several to generate."""
    from pytato.target.loopy.run import program_store

    distinct: dict[str, SubUnit] = {}
    for u in units:
        distinct.setdefault(u.key, u)
    result: dict[str, CompiledSubUnit] = {}
    use_store = program_store.store_enabled()
    todo = []
    for key, unit in distinct.items():
        if use_store:
            try:
                stored = program_store.load(_sub_key(unit), "sub-unit")
            except program_store.NotPersistentError:
                use_store = False
                stored = None
            if stored is not None:
                result[key] = stored
                STATS["store_hits"] += 1
                continue
        if unit.kernel is None:
            raise _KernelNeeded(key)
        todo.append(unit)

    def unit_t_unit(unit: SubUnit) -> lp.TranslationUnit:
        from constantdict import constantdict
        from loopy.kernel.function_interface import CallableKernel
        assert unit.kernel is not None
        name = unit.kernel.name
        return t_unit.copy(
            callables_table=constantdict({name: CallableKernel(unit.kernel)}),
            entrypoints=frozenset({name}))

    nworkers = _workers(len(todo))
    with PhaseTimer(_logger, f"loopy on {len(todo)} distinct sub-units "
                    f"({len(units)} in all, {nworkers} processes)"):
        if nworkers <= 1:
            compiled = [_compile_one(unit_t_unit(u), u.canonical_names)
                        for u in todo]
        else:
            compiled = _compile_in_processes(
                [(unit_t_unit(u), u.canonical_names) for u in todo],
                nworkers)
    STATS["generated"] += len(todo)
    for unit, comp in zip(todo, compiled, strict=True):
        result[unit.key] = comp
        if use_store:
            program_store.save(_sub_key(unit), "sub-unit", comp)
    return result

# }}}


# {{{ host side

class SplitKernelPlan(KernelPlan):
    """The :class:`~pytato.target.loopy.run.launch.KernelPlan` of a split
    program: the device kernels of its sub-units in order, with the
    program's arrays and value arguments in place of the canonical ones of
    the generated sub-units."""

    def __init__(self, executor: SplitExecutor) -> None:
        import pymbolic.primitives as prim
        from loopy.kernel.array import get_strides
        from pymbolic.mapper.substitutor import (
            SubstitutionMapper,
            make_subst_func,
        )

        from pytato.diagnostic import UnsupportedByTargetError

        knl = executor.t_unit[executor.entrypoint]
        compiled = executor.compiled()
        subkernels = []
        for unit in executor.units:
            comp = compiled[unit.key]
            names = {f"n{k}": n for k, n in enumerate(unit.canonical_names)}
            subst = SubstitutionMapper(make_subst_func(
                {c: prim.Variable(n) for c, n in names.items()}))
            for name, passed, gsize, lsize in comp.launches:
                subkernels.append(SubkernelInfo(
                    name, tuple(names[c] for c in passed),
                    tuple(subst(g) for g in gsize),
                    tuple(subst(s) for s in lsize)))
        self.subkernels = tuple(subkernels)
        self.value_args = {}
        self.input_arrays = []
        self.outputs = []
        self._strides = {}
        self._array_info = {}
        for arg in knl.args:
            if isinstance(arg, ValueArg):
                self.value_args[arg.name] = np.dtype(arg.dtype.numpy_dtype)
                continue
            if not isinstance(arg, ArrayArg):
                raise UnsupportedByTargetError(
                    f"argument {arg.name!r} is not supported by the split path")
            self._array_info[arg.name] = (arg.shape,
                                          np.dtype(arg.dtype.numpy_dtype))
            if arg.is_output:
                self.outputs.append(arg.name)
                self._strides[arg.name] = tuple(get_strides(arg))
            else:
                self.input_arrays.append(arg.name)
        passed = {n for sk in self.subkernels for n in sk.arg_names}
        dtypes = executor.temporary_dtypes()
        self._temporaries = {
            name: (tv.shape, dtypes[name])
            for name, tv in knl.temporary_variables.items() if name in passed}
        self.return_dict = bool(knl.options.return_dict)
        self.no_numpy = bool(knl.options.no_numpy)
        kernels = executor.cl_kernels()
        self.cl_programs = {sk.name: kernels[sk.name].program
                            for sk in self.subkernels}
        self.cl_program = (self.cl_programs[self.subkernels[0].name]
                           if self.subkernels else None)


class SplitExecutor:
    """An executor of a program whose kernel is split into sub-units (see
    the module documentation), with the interface that
    :mod:`pytato.target.loopy.run.launch` and
    :mod:`pytato.target.loopy.run.programs` use of :mod:`loopy`'s
    executors: call it as one (``executor(queue, **kwargs)``); its
    :class:`SplitKernelPlan` is :meth:`kernel_plan`.

    :arg units: the sub-units of the kernel (:func:`split_kernel`).
    """

    def __init__(self, context: cl.Context, t_unit: lp.TranslationUnit,
                 entrypoint: str, units: Sequence[SubUnit],
                 store_key: str | None = None) -> None:
        self.context = context
        self.t_unit = t_unit
        self.entrypoint = entrypoint
        self.units = tuple(units)
        self.store_key = store_key
        self._compiled: dict[str, CompiledSubUnit] | None = None
        self._kernels: dict[str, cl.Kernel] | None = None
        self._plan: SplitKernelPlan | None = None
        self._dtypes: dict[str, np.dtype[Any]] | None = None

    def arg_to_dtype(self, kwargs: Mapping[str, Any]) -> None:
        """As :mod:`loopy`'s executors (argument types are the kernel's)."""
        return None

    def compiled(self) -> dict[str, CompiledSubUnit]:
        """The generated sub-units by key (:func:`compile_sub_units`)."""
        if self._compiled is None:
            try:
                self._compiled = compile_sub_units(self.t_unit, self.units)
            except _KernelNeeded:
                # sub-units from the store, not all of them there: split
                with PhaseTimer(_logger, "kernel split into sub-units"):
                    self.units = tuple(split_kernel(
                        self.t_unit[self.entrypoint], _open_dtypes(
                            self.t_unit, self.entrypoint)))
                self._compiled = compile_sub_units(self.t_unit, self.units)
        return self._compiled

    def temporary_dtypes(self) -> dict[str, np.dtype[Any]]:
        """The types of the kernel's temporaries (inferred where the
        kernel leaves them open)."""
        if self._dtypes is None:
            knl = self.t_unit[self.entrypoint]
            if any(tv.dtype is None
                   for tv in knl.temporary_variables.values()):
                import loopy as lp
                with lp.CacheMode(False):
                    knl = lp.infer_unknown_types(
                        self.t_unit, expect_completion=False)[self.entrypoint]
            self._dtypes = {
                n: np.dtype(tv.dtype.numpy_dtype)
                for n, tv in knl.temporary_variables.items()
                if tv.dtype is not None}
        return self._dtypes

    def cl_kernels(self) -> dict[str, cl.Kernel]:
        """The device kernels of the distinct sub-units, by name (the code
        of each built as a program of its own, several at once)."""
        if self._kernels is None:
            from concurrent.futures import ThreadPoolExecutor

            import pyopencl as cl

            from pytato.target.loopy.run.executor import (
                _program_kernels,
                _usable_cpus,
            )
            codes = [c.code for c in self.compiled().values()]
            options = self.t_unit[self.entrypoint].options.build_options

            def build(code: str) -> cl.Program:
                return cl.Program(self.context, code).build(options=options)

            # one program per distinct sub-unit (its source is the same in
            # every program that has it: pyopencl's binary cache finds
            # it), built in threads (pyopencl releases the GIL)
            with PhaseTimer(_logger, f"OpenCL build ({len(codes)} programs)"):
                with ThreadPoolExecutor(
                        max(1, min(len(codes), _usable_cpus())),
                        thread_name_prefix="pytato-build") as pool:
                    programs = list(pool.map(build, codes))
            kernels: dict[str, cl.Kernel] = {}
            for program in programs:
                kernels.update(_program_kernels(program))
            self._kernels = kernels
        return self._kernels

    def kernel_plan(self) -> SplitKernelPlan:
        """The :class:`SplitKernelPlan` (built on first use)."""
        if self._plan is None:
            self._plan = SplitKernelPlan(self)
            from pytato.target.loopy.run import program_store
            if self.store_key is not None and program_store.store_enabled():
                program_store.save(self.store_key, "split-units", (
                    [(u.key, u.canonical_names) for u in self.units],
                    self.temporary_dtypes()))
        return self._plan

    def __call__(self, queue: cl.CommandQueue, *, allocator: Any = None,
                 wait_for: Any = None, out_host: bool | None = None,
                 **kwargs: Any) -> Any:
        import pyopencl.array as cla

        from pytato.target.loopy.run import launch
        plan = self.kernel_plan()
        for name in plan.input_arrays:
            value = kwargs.get(name)
            if isinstance(value, cla.Array) and (
                    value.offset or not value.flags.c_contiguous):
                # a plain copy for the kernel argument
                kwargs[name] = cla.to_device(queue, value.get(queue=queue),
                                             allocator=allocator)
        return launch.run_instrumented(self, queue, allocator=allocator,
                                       wait_for=wait_for, out_host=out_host,
                                       **kwargs)

# }}}


def _open_dtypes(t_unit: lp.TranslationUnit, entrypoint: str
                 ) -> dict[str, Any] | None:
    """The inferred types of the temporaries of *t_unit* whose type it
    leaves open (None if there are none)."""
    knl = t_unit[entrypoint]
    if all(tv.dtype is not None for tv in knl.temporary_variables.values()):
        return None
    import loopy as lp
    with PhaseTimer(_logger, "type inference before the split"), \
            lp.CacheMode(False):
        typed = lp.infer_unknown_types(t_unit, expect_completion=False)
    return {n: tv.dtype for n, tv
            in typed[entrypoint].temporary_variables.items()
            if tv.dtype is not None}


def make_split_executor(t_unit: lp.TranslationUnit, context: cl.Context,
                        entrypoint: str, store_key: str | None = None
                        ) -> SplitExecutor | None:
    """A :class:`SplitExecutor` of *t_unit* if it can be split (a single,
    scheduled, unpreprocessed kernel with global barriers), else None.
    With the program's *store_key*, its sub-units (keys and names) are
    taken from the program store if an earlier process saved them (their
    kernels then are not built: their code is in the store too)."""
    from loopy.kernel import KernelState

    from pytato.target.loopy.run import program_store
    from pytato.target.loopy.run.preprocessing import _single_kernel
    if _single_kernel(t_unit) != entrypoint \
            or t_unit.state >= KernelState.PREPROCESSED:
        return None
    knl = t_unit[entrypoint]
    if knl.options.write_code or knl.options.edit_code:
        return None
    if store_key is not None and program_store.store_enabled():
        stored = program_store.load(store_key, "split-units")
        if stored is not None:
            keys, dtypes = stored
            executor = SplitExecutor(
                context, t_unit, entrypoint,
                [SubUnit(None, key, tuple(names), ()) for key, names in keys],
                store_key=store_key)
            executor._dtypes = dtypes
            _logger.info("program store hit for the %d sub-units", len(keys))
            return executor
    try:
        with PhaseTimer(_logger, "kernel split into sub-units"):
            units = split_kernel(knl, _open_dtypes(t_unit, entrypoint))
    except SplitNotPossible as e:
        _logger.info("kernel not split: %s", e)
        return None
    _logger.info("kernel split into %d sub-units, %d distinct", len(units),
                 len({u.key for u in units}))
    return SplitExecutor(context, t_unit, entrypoint, units,
                         store_key=store_key)

# vim: foldmethod=marker
