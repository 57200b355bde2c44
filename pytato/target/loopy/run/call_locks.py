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
