"""The loopy backend's module paths from before it was split into stages
still import, with a deprecation warning naming the new path."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from pytato.target.loopy._compat import MOVED_MODULES, new_paths


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_old_path_imports(old):
    news = [importlib.import_module(name) for name in new_paths(old)]
    code = (
        "import warnings, importlib\n"
        "warnings.simplefilter('error')\n"
        "import pytato.target.loopy\n"
        "try:\n"
        f"    importlib.import_module({old!r})\n"
        "except DeprecationWarning as e:\n"
        "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, check=True).stdout
    assert all(name in out for name in new_paths(old))
    # same objects through the old path
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        mod = importlib.import_module(old)
    for new in news:
        public = [n for n in getattr(new, "__all__", dir(new))
                  if not n.startswith("_")]
        assert public
        for name in public[:20]:
            assert getattr(mod, name) is getattr(new, name)


def test_reference_codegen_path():
    import pytato as pt
    from pytato.target.loopy import codegen
    from pytato.target.loopy.lower import graph
    assert codegen.CodeGenMapper is graph.CodeGenMapper
    assert codegen.generate_loopy is pt.generate_loopy


def test_schedule_package_keeps_module_names():
    from pytato.target.loopy import schedule
    from pytato.target.loopy.schedule.default import default_schedule
    assert schedule.default_schedule is default_schedule
    assert schedule.DeviceInfo.__name__ == "DeviceInfo"
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = schedule.no_such_name


def test_schedule_names_moved_within_the_stage():
    """The device description and the names that moved out of
    ``schedule.default`` and ``schedule.tiling`` (into ``device``,
    ``schedule.outputs`` and ``schedule.tiling_plan``) are the same objects
    at their former paths."""
    from pytato.target.loopy import device, schedule
    from pytato.target.loopy.schedule import default, outputs, tiling, tiling_plan
    assert schedule.DeviceInfo is device.DeviceInfo
    assert default.DeviceInfo is device.DeviceInfo
    assert default.SILENCED_WRITE_RACES == outputs.SILENCED_WRITE_RACES
    for name in ("MAX_REDUCTION_EXTENT", "LOCAL_MEMORY_BUDGET",
                 "PRIVATE_MEMORY_BUDGET", "DEFAULT_BLOCKS",
                 "MIN_GROUPS_PER_UNIT", "MAX_ELEMENTS_PER_ITEM"):
        assert getattr(tiling, name) == getattr(tiling_plan, name)
    for name in ("ITEM_LOCAL_MEMORY_BUDGET", "ITEM_LOCAL_MEMORY_RESERVE"):
        assert getattr(tiling, name) == getattr(device, name)
    assert tiling.plan_tiling is tiling_plan.plan_tiling
    assert tiling.TilingPlan is tiling_plan.TilingPlan
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = tiling.no_such_name
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = default.no_such_name
