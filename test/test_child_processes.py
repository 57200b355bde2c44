"""Helper processes (code generation, device builds, the kernel primer)
exit when the process that started them dies
(:mod:`pytato.target.loopy.build.child_processes`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from pytato.target.loopy.build import child_processes, jit_primer


pytestmark = pytest.mark.skipif(not hasattr(os, "getppid")
                                or sys.platform == "win32",
                                reason="POSIX processes")

# the parent: starts helpers that are busy (a loop that neither reads its
# input nor ends, as a worker inside a long loopy job or device build),
# through start_processes from the main thread and from a thread that
# ends, and a real split-build worker (which imports loopy first); prints
# their process ids, then waits to be killed
_PARENT = """
import json, sys, threading, time
sys.path[:0] = json.loads(sys.argv[1])
from pytato.target.loopy.build.parallel_builds import start_processes
from pytato.target.loopy.build.split_build import _start_workers
busy = "x = 0\\nwhile True:\\n    x += 1\\n"
procs = start_processes(busy, 2)
from_thread = []
thread = threading.Thread(
    target=lambda: from_thread.extend(start_processes(busy, 1)))
thread.start()
thread.join()
procs += from_thread + _start_workers(1)
print(" ".join(str(p.pid) for p in procs), flush=True)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    """Whether process *pid* runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    except OSError:  # pragma: no cover (no /proc)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return state not in ("Z", "X")


def test_helpers_exit_when_parent_is_killed():
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT, json.dumps(sys.path)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        pids = [int(p) for p in parent.stdout.readline().split()]
        assert len(pids) == 4
        time.sleep(0.5)  # busy by now
        assert all(_alive(pid) for pid in pids)
        # the thread that started one of them ended: it still runs
        # (PR_SET_PDEATHSIG is only asked for from the main thread)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in pids) \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        survivors = [pid for pid in pids if _alive(pid)]
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
    for pid in survivors:  # (clean up after a failure)
        os.kill(pid, signal.SIGKILL)
    assert not survivors


def test_helper_exits_if_parent_gone_at_start():
    """A helper whose parent is not the process named in its watch (here:
    started with the id of a process that is not its parent) exits at
    once, before running its script."""
    script = child_processes.child_script("print('ran')")
    script = script.replace(f"_pt_watch_parent({os.getpid()},",
                            f"_pt_watch_parent({os.getpid() + 10**6},")
    proc = subprocess.run([sys.executable, "-c", script],
                          capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 1
    assert "ran" not in proc.stdout


def test_helper_runs_while_parent_lives():
    proc = child_processes.start_child(
        "import sys, time\ntime.sleep(3 * float(sys.argv[1]))\nprint('ok')",
        [str(child_processes.POLL_SECONDS)], stdout=subprocess.PIPE)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert out.strip() == b"ok"


def test_primer_is_watched(monkeypatch):
    """The kernel primer is started as a watched helper."""
    started = []

    def fake_start(script, args=(), **kwargs):
        started.append(script)
        raise OSError("not started in this test")

    monkeypatch.setattr(jit_primer, "start_child", fake_start)
    cl = pytest.importorskip("pyopencl")
    device = cl.get_platforms()[0].get_devices()[0]
    assert jit_primer.start_primer(device, ["kernel void f() {}"], None,
                                   []) is None
    (script,) = started
    assert script == jit_primer._PRIMER
    assert "_pt_watch_parent" in child_processes.child_script(script)
