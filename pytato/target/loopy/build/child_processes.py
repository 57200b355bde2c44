"""Helper processes that do not outlive the process that started them.

Code generation and device builds run in Python processes of their own
(:func:`~pytato.target.loopy.build.parallel_builds.start_processes`, the
kernel primer of :mod:`~pytato.target.loopy.build.jit_primer`). A process
killed during a long first call (``SIGKILL``, the out-of-memory killer)
runs no clean-up, and a helper busy with a job (loopy, the device
compiler) does not read the pipe from its parent, so it would not notice
that the parent is gone and would run on for minutes.

:func:`start_child` starts each such process with :data:`PARENT_WATCH`
run first in it, which makes it exit when its parent does:

* on Linux, ``prctl(PR_SET_PDEATHSIG, SIGKILL)``: the kernel kills the
  helper when the thread that started it exits. This is only asked for
  when that thread is the main thread (which lives as long as the
  process): a helper started from a thread of a thread pool would
  otherwise be killed when that thread ends, with its parent alive;
* everywhere, a daemon thread in the helper that checks every
  :data:`POLL_SECONDS` whether its parent process changed
  (:func:`os.getppid`: an orphan is adopted by another process), and
  ends the helper (:func:`os._exit`) when it did, or if the parent was
  gone already when the helper started.

.. autodata:: PARENT_WATCH
.. autodata:: POLL_SECONDS
.. autofunction:: child_script
.. autofunction:: start_child
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import Any


__all__ = ["PARENT_WATCH", "POLL_SECONDS", "child_script", "start_child"]

#: How often (seconds) a helper process checks that its parent lives.
POLL_SECONDS = 0.2

#: Python source run first in a helper process (see the module
#: documentation), defining ``_pt_watch_parent(parent_pid, deathsig,
#: poll)``.
PARENT_WATCH = """
def _pt_watch_parent(parent, deathsig, poll):
    import os, sys, threading, time
    if deathsig and sys.platform.startswith("linux"):
        try:
            import ctypes, signal
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        except Exception:
            pass
    if os.getppid() != parent:  # the parent died before the prctl
        os._exit(1)

    def watch():
        while os.getppid() == parent:
            time.sleep(poll)
        os._exit(1)

    threading.Thread(target=watch, daemon=True,
                     name="pytato-parent-watch").start()
"""


def child_script(script: str) -> str:
    """*script* (Python source, for ``python -c``) preceded by
    :data:`PARENT_WATCH` and its call for a helper started by this
    process from the current thread."""
    deathsig = threading.current_thread() is threading.main_thread()
    return (f"{PARENT_WATCH}\n"
            f"_pt_watch_parent({os.getpid()}, {deathsig}, {POLL_SECONDS})\n"
            f"del _pt_watch_parent\n"
            f"{script}")


def start_child(script: str, args: Sequence[str] = (),
                **popen_kwargs: Any) -> subprocess.Popen[bytes]:
    """Start ``python -c`` *script* with the arguments *args* (and the
    keyword arguments *popen_kwargs* of :class:`subprocess.Popen`) as a
    helper process that exits when this process does (see
    :func:`child_script`)."""
    return subprocess.Popen(
        [sys.executable, "-c", child_script(script), *args],
        **popen_kwargs)

# vim: foldmethod=marker
