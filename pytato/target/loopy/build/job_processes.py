"""Jobs handed to worker processes one at a time, each to the first process
that is free, while more jobs may still be coming.

:func:`~pytato.target.loopy.build.parallel_builds.run_in_processes` gives
each process all of its input at once. For jobs of unequal and roughly
known cost (the sub-units of a split kernel,
:mod:`pytato.target.loopy.build.split_build`), a static share per process
leaves some processes idle while others still work, and the first jobs
wait until the last is known. :class:`JobProcesses` instead keeps a queue
of jobs, the costliest first, from which a thread per process takes the
next job each time its process answered the previous one. Jobs may be
submitted while the processes already work (:meth:`JobProcesses.submit`,
then :meth:`JobProcesses.close`).

The processes speak in frames (:func:`write_frame`, :func:`read_frame`): a
header frame first, then a frame per job, to which the process answers
with a frame, and an empty frame for the end, after which the process
finishes what it does in the background and exits.

.. autofunction:: write_frame
.. autofunction:: read_frame
.. autoclass:: JobProcesses
.. autoexception:: JobProcessError
"""

from __future__ import annotations

import heapq
import itertools
import logging
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from typing import IO

from pytato.target.loopy.build.parallel_builds import stop_processes


__all__ = ["JobProcessError", "JobProcesses", "read_frame", "write_frame"]

_logger = logging.getLogger("pytato.target.loopy")

_LENGTH = struct.Struct("<Q")


def write_frame(stream: IO[bytes], data: bytes) -> None:
    """Write *data* to *stream* as a frame (its length, then itself), and
    flush. An empty *data* is the end frame."""
    stream.write(_LENGTH.pack(len(data)))
    stream.write(data)
    stream.flush()


def _read_exactly(stream: IO[bytes], count: int) -> bytes:
    chunks = []
    while count:
        chunk = stream.read(count)
        if not chunk:
            raise EOFError("stream ended inside a frame")
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


def read_frame(stream: IO[bytes]) -> bytes | None:
    """The data of the next frame of *stream*, None for the end frame.

    :raises EOFError: if *stream* ends before the frame does.
    """
    (length,) = _LENGTH.unpack(_read_exactly(stream, _LENGTH.size))
    if not length:
        return None
    return _read_exactly(stream, length)


class JobProcessError(RuntimeError):
    """A worker process of :class:`JobProcesses` failed: it exited with an
    error, or stopped answering."""


class JobProcesses:
    """Jobs run by the worker processes *procs* (started by
    :func:`~pytato.target.loopy.build.parallel_builds.start_processes`, each
    running a script that reads *header*, then answers each job frame with
    a frame until the end frame, see the module documentation).

    A thread per process sends it the costliest job waiting, when it has
    answered the previous one. A job's input is made (:meth:`submit`'s
    *make_input*) in that thread, just before it is sent.

    :arg what: what the processes do, for messages.
    :arg error_chars: how much of a failed process's standard error its
        error shows (the end).

    .. automethod:: submit
    .. automethod:: close
    .. automethod:: results
    .. automethod:: cancel
    """

    def __init__(self, procs: Sequence[subprocess.Popen[bytes]],
                 header: bytes, what: str, error_chars: int = 2000) -> None:
        self.procs = list(procs)
        self.header = header
        self.what = what
        self.error_chars = error_chars
        self._lock = threading.Condition()
        # (minus the cost, submission number, key, input maker)
        self._waiting: list[tuple[float, int, Hashable,
                                  Callable[[], bytes]]] = []
        self._numbers = itertools.count()
        self._closed = False
        self._results: dict[Hashable, bytes] = {}
        self._error: BaseException | None = None
        self._errors: list[bytes] = [b""] * len(self.procs)
        self._start = time.perf_counter()
        self._threads = []
        for k in range(len(self.procs)):
            err_reader = threading.Thread(
                target=self._read_errors, args=(k,), daemon=True,
                name="pytato-job-errors")
            err_reader.start()
            thread = threading.Thread(target=self._serve, args=(k, err_reader),
                                      daemon=True, name="pytato-jobs")
            thread.start()
            self._threads.append(thread)

    def submit(self, key: Hashable, cost: float,
               make_input: Callable[[], bytes]) -> None:
        """Queue the job *key* of the estimated *cost*: the next free
        process gets the input that *make_input* returns."""
        with self._lock:
            if self._closed:
                raise ValueError("no jobs can be submitted after close()")
            heapq.heappush(self._waiting,
                           (-cost, next(self._numbers), key, make_input))
            self._lock.notify()

    def close(self) -> None:
        """Say that no more jobs come: each process gets the end frame when
        no job is left, and exits after its background work."""
        with self._lock:
            self._closed = True
            self._lock.notify_all()

    def results(self) -> dict[Hashable, bytes]:
        """Wait for all processes to exit (after :meth:`close`), and return
        the answer to each job by its key.

        :raises JobProcessError: if a process failed (the processes left
            are stopped).
        """
        self.close()
        for thread in self._threads:
            thread.join()
        if self._error is not None:
            raise self._error
        return self._results

    def cancel(self) -> None:
        """Stop the processes, answered or not (no more jobs are sent)."""
        with self._lock:
            self._closed = True
            self._waiting.clear()
            if self._error is None:
                self._error = JobProcessError(f"{self.what}: cancelled")
            self._lock.notify_all()
        stop_processes(self.procs)

    def _next(self) -> tuple[Hashable, Callable[[], bytes]] | None:
        with self._lock:
            while not self._waiting and not self._closed \
                    and self._error is None:
                self._lock.wait()
            if self._error is not None or not self._waiting:
                return None
            _, _, key, make_input = heapq.heappop(self._waiting)
            return key, make_input

    def _read_errors(self, k: int) -> None:
        stream = self.procs[k].stderr
        if stream is not None:
            self._errors[k] = stream.read()

    def _fail(self, error: BaseException) -> None:
        with self._lock:
            if self._error is None:
                self._error = error
            self._waiting.clear()
            self._lock.notify_all()
        stop_processes(self.procs)

    def _serve(self, k: int, err_reader: threading.Thread) -> None:
        proc = self.procs[k]
        assert proc.stdin is not None and proc.stdout is not None
        try:
            try:
                write_frame(proc.stdin, self.header)
                while (job := self._next()) is not None:
                    key, make_input = job
                    write_frame(proc.stdin, make_input())
                    answer = read_frame(proc.stdout)
                    if answer is None:
                        raise EOFError("end frame instead of an answer")
                    with self._lock:
                        self._results[key] = answer
                write_frame(proc.stdin, b"")
                proc.stdin.close()
                proc.wait()
            except (OSError, EOFError, ValueError) as e:
                # (a pipe closed by a process that died, or by cancel())
                stop_processes([proc])
                if self._error is None:
                    err_reader.join()
                    raise JobProcessError(
                        f"{self.what} process failed ({e}): "
                        + self._errors[k].decode(errors="replace")[
                            -self.error_chars:]) from e
                return
            err_reader.join()
            err = self._errors[k].decode(errors="replace")
            _logger.debug("%s process %d done after %.2f s%s", self.what, k,
                          time.perf_counter() - self._start,
                          f": {err[-self.error_chars:]}" if err else "")
            if proc.returncode != 0:
                raise JobProcessError(f"{self.what} process failed: "
                                      + err[-self.error_chars:])
        except BaseException as e:
            self._fail(e)

# vim: foldmethod=marker
