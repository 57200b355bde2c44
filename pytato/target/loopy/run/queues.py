"""What pytato keeps per :class:`pyopencl.CommandQueue`: the checks and
flags of a queue and its default memory pool.

.. rubric:: Memory of outputs and temporaries

Called without an *allocator*, programs, executables and launchers allocate
their outputs, global temporaries and transferred inputs from a
:class:`pyopencl.tools.MemoryPool` kept per command queue (see
:func:`default_allocator`): a time-stepper calling the same program again
and again then reuses the memory of arrays it has dropped instead of
creating new :class:`pyopencl.Buffer`\\ s on every call. Arrays returned to
the user keep their memory until they are garbage collected; only then is
it handed to later calls.

The pool is per queue, not per context: its memory is reused only by later
commands of the same in-order queue, which run after the kernels that used
it. (A pool shared by the queues of a context could hand memory that a
kernel on one queue still writes to a kernel on another; pyopencl's
:class:`~pyopencl.tools.ImmediateAllocator` is also bound to one queue.)
Out-of-order queues get no pool. As with any pool, an array used on another
queue must be synchronized with before it is dropped.

The pool creates its buffers as :class:`pyopencl.tools.DeferredAllocator`
does (the device memory is taken at the buffer's first use), not through
an :class:`~pyopencl.tools.ImmediateAllocator`, which enqueues a migration
of each new buffer on the queue: NVIDIA's OpenCL driver crashed (a
segmentation fault in a driver thread, or a hang) when that migration was
enqueued on a queue on which another thread was in a blocking transfer,
which a program called from several threads on one queue does (so did
pyopencl alone, with a ``MemoryPool(ImmediateAllocator(queue))`` shared
by threads). So a device out of memory is reported when a kernel is
enqueued (:class:`pyopencl.MemoryError`) rather than when the pool
allocates; ``default_allocator(queue).free_held()`` releases the memory
the pool holds.

To opt out, pass ``allocator=False`` to a call (fresh buffers, as
``allocator=None`` gave before pools were the default), or switch the pools
off for all calls with :func:`set_default_memory_pool`. Any other
*allocator* (a callable of a size in bytes, as for :mod:`pyopencl.array`)
is used as given.

Outputs are new arrays on every call. Global temporaries allocated from
the default pool of an in-order queue are kept by the program (by its
executor on the context) after the call, and used again by its next call
on the same queue with the same size parameters: on an in-order queue
that call runs after the kernels of this one. They go back to the pool
when a call on another queue, with other sizes or with another allocator
takes their place, or with the executor. With any other allocator, and
on out-of-order queues, each call allocates its temporaries and releases
them once its kernels are enqueued. (Programs and executables may be called
from several threads at once, on one queue or on several: see
:mod:`pytato.target.loopy.run.call_locks`.)

.. autofunction:: default_allocator
.. autofunction:: set_default_memory_pool
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

import pyopencl as cl
from pyopencl.tools import DeferredAllocator, MemoryPool

from pytato.diagnostic import InvalidArgumentTypeError
from pytato.launchers import has_profiling, is_out_of_order


__all__ = ["default_allocator", "set_default_memory_pool"]


# {{{ the queue argument

def _check_queue(queue: object) -> None:
    """Raise :class:`~pytato.diagnostic.InvalidArgumentTypeError` naming the
    argument ``queue`` unless it is (or, duck-typed, looks like: has a
    ``context``) a :class:`pyopencl.CommandQueue` (a common slip: passing
    the context)."""
    if not isinstance(queue, cl.CommandQueue) and (
            isinstance(queue, cl.Context) or not hasattr(queue, "context")):
        hint = (" (a pyopencl.Context was given: create a queue with "
                "pyopencl.CommandQueue(context))"
                if isinstance(queue, cl.Context) else "")
        raise InvalidArgumentTypeError(
            "argument 'queue': expected a pyopencl.CommandQueue, got "
            f"{type(queue).__name__}{hint}")


# the attribute of a queue holding its _queue_info (the fast calls read
# it as ``queue._pytato_queue_info``)
_QUEUE_INFO_ATTR = "_pytato_queue_info"


def _queue_info(queue: cl.CommandQueue) -> tuple[bool, bool, int]:
    """``(profiling, out_of_order, context)`` of *queue*: its flags and the
    address of its context (``int_ptr``), cached on the queue object (they
    cannot change; reading them costs OpenCL calls)."""
    try:
        return getattr(queue, _QUEUE_INFO_ATTR)  # type: ignore[no-any-return]
    except AttributeError:
        pass
    _check_queue(queue)
    info = (has_profiling(queue), is_out_of_order(queue),
            queue.context.int_ptr)
    try:
        setattr(queue, _QUEUE_INFO_ATTR, info)
    except (AttributeError, TypeError):
        pass
    return info

# }}}


# {{{ default allocator: a memory pool per queue

# the pool lives in an attribute of the queue object (command queues cannot
# be weakly referenced; the pool's allocator holds the OpenCL queue, not the
# Python object, so the pool goes away with the queue object); the fast
# calls read it as ``queue._pytato_default_memory_pool``
_POOL_ATTR = "_pytato_default_memory_pool"
# read by the fast calls as ``queues._USE_DEFAULT_POOL`` (see
# set_default_memory_pool)
_USE_DEFAULT_POOL = True
# one pool per queue, also when threads ask for it at once
_POOL_CREATION_LOCK = threading.Lock()


def set_default_memory_pool(enabled: bool) -> bool:
    """Switch the default memory pools (see :func:`default_allocator`) on or
    off for all later calls that pass no *allocator*; with *enabled* false,
    such calls allocate fresh :class:`pyopencl.Buffer`\\ s. Returns the
    previous setting. Pools already created are kept (with their memory)
    until their queues are garbage collected; call
    ``default_allocator(queue).free_held()`` to release their unused
    memory earlier."""
    global _USE_DEFAULT_POOL
    previous = _USE_DEFAULT_POOL
    _USE_DEFAULT_POOL = bool(enabled)
    return previous


def default_allocator(queue: cl.CommandQueue) -> MemoryPool | None:
    """The :class:`pyopencl.tools.MemoryPool` that programs use on *queue*
    when called without an *allocator* (created on first use, over a
    :class:`pyopencl.tools.DeferredAllocator` of its context (see the
    module's docstring for why not an immediate one), and kept as long
    as the *queue* object), or *None* for out-of-order queues (and queue
    objects that cannot hold it). Its ``held_blocks``, ``active_blocks``
    and ``free_held()`` inspect and release the pooled memory. Ignores
    :func:`set_default_memory_pool`."""
    try:
        return getattr(queue, _POOL_ATTR)  # type: ignore[no-any-return]
    except AttributeError:
        pass
    with _POOL_CREATION_LOCK:
        try:
            return getattr(queue, _POOL_ATTR)  # type: ignore[no-any-return]
        except AttributeError:
            pass
        pool = None
        if not (queue.properties
                & cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE):
            with warnings.catch_warnings():
                # pyopencl warns that pools expect immediate allocators
                # (for the reason in the module's docstring, not this one)
                warnings.simplefilter("ignore", UserWarning)
                pool = MemoryPool(DeferredAllocator(queue.context))
        try:
            setattr(queue, _POOL_ATTR, pool)
        except (AttributeError, TypeError):
            return None
        return pool


def _allocator_for(queue: cl.CommandQueue, allocator: Any) -> Any:
    """The allocator a call with *allocator* uses: *None* selects the
    default pool, *False* fresh buffers (loopy's *None*)."""
    if allocator is None:
        if not _USE_DEFAULT_POOL:
            return None
        try:
            return getattr(queue, _POOL_ATTR)
        except AttributeError:
            return default_allocator(queue)
    if allocator is False:
        return None
    return allocator

# }}}

# vim: foldmethod=marker
