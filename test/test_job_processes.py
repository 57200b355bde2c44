"""Tests of jobs handed to worker processes one at a time
(:mod:`pytato.target.loopy.build.job_processes`), and of the split path's
code generation started while the kernel is split."""

from __future__ import annotations

import io
import json
import sys
import time

import numpy as np
import pyopencl as cl
import pytest
from random_graphs import make_random_graph

import pytato as pt
from pytato.target.loopy.build import split, split_build
from pytato.target.loopy.build.job_processes import (
    JobProcessError,
    JobProcesses,
    read_frame,
    write_frame,
)
from pytato.target.loopy.build.parallel_builds import start_processes
from pytato.target.loopy.run import split_executor
from pytato.target.loopy.run.kernel_facts import kernel_facts
from pytato.target.loopy.store.program_cache import PROGRAM_CACHE


# answers each job with "header:job:number of jobs it answered so far"; a
# job "die" makes it exit with an error, a job "slow" sleeps first
_SCRIPT = """
import json, sys, time
sys.path[:0] = json.loads(sys.argv[1])
from pytato.target.loopy.build.job_processes import read_frame, write_frame
header = read_frame(sys.stdin.buffer)
n = 0
while (job := read_frame(sys.stdin.buffer)) is not None:
    if job == b"die":
        sys.stderr.write("dying on purpose")
        sys.exit(5)
    if job == b"slow":
        time.sleep(0.5)
    n += 1
    write_frame(sys.stdout.buffer, header + b":" + job + b":" + str(n).encode())
sys.stderr.write("bye")
"""


def _procs(count: int) -> list:
    return start_processes(_SCRIPT, count, [json.dumps(sys.path)])


def test_frames_round_trip():
    stream = io.BytesIO()
    for data in (b"a", b"", b"x" * 100_000):
        write_frame(stream, data)
    stream.seek(0)
    assert read_frame(stream) == b"a"
    assert read_frame(stream) is None  # the end frame
    assert read_frame(stream) == b"x" * 100_000
    with pytest.raises(EOFError):
        read_frame(stream)
    truncated = io.BytesIO()
    write_frame(truncated, b"abcdef")
    with pytest.raises(EOFError):
        read_frame(io.BytesIO(truncated.getvalue()[:-2]))


def test_costliest_job_first():
    """One process gets the jobs waiting in order of decreasing cost."""
    procs = _procs(1)
    jobs = JobProcesses(procs, b"h", "test")
    # (the first job keeps the process busy while the others queue up)
    jobs.submit("first", 0, lambda: b"slow")
    time.sleep(0.2)
    for key, cost in (("cheap", 1), ("dear", 10), ("middle", 5)):
        jobs.submit(key, cost, lambda key=key: key.encode())
    results = jobs.results()
    assert results["first"] == b"h:slow:1"
    assert results["dear"] == b"h:dear:2"
    assert results["middle"] == b"h:middle:3"
    assert results["cheap"] == b"h:cheap:4"
    assert all(p.returncode == 0 for p in procs)


def test_jobs_spread_over_processes_while_submitted():
    """Jobs submitted while the processes work, and after, are all
    answered, each by one process; every process exits."""
    procs = _procs(3)
    jobs = JobProcesses(procs, b"h", "test")
    for k in range(5):
        jobs.submit(k, k, lambda k=k: str(k).encode())
    time.sleep(0.1)
    for k in range(5, 12):
        jobs.submit(k, 0, lambda k=k: str(k).encode())
    jobs.close()
    with pytest.raises(ValueError):
        jobs.submit(99, 0, lambda: b"99")
    results = jobs.results()
    assert sorted(results) == list(range(12))
    for k, answer in results.items():
        assert answer.startswith(f"h:{k}:".encode())
    assert all(p.returncode == 0 for p in procs)


def test_no_jobs():
    procs = _procs(2)
    jobs = JobProcesses(procs, b"h", "test")
    assert jobs.results() == {}
    assert all(p.returncode == 0 for p in procs)


def test_failed_process_raises_with_its_errors():
    """A process that dies gives a :class:`JobProcessError` with the end
    of its standard error; the others are stopped."""
    procs = _procs(2)
    jobs = JobProcesses(procs, b"h", "test")
    jobs.submit("a", 1, lambda: b"die")
    for k in range(4):
        jobs.submit(k, 0, lambda k=k: b"slow")
    with pytest.raises(JobProcessError, match="dying on purpose"):
        jobs.results()
    for p in procs:
        p.wait(timeout=30)


def test_input_error_is_raised():
    """An error making a job's input is raised by ``results``."""
    procs = _procs(1)
    jobs = JobProcesses(procs, b"h", "test")

    def bad() -> bytes:
        raise KeyError("no input")

    jobs.submit("a", 1, bad)
    with pytest.raises(KeyError, match="no input"):
        jobs.results()
    procs[0].wait(timeout=30)


def test_cancel_stops_processes():
    procs = _procs(2)
    jobs = JobProcesses(procs, b"h", "test")
    jobs.submit("a", 1, lambda: b"slow")
    jobs.cancel()
    for p in procs:
        p.wait(timeout=30)
    with pytest.raises(JobProcessError, match="cancelled"):
        jobs.results()


def test_sub_units_generated_while_split(ctx_factory, monkeypatch):
    """With worker processes, the split path hands each sub-unit to them as
    soon as the split makes it (before the split ends); the results equal
    numpy's, and the program store is not needed."""
    monkeypatch.setenv(split.SPLIT_ENV, "1")
    monkeypatch.setenv(split.SPLIT_WORKERS_ENV, "2")
    monkeypatch.setenv("PYTATO_NO_PROGRAM_STORE", "1")
    monkeypatch.setattr(split_build, "MIN_INSTRUCTIONS_PER_WORKER", 1)
    PROGRAM_CACHE.clear()
    ctx = ctx_factory()
    queue = cl.CommandQueue(ctx)
    rg = make_random_graph(5)
    prog = pt.generate_loopy(rg.outputs, cl_device=queue.device)
    t_unit = prog.program
    (entrypoint,) = t_unit.entrypoints

    state = {"split_done": False, "during": 0, "after": 0}
    real_split = split_executor.split_kernel
    real_submit = JobProcesses.submit

    def recording_split(*args, **kwargs):
        result = real_split(*args, **kwargs)
        state["split_done"] = True
        return result

    def recording_submit(self, *args, **kwargs):
        state["after" if state["split_done"] else "during"] += 1
        return real_submit(self, *args, **kwargs)

    monkeypatch.setattr(split_executor, "split_kernel", recording_split)
    monkeypatch.setattr(JobProcesses, "submit", recording_submit)
    generated = split_build.STATS["generated"]
    exe = split_executor.make_split_executor(
        kernel_facts(t_unit, entrypoint), ctx, lambda: t_unit)
    if exe is None:
        pytest.skip("graph not split")
    distinct = len({u.key for u in exe.units})
    assert state["during"] == distinct
    assert state["after"] == 0
    _, out = exe(queue, **rg.inputs, **prog.bound_arguments)
    assert split_build.STATS["generated"] - generated == distinct
    for name, ref in rg.expected.items():
        np.testing.assert_allclose(out[name], ref, rtol=1e-10, atol=1e-12)
