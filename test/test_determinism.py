"""Generated code is the same in every process: loopy's, pyopencl's and
the OpenCL driver's on-disk caches (and the persistent program store) only
help later processes if it does not depend on the order of sets or dicts,
which differs with Python's hash seed (``PYTHONHASHSEED``)."""

from __future__ import annotations

import os
import subprocess
import sys


_SCRIPT = """
import hashlib, sys
sys.path.insert(0, "test")
import numpy as np, loopy as lp, pytato as pt
from random_graphs import make_random_dag, make_random_graph
from pytato.target.loopy.schedule.default import DeviceInfo

devices = {
    "none": None,
    "cpu": DeviceInfo(kind="cpu", compute_units=2, max_work_group_size=4096),
    "gpu": DeviceInfo(kind="gpu", compute_units=132, max_work_group_size=1024,
                      min_tiled_outputs=0, local_mem_size=48 * 1024)}
graphs = {f"random{s}": make_random_graph(s).outputs for s in range(12)}
graphs["dag"] = make_random_dag(200, seed=1)
x = pt.make_placeholder("x", (1024, 3, 32), np.float64)
y = pt.make_placeholder("y", (2048, 64), np.float64)
m = pt.make_placeholder("m", (20, 20), np.float64)
u = pt.make_placeholder("u", (4096, 20), np.float64)
graphs["reductions"] = {"a": pt.sum(x, axis=(0, 1)), "b": pt.prod(x, axis=0),
                        "c": pt.sum(y, axis=0), "d": pt.sum(y),
                        "e": pt.amax(y, axis=1)}
graphs["einsums"] = {"p": pt.einsum("ij,ej->ei", m, u), "q": (u @ m).T}
with lp.CacheMode(False):
    for name, g in graphs.items():
        for dev_name, dev in devices.items():
            prg = pt.generate_loopy(g, cl_device=dev,
                                    default_schedule=dev is not None)
            code = lp.generate_code_v2(prg.program).device_code()
            print("CODE", name, dev_name,
                  hashlib.sha256(code.encode()).hexdigest())
"""


def test_code_does_not_depend_on_the_hash_seed():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    procs = [subprocess.Popen(
        [sys.executable, "-c", _SCRIPT], cwd=root, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONHASHSEED": str(seed)})
        for seed in (1, 2)]
    outputs = []
    for proc in procs:
        out, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0
        outputs.append([line for line in out.splitlines()
                        if line.startswith("CODE")])
    assert len(outputs[0]) == 15 * 3
    differing = [a.split()[1:3] for a, b in zip(*outputs, strict=True)
                 if a != b]
    assert not differing, differing
