"""The part of a fast call (:mod:`pytato.target.loopy.run.fast_call`) that
depends on the values of the size parameters: ``_SizedCall`` holds the
kernels' grid sizes, the shapes and strides of the outputs and
temporaries, and the compiled function that enqueues the kernels
(``_compile_run``), whose code a program of many kernels keeps in the
program store (``_compiled``, :data:`STORED_RUN_MIN_KERNELS`).
``_NoFastCall`` is raised where a call cannot run this way.

.. autodata:: STORED_RUN_MIN_KERNELS
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
from pymbolic import evaluate

import pytato.target.loopy.store.program_store as program_store
from pytato.target.loopy.run.launcher import _ZERO, _enqueue, _eval_shape
from pytato.target.loopy.run.queues import _POOL_ATTR


if TYPE_CHECKING:
    from types import CodeType

    from pytato.target.loopy.run.fast_call import _FastCall


# loopy options whose effect on the invoker the fast path reproduces (or
# that only affect the device code, which the fast path shares with loopy)
_FAST_OPTION_DEFAULTS = {
    "cl_exec_manage_array_events": True,
    "write_wrapper": False,
    "write_code": False,
    "edit_code": False,
    "skip_arg_checks": False,
}

_Array = cla.Array
_ndarray = np.ndarray
_new_object = object.__new__
_MemoryObjectHolder = cl.MemoryObjectHolder
_COMPLETE = cl.command_execution_status.COMPLETE
# os.environ's dict (see env_switches_set), None where it has none
_ENV_DATA = getattr(os.environ, "_data", None)
if type(_ENV_DATA) is not dict:  # pragma: no cover
    _ENV_DATA = None
# the attributes of a pyopencl.array.Array that differ between the outputs
# of calls (see _output_template)
_PER_CALL_ATTRS = ("queue", "allocator", "base_data", "events")


def _output_template(shape: tuple[int, ...], dtype: np.dtype[Any],
                     strides: tuple[int, ...], size: int,
                     context: cl.Context) -> dict[str, Any] | None:
    """The instance attributes (``__dict__``) of an output
    :class:`pyopencl.array.Array` of a call, as the constructor sets them,
    but for those of :data:`_PER_CALL_ATTRS` (left *None*): a copy of it,
    with those set, makes the same array as the constructor for a fraction
    of its cost. *None* if this version of :mod:`pyopencl` does not keep
    them as plain attributes."""
    marker = object()
    try:
        ary = _Array(None, shape, dtype, allocator=None, data=marker,
                     strides=strides, _fast=True, _size=size,
                     _context=context, _queue=None)
        attrs = dict(vars(ary))
    except Exception:  # pragma: no cover
        return None
    if (attrs.get("base_data") is not marker or attrs.get("events") != []
            or not set(_PER_CALL_ATTRS) <= attrs.keys()
            or any(isinstance(getattr(_Array, name, None), property)
                   for name in attrs)):
        return None  # pragma: no cover
    for name in _PER_CALL_ATTRS:
        attrs[name] = None
    return attrs


class _SizedCall:
    """The parts of a :class:`_FastCall` that depend on the values of the
    size parameters: kernels with their value arguments set, work sizes,
    output and temporary sizes.

    The buffers of a call are numbered: the inputs (in the order of
    ``plan.input_arrays``), then the outputs, then the temporaries; each
    kernel lists ``(argument index, buffer number)`` of its memory
    arguments (all of them, and those not of temporaries).

    On in-order queues, the global temporaries allocated from the queue's
    default pool are kept for the next call (see ``run``).
    """

    __slots__ = ("context", "held", "kernels", "lock", "names",
                 "ninputs", "out_nbytes", "outputs", "run", "run_profiled",
                 "stats",
                 "templates", "temporaries", "zeroed")

    def __init__(self, fast: _FastCall, values: Mapping[str, int]) -> None:
        plan = fast.plan
        self.context = fast.context
        self.held = fast.held
        self.lock = fast.lock
        self.stats = fast.stats
        self.names = tuple(sk.name for sk in plan.subkernels)
        typed = plan.typed_values(values)
        number = {name: i for i, name in enumerate(
            [*plan.input_arrays, *plan.outputs, *plan._temporaries])}
        first_temporary = len(plan.input_arrays) + len(plan.outputs)
        kernels = []
        for sk in plan.subkernels:
            knl = plan.new_kernel(sk.name)
            mem_slots = []
            for i, name in enumerate(sk.arg_names):
                if name in typed:
                    knl.set_arg(i, typed[name])
                else:
                    mem_slots.append((i, number[name]))
            gsize, lsize = sk.work_sizes(values)
            kernels.append((knl, tuple(mem_slots),
                            tuple((i, j) for i, j in mem_slots
                                  if j < first_temporary),
                            gsize, lsize))
        self.kernels = tuple(kernels)
        outputs = []
        for name in plan.outputs:
            shape, dtype = plan._array_info[name]
            ishape = _eval_shape(shape, values)
            ustrides = tuple(int(evaluate(s, values))
                             for s in plan._strides[name])
            if (len(ustrides) != len(ishape) or any(n <= 0 for n in ishape)
                    or any(s < 0 for s in ustrides)):
                raise _NoFastCall
            size = 1 + sum(s * (n - 1) for s, n in zip(ustrides, ishape,
                                                        strict=True))
            outputs.append((ishape, dtype,
                            tuple(s * dtype.itemsize for s in ustrides),
                            size, size * dtype.itemsize))
        self.outputs = tuple(outputs)
        self.out_nbytes = tuple(out[4] for out in outputs)
        templates = tuple(_output_template(*out[:4], self.context)
                          for out in outputs)
        self.templates = (None if any(t is None for t in templates)
                          else templates)
        temporaries = []
        for shape, dtype in plan._temporaries.values():
            nbytes = int(np.prod(_eval_shape(shape, values), dtype=np.int64)
                         ) * dtype.itemsize
            if nbytes <= 0:
                raise _NoFastCall
            temporaries.append(nbytes)
        self.temporaries = tuple(temporaries)
        #: the numbers of the temporaries to fill with zeros when they are
        #: allocated (``plan.zeroed``)
        self.zeroed = tuple(j for j, name in enumerate(plan._temporaries)
                            if name in plan.zeroed)
        self.ninputs = len(plan.input_arrays)
        self.run = self._compile_run(self.ninputs)
        self.run_profiled = self._first_run_profiled

    #: ``run(queue, info, buffers, wait_for, allocator)``: allocate the
    #: outputs and temporaries from *allocator*, enqueue the kernels (the
    #: first after *wait_for*; each after the previous one on an
    #: out-of-order queue) and return the last event and the outputs (a
    #: tuple). *info* is ``queues._queue_info`` of *queue* (its identity
    #: stands for the queue); *buffers* the memory of the inputs, by
    #: number. (A function made by :meth:`_compile_run`.)
    #:
    #: The temporaries of a call on an in-order queue, when *allocator* is
    #: the queue's default pool, are kept (in the one slot ``held`` that
    #: the sized calls of an executor share) and used again by the next
    #: call with the same sizes, queue and allocator: that call runs after
    #: the kernels of this one, and its kernels already have them as
    #: arguments, so that only the arguments of inputs and outputs are set
    #: again. Any other call replaces them (then returned to their pool:
    #: later commands of their queue run after the kernels that use them)
    #: or drops them and uses temporaries of its own, released to their
    #: allocator once the kernels are enqueued.
    #:
    #: All but the making of the output arrays runs under the executor's
    #: lock (:func:`~pytato.target.loopy.run.call_locks.executor_lock`):
    #: calls from several threads set the kernels' arguments, enqueue them
    #: and take or keep the temporaries one after the other, so that a
    #: call reusing the temporaries kept by another one (on the same
    #: in-order queue) runs after it.
    run: Any

    #: :attr:`run` for queues with profiling enabled: the same, and the
    #: events of the kernels are recorded (one batch per call) in the
    #: executor's statistics
    #: (:func:`~pytato.target.loopy.run.statistics.executor_statistics`).
    #: (Compiled on its first call.)
    run_profiled: Any

    def _first_run_profiled(self, *args: Any) -> Any:
        self.run_profiled = self._compile_run(self.ninputs, profiled=True)
        return self.run_profiled(*args)

    def output(self, k: int, buf: Any, evt: cl.Event, queue: cl.CommandQueue,
               allocator: Any) -> cla.Array:
        """The output array *k* on the memory *buf*, written by *evt*
        (constructed: :meth:`run` copies :attr:`templates` instead where
        it can)."""
        shape, dtype, strides, size, _ = self.outputs[k]
        ary = _Array(None, shape, dtype, strides=strides, data=buf,
                     allocator=allocator, _fast=True, _size=size,
                     _context=self.context, _queue=queue)
        ary.events.append(evt)
        return ary

    def _compile_run(self, ninputs: int, profiled: bool = False) -> Any:
        """:meth:`run` for these kernels and sizes, as a Python function
        with the kernels unrolled (as :mod:`loopy` generates its invoker):
        a loop over them, their arguments and the outputs costs about
        1 us more per call. If *profiled*, the events of the kernels are
        kept and recorded together (see :attr:`run_profiled`)."""
        noutputs = len(self.outputs)
        first_temporary = ninputs + noutputs
        names: dict[str, Any] = {
            "enqueue": _enqueue, "new": _new_object, "Array": _Array,
            "Holder": _MemoryObjectHolder, "POOL": _POOL_ATTR,
            "held": self.held, "token": object(), "output": self.output,
            "lock": self.lock,
            "templates": self.templates, "NAMES": self.names,
            "batches": self.stats._batches, "counts": self.stats._counts,
            "overflow": self.stats._overflow,
            "fill": cl.enqueue_fill_buffer, "ZERO": _ZERO}

        def buffer(j: int) -> str:
            if j < ninputs:
                return f"buffers[{j}]"
            if j < first_temporary:
                return f"o{j - ninputs}"
            return f"temporaries[{j - first_temporary}]"

        def launches(indent: str, slots: int) -> list[str]:
            code = []
            for n, kernel in enumerate(self.kernels):
                names[f"K{n}"], names[f"G{n}"], names[f"L{n}"] = (
                    kernel[0], kernel[3], kernel[4])
                names[f"S{n}"] = kernel[0].set_arg
                code += [f"{indent}S{n}({i}, {buffer(j)})"
                         for i, j in kernel[slots]]
                if profiled:
                    wait = ("wait_for" if n == 0
                            else f"[e{n - 1}] if chain else None")
                    code.append(f"{indent}e{n} = enqueue(queue, K{n}, G{n}, "
                                f"L{n}, None, {wait}, False, True)")
                else:
                    wait = ("wait_for" if n == 0
                            else "[evt] if chain else None")
                    code.append(f"{indent}evt = enqueue(queue, K{n}, G{n}, "
                                f"L{n}, None, {wait}, False, True)")
            return code

        code = ["def run(queue, info, buffers, wait_for, allocator):"]
        code += [f"    o{k} = allocator({nbytes})"
                 for k, nbytes in enumerate(self.out_nbytes)]
        if len(self.kernels) > 1:
            code.append("    chain = info[1]")
        if self.temporaries:
            code += [
                "    kept = held[0]",
                "    if (kept is not None and kept[0] is token",
                "            and kept[1] is info and kept[2] is allocator):",
                *launches("        ", 2),
                "    else:",
                "        temporaries = [{}]".format(", ".join(
                    f"allocator({nbytes})" for nbytes in self.temporaries)),
                *([
                    "        zeroed = [{}]".format(", ".join(
                        f"fill(queue, temporaries[{j}], ZERO, 0, "
                        f"{self.temporaries[j]})" for j in self.zeroed)),
                    "        if info[1]:",
                    "            wait_for = [*(wait_for or ()), *zeroed]",
                ] if self.zeroed else []),
                "        keep = (not info[1] and allocator is not None",
                "                and allocator is getattr(queue, POOL, None))",
                "        held[0] = ((token, info, allocator, temporaries)",
                "                   if keep else None)",
                *launches("        ", 1),
                "        if not keep:",
                "            for buf in temporaries:",
                "                buf.release()"]
        else:
            code += launches("    ", 1)
        if profiled:
            nkernels = len(self.kernels)
            # KernelProfiler.record_batch, inlined
            code += [f"    evt = e{nkernels - 1}",
                     "    batches.append((NAMES, ({})))".format(
                         "".join(f"e{n}, " for n in range(nkernels))),
                     f"    counts[0] += {nkernels}",
                     "    if counts[0] > counts[1]:",
                     "        overflow()"]
        # the kernels' arguments, their enqueues and the kept temporaries
        # under the executor's lock (see call_locks); the outputs after
        code = [code[0], "    with lock:",
                *(f"    {line}" for line in code[1:])]
        for k in range(noutputs):
            code.append(f"    a{k} = output({k}, o{k}, evt, queue, allocator)"
                        if self.templates is None else
                        f"    if isinstance(o{k}, Holder):\n"
                        f"        attrs = templates[{k}].copy()\n"
                        f"        attrs['queue'] = queue\n"
                        f"        attrs['allocator'] = allocator\n"
                        f"        attrs['base_data'] = o{k}\n"
                        f"        attrs['events'] = [evt]\n"
                        f"        a{k} = new(Array)\n"
                        f"        a{k}.__dict__ = attrs\n"
                        f"    else:\n"
                        f"        a{k} = output({k}, o{k}, evt, queue, allocator)")
        code.append("    return evt, ({})".format(
            "".join(f"a{k}, " for k in range(noutputs))))
        exec(_compiled("\n".join(code), len(self.kernels)), names)
        return names["run"]


#: Functions of fast calls for programs of at least this many kernels are
#: compiled once and their code kept in the program store (see
#: :func:`_compiled`)
STORED_RUN_MIN_KERNELS = 16


def _compiled(source: str, nkernels: int) -> CodeType:
    """The code of the function *source* of a fast call of *nkernels*
    kernels (:meth:`_SizedCall._compile_run`). The code of a program of
    many kernels is compiled once and kept in the program store
    (:mod:`~pytato.target.loopy.store.program_store`, where it is on), under
    a hash of the source and of the interpreter's bytecode version: its
    source has a few lines per kernel argument, so that compiling the one
    of a program of many kernels (the 10 000-node DAG of
    ``benchmarks/bench_codegen.py``) is a visible part of a warm process's
    first call, where loading it is not."""
    if nkernels < STORED_RUN_MIN_KERNELS or not program_store.store_enabled():
        return compile(source, "<pytato fast call>", "exec")
    key = hashlib.sha256(
        f"{sys.implementation.cache_tag}\0{source}".encode()).hexdigest()
    data = program_store.load(key, "fast-call-code")
    if data is not None:
        try:
            return marshal.loads(data)  # type: ignore[no-any-return]
        except (ValueError, EOFError, TypeError):  # pragma: no cover
            pass
    result = compile(source, "<pytato fast call>", "exec")
    program_store.save(key, "fast-call-code", marshal.dumps(result))
    return result


class _NoFastCall(Exception):
    pass
