"""The benchmark scripts still run: ``benchmarks/bench_user_path.py``,
``benchmarks/bench_cpu_ceiling.py`` and ``benchmarks/bench_dg_step.py``
(when arraycontext is importable) at small sizes on the test device, their
results checked against numpy by the scripts themselves (exit status 1 on a
mismatch)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyopencl as cl
import pytest


ROOT = Path(__file__).resolve().parent.parent


def _ctx_spec(device: cl.Device) -> str:
    """``PYOPENCL_CTX`` naming *device* (platform and device indices)."""
    for i, platform in enumerate(cl.get_platforms()):
        for j, dev in enumerate(platform.get_devices()):
            if dev.int_ptr == device.int_ptr:
                return f"{i}:{j}"
    raise LookupError(f"device {device.name} not found among the platforms")


def _run_script(cl_ctx: cl.Context, script: str, *args: str) -> str:
    """The standard output of ``benchmarks/<script>`` run with *args* on the
    test device (asserting exit status 0: the scripts exit with 1 on a
    result that differs from the reference)."""
    env = dict(os.environ)
    env.pop("PYOPENCL_TEST", None)
    env["PYOPENCL_CTX"] = _ctx_spec(cl_ctx.devices[0])
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_bench_user_path_runs(cl_ctx: cl.Context) -> None:
    out = _run_script(cl_ctx, "bench_user_path.py", "--small", "--runs", "1",
                      "--rounds", "2", "--settle", "0", "--only", "sum 1-D")
    rows = [line for line in out.splitlines()
            if line.startswith("| sum 1-D |")]
    # one row per path, each with its result checked ("yes")
    assert len(rows) == 2, out
    assert all(row.rstrip().endswith("| yes |") for row in rows), out
    assert "median over 2 rounds" in out


def test_bench_cpu_ceiling_runs(cl_ctx: cl.Context) -> None:
    out = _run_script(cl_ctx, "bench_cpu_ceiling.py", "--small", "--runs",
                      "1", "--rounds", "1", "--settle", "0")
    rows = [line for line in out.splitlines() if line.startswith("| pytato ")]
    assert len(rows) == 3, out


def test_bench_dg_step_runs(cl_ctx: cl.Context) -> None:
    """The DG time step of issue 40 through the client arraycontext: one
    tiny configuration per dimension, its first step checked against the
    script's numpy implementation ("yes" in the row; a mismatch exits 1)."""
    pytest.importorskip("arraycontext")
    out = _run_script(cl_ctx, "bench_dg_step.py", "--dim", "2", "3",
                      "--order", "2", "--elements", "50", "--steps", "2")
    rows = [line for line in out.splitlines() if line.startswith("| 2 |")
            or line.startswith("| 3 |")]
    assert len(rows) == 2, out
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[-2] == "yes", row
        # every launch is parallel: more than one work-item per group
        for launch in cells[-1].split(", "):
            assert not launch.endswith("x1"), row
