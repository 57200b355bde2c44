"""The locks that make a program safe to call from several threads.

A :mod:`loopy` executor's kernels (:class:`pyopencl.Kernel` objects) are
shared by all calls of the executor: their arguments are set, then the
kernel is enqueued, and :meth:`pyopencl.Kernel.set_arg` is not safe to
call from several threads on one kernel (another thread may set an
argument between the setting and the enqueue). Each executor has a lock
(:func:`executor_lock`) that the calls hold while they set the arguments
of its kernels and enqueue them, and while they read or change what their
calls keep for the next call (the temporaries kept by the fast path,
see :mod:`pytato.target.loopy.run.fast_call`). It is held for no more:
the checks of the arguments, transfers from the host and the reading of
results to the host run outside it, and calls of different executors
(programs, contexts) never wait for each other.

.. rubric:: Calls from several threads

A program (:class:`~pytato.target.loopy.run.programs.BoundPyOpenCLProgram`)
or an executable
(:class:`~pytato.target.loopy.run.programs.BoundPyOpenCLExecutable`) may be
called from any number of threads at once, on one queue shared by them or on
queues of their own, with the results of calls made one after the other. Its
kernels are shared by its calls, so each call sets their arguments and
enqueues them holding the lock of the program's executor (one per context,
see :mod:`pytato.target.loopy.run.call_locks`); what a call keeps for the
next one (the global temporaries kept on an in-order queue, the events of
the inputs) is taken and kept under that lock too. The lock is held for no
more than that: the argument checks, transfers of numpy inputs and results,
and the device's work are not serialized, and the fast path of
single-threaded calls costs the same (one uncontended lock). The first call
on a context (or, for a deferred schedule, a device) schedules and builds
the program once: threads calling at once wait for the first. Calls that go
through :mod:`loopy`'s invoker (the first call and calls that the fast path
does not handle) run whole under the executor's lock. The statistics of
calls on queues with profiling enabled count every call's kernels, and may
be read while other threads call the program.

A :class:`~pytato.target.loopy.run.launcher.ProgramLauncher`
(:meth:`BoundPyOpenCLProgram.launcher`) has kernels of its own with its
arguments set: make one launcher per thread rather than sharing one.

.. autofunction:: executor_lock
"""

from __future__ import annotations

import threading
import weakref
from typing import Any


_LOCKS: weakref.WeakKeyDictionary[Any, threading.RLock] = (
    weakref.WeakKeyDictionary())
_LOCKS_LOCK = threading.Lock()


def executor_lock(executor: Any) -> threading.RLock:
    """The lock of the :mod:`loopy` executor *executor* (created on first
    use; reentrant), held by its calls while they set the arguments of its
    kernels, enqueue them, and use the state kept between calls."""
    lock = _LOCKS.get(executor)
    if lock is None:
        with _LOCKS_LOCK:
            lock = _LOCKS.get(executor)
            if lock is None:
                lock = _LOCKS[executor] = threading.RLock()
    return lock
