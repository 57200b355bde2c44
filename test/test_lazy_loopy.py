"""A process whose programs are in the program store runs them without
importing :mod:`loopy` (:mod:`pytato.lazy_imports`, issue 20's warm
process); the facts it runs them from
(:mod:`pytato.target.loopy.run.kernel_facts`) and the store's keys
(:mod:`pytato.tuning`) are those of a process that generated them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import pytato as pt
from pytato import tuning
from pytato.target.loopy.store import program_store


ROOT = Path(__file__).resolve().parents[1]

# a graph of sums and element-wise work on two inputs, run with the split
# path on (as on GPUs), its results printed; then whether loopy was
# imported, and the results' digest against numpy's
_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import pyopencl as cl
    import pytato as pt
    assert "loopy" not in sys.modules and "islpy" not in sys.modules
    x = pt.make_placeholder("x", (24, 5), np.float64)
    y = pt.make_placeholder("y", (24, 5), np.float64)
    a = pt.sin(x) * 2 + y
    b = a - pt.sum(a, axis=1).reshape(24, 1)
    out = {"b": b.T @ a, "c": pt.amax(b, axis=0) + pt.sum(x * y)}
    ctx = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(ctx)
    rng = np.random.default_rng(7)
    xv, yv = rng.random((24, 5)), rng.random((24, 5))
    prog = pt.generate_loopy(out)
    _, res = prog(queue, x=xv, y=yv)
    av = np.sin(xv) * 2 + yv
    bv = av - av.sum(axis=1).reshape(24, 1)
    np.testing.assert_allclose(res["b"], bv.T @ av, rtol=1e-12)
    np.testing.assert_allclose(res["c"], bv.max(axis=0) + (xv * yv).sum(),
                               rtol=1e-12)
    print("loopy" in sys.modules, "islpy" in sys.modules)
""")


def _run(store: Path, **env: str) -> list[str]:
    environ = {**os.environ, "PYTATO_PROGRAM_STORE_DIR": str(store),
               "PYTHONPATH": os.pathsep.join(
                   [str(ROOT), os.environ.get("PYTHONPATH", "")]),
               **env}
    environ.pop("PYTATO_NO_PROGRAM_STORE", None)
    proc = subprocess.run([sys.executable, "-c", _SCRIPT], env=environ,
                          capture_output=True, text=True, timeout=600,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.split()


def test_import_pytato_does_not_import_loopy():
    proc = subprocess.run(
        [sys.executable, "-c", "import sys, pytato; "
         "print(sorted(m for m in ('loopy', 'islpy', 'pytato.target.loopy"
         ".lower.graph', 'pytato.target.loopy.schedule.default') "
         "if m in sys.modules))"],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(ROOT), os.environ.get("PYTHONPATH", "")])},
        capture_output=True, text=True, check=True, timeout=300)
    assert proc.stdout.strip() == "[]"
    # the names that import it are there, at first use
    from pytato.analysis import PytatoKeyBuilder
    assert PytatoKeyBuilder.__name__ == "PytatoKeyBuilder"


@pytest.mark.parametrize("split", ["1", "0"])
def test_warm_process_runs_without_loopy(tmp_path, split):
    """The first process generates (importing loopy); the second finds
    everything in the store: on the split path it never imports loopy, and
    its results are right; off it, it reads the unit (loopy's executor)."""
    env = {"PYTATO_SPLIT_KERNELS": split, "PYTATO_SPLIT_WORKERS": "1"}
    assert _run(tmp_path, **env) == ["True", "True"]
    warm = _run(tmp_path, **env)
    if split == "1":
        assert warm == ["False", "False"]
    else:
        assert warm == ["True", "True"]


def test_changed_constants():
    """Constants as their module's code sets them are not in the keys;
    changed (or added, or deleted) ones are."""
    name = "pytato.target.loopy.build.target_parameters"
    module = sys.modules[name]
    assert tuning.changed_constants([name]) == ()
    old = module.MAX_RESTRICT_ARGUMENTS
    try:
        module.MAX_RESTRICT_ARGUMENTS = old + 1
        module.NEW_CONSTANT = 3
        assert tuning.changed_constants([name]) == (
            (f"{name}.MAX_RESTRICT_ARGUMENTS", old + 1),
            (f"{name}.NEW_CONSTANT", 3))
    finally:
        module.MAX_RESTRICT_ARGUMENTS = old
        del module.NEW_CONSTANT
    assert tuning.changed_constants([name]) == ()
    # modules not imported have changed nothing
    assert tuning.changed_constants(["pytato.no_such_module"]) == ()
    # every module of the store's keys records its constants
    for module_name in program_store.TUNING_MODULES:
        __import__(module_name)
        assert tuning.changed_constants([module_name]) == ()


def test_kernel_facts_match_the_kernel():
    """The facts of a scheduled unit: its arguments, shapes, strides,
    temporaries and options, as loopy has them."""
    import loopy as lp

    from pytato.target.loopy.run.kernel_facts import kernel_facts

    x = pt.make_placeholder("x", (8, pt.make_size_param("n")), np.float32)
    prog = pt.generate_loopy({"s": pt.sum(x, axis=0), "t": 2 * x},
                             options=lp.Options(return_dict=True,
                                                no_numpy=True))
    t_unit = prog.program_for()
    knl = t_unit.default_entrypoint
    facts = kernel_facts(t_unit, knl.name)
    assert facts.name == knl.name and facts.pyopencl_target
    assert facts.options.return_dict and facts.options.no_numpy
    assert facts.ninstructions == len(knl.instructions)
    assert [a.name for a in facts.args] == [a.name for a in knl.args]
    by_name = {a.name: a for a in facts.args}
    assert by_name["n"].kind == "value"
    assert by_name["x"].kind == "array" and not by_name["x"].is_output
    assert by_name["x"].dtype == np.float32
    assert by_name["t"].is_output and by_name["t"].strides is not None
    assert len(by_name["t"].strides) == 2
    assert set(facts.temporaries) == set(knl.temporary_variables)
