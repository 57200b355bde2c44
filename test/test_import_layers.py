"""The layers of the package import one way: the array nodes know nothing of
the front end, the printer or the targets; transforms and analyses know
nothing of the targets. Arrays still get their numpy-like methods whatever
module path their class is imported from."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest


PYTATO = Path(__file__).resolve().parent.parent / "pytato"


def _runtime_imports(path: Path) -> list[str]:
    """The modules *path* imports at run time (anywhere but under
    ``if TYPE_CHECKING:``)."""
    tree = ast.parse(path.read_text())
    type_checking = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            type_checking.update(id(sub) for sub in ast.walk(node))
    result = []
    for node in ast.walk(tree):
        if id(node) in type_checking:
            continue
        if isinstance(node, ast.ImportFrom) and node.module:
            result.append(node.module)
            result.extend(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            result.extend(a.name for a in node.names)
    return result


@pytest.mark.parametrize(("package", "forbidden"), [
    ("array", ("pytato.frontend", "pytato.stringifier", "pytato.target",
               "pytato.transform", "pytato.visualization")),
    ("transform", ("pytato.target",)),
    ("analysis", ("pytato.target",)),
    ("frontend", ("pytato.target",)),
])
def test_package_does_not_import(package: str, forbidden: tuple[str, ...]) -> None:
    paths = sorted((PYTATO / package).rglob("*.py"))
    assert len(paths) > 3
    offenders = [
        f"{path.relative_to(PYTATO.parent)}: {name}"
        for path in paths
        for name in _runtime_imports(path)
        if any(name == f or name.startswith(f + ".") for f in forbidden)]
    assert not offenders


@pytest.mark.parametrize("statement", [
    "from pytato.array.base import Array",
    "from pytato.array import Array",
    "import pytato.array.sparse",
])
def test_arrays_have_methods_from_any_import_path(statement: str) -> None:
    code = f"""{statement}
import numpy as np
import pytato.array as pa
from pytato.array.base import Array
from pytato.array.sparse import SparseMatrix
x = pa.make_placeholder("x", (3, 4), np.float64)
y = (2 * x + 1).T.sum(axis=0)
assert isinstance(y, Array) and y.shape == (3,)
assert x[1].shape == (4,) and (x ** 2).dtype == np.float64
assert repr(x).startswith("Placeholder(")
assert pa.zeros((2,)).shape == (2,) and pa.where is not None
assert callable(SparseMatrix.to_dense)
"""
    subprocess.run([sys.executable, "-c", code], check=True,
                   cwd=PYTATO.parent)


# {{{ packages import each other one way

def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PYTATO.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package_of(module: str) -> str:
    """The package *module* belongs to for cycles: ``pytato.X`` for the
    modules of a subpackage ``pytato/X/``, each stage (and each module
    shared by the stages) of the loopy backend on its own, the other
    targets each on its own, and a top-level module itself."""
    parts = module.split(".")
    if module.startswith("pytato.target."):
        return ".".join(parts[:4 if parts[2] == "loopy" else 3])
    if len(parts) >= 2 and (PYTATO / parts[1]).is_dir():
        return ".".join(parts[:2])
    return module


def _package_graph() -> dict[str, dict[str, list[str]]]:
    """For each package, the packages it imports at run time (anywhere but
    under ``if TYPE_CHECKING:``, in functions too), each with the modules
    that import it."""
    modules = {_module_name(p): p for p in PYTATO.rglob("*.py")}
    graph: dict[str, dict[str, list[str]]] = {}
    for module, path in modules.items():
        src = _package_of(module)
        edges = graph.setdefault(src, {})
        for name in _runtime_imports(path):
            if name in modules and _package_of(name) != src:
                edges.setdefault(_package_of(name), []).append(module)
    return graph


def _reachable(graph: dict[str, dict[str, list[str]]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph.get(start, ()))
    while todo:
        pkg = todo.pop()
        if pkg not in seen:
            seen.add(pkg)
            todo.extend(graph.get(pkg, ()))
    return seen


def test_no_import_cycle_between_packages() -> None:
    graph = _package_graph()
    assert {"pytato", "pytato.function", "pytato.transform",
            "pytato.target.loopy", *LOOPY_STAGES} <= set(graph)
    cycles = sorted(
        f"{a} -> {b} (in {', '.join(sorted(set(importers)))})"
        for a, edges in graph.items()
        for b, importers in edges.items()
        if a in _reachable(graph, b))
    assert not cycles, "\n".join(cycles)


_LOOPY = "pytato.target.loopy"

#: The stages of the loopy backend, in the order they may import each other
#: (each only those before it): lowering; the program store; the build of
#: device code (which saves binaries and generated sub-units in the store,
#: and writes the OpenCL C of the vector nests that the schedule places);
#: the schedule; the run stage (whose programs schedule themselves for the
#: device of their first call); the pipeline, the one driver.
LOOPY_STAGES = tuple(f"{_LOOPY}.{stage}" for stage in (
    "lower", "store", "build", "schedule", "run", "pipeline"))


@pytest.mark.parametrize(("package", "forbidden"), [
    # each stage imports only the stages before it, never the package
    # (which re-exports the pipeline's driver)
    *[(stage, (*LOOPY_STAGES[i + 1:], _LOOPY))
      for i, stage in enumerate(LOOPY_STAGES)],
    # the modules the stages share import none of them
    *[(f"{_LOOPY}.{shared}", (*LOOPY_STAGES, _LOOPY))
      for shared in ("device", "loopy_walk", "loopy_memos")],
    # the compatibility shims import no stage when imported (the aliases
    # import their new paths when used)
    (f"{_LOOPY}._compat", (*LOOPY_STAGES, _LOOPY)),
    # the launchers know nothing of pytato's graphs nor of the backend
    ("pytato.launchers", ("pytato.target", "pytato.array", "pytato")),
])
def test_loopy_stages_import_one_way(package: str,
                                     forbidden: tuple[str, ...]) -> None:
    edges = _package_graph()[package]
    assert not {f: edges[f] for f in forbidden if f in edges}


def test_loopy_package_only_reexports() -> None:
    """``pytato/target/loopy/__init__.py`` holds no code but its
    re-exports (and the attribute hook of the module paths from before):
    the driver is :mod:`pytato.target.loopy.pipeline`."""
    tree = ast.parse((PYTATO / "target" / "loopy" / "__init__.py").read_text())
    defs = [node.name for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef))]
    assert defs == ["__getattr__"]


def test_loopy_modules_are_small() -> None:
    """No module of the loopy backend is over 800 lines."""
    big = {str(path.relative_to(PYTATO)): n
           for path in (PYTATO / "target" / "loopy").rglob("*.py")
           if (n := len(path.read_text().splitlines())) > 800}
    assert not big

# }}}


# {{{ imports in functions

def _function_imports(path: Path) -> list[tuple[int, ast.Import | ast.ImportFrom]]:
    tree = ast.parse(path.read_text())
    type_checking: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            type_checking.update(id(sub) for sub in ast.walk(node))
    found: dict[int, tuple[int, ast.Import | ast.ImportFrom]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                if (isinstance(sub, (ast.Import, ast.ImportFrom))
                        and id(sub) not in type_checking):
                    found[id(sub)] = (sub.lineno, sub)
    return sorted(found.values(), key=lambda item: item[0])


def _imports_loopy_at_top(module: str) -> bool:
    """Whether pytato's *module* imports :mod:`loopy` or :mod:`islpy` when
    it is imported (not under ``TYPE_CHECKING``)."""
    path = PYTATO.parent / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = PYTATO.parent / module.replace(".", "/") / "__init__.py"
    tree = ast.parse(path.read_text())
    for node in tree.body:
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom)
                 else [])
        if any(n.split(".")[0] in ("loopy", "islpy") for n in names):
            return True
    return False


def test_function_imports_are_lazy_on_purpose() -> None:
    """Imports inside functions are of optional dependencies (or for a
    measured laziness), never of pytato's own modules but those that import
    :mod:`loopy` (deferred so that a process running programs from the
    program store does not import it, see :mod:`pytato.lazy_imports`), and
    each says why in a comment (on its line or in the comment block just
    above it)."""
    offenders = []
    for path in sorted(PYTATO.rglob("*.py")):
        lines = path.read_text().splitlines()
        for lineno, node in _function_imports(path):
            module = (node.module or "" if isinstance(node, ast.ImportFrom)
                      else node.names[0].name)
            where = f"{path.relative_to(PYTATO.parent)}:{lineno}"
            if (module == "pytato" or module.startswith("pytato.")) \
                    and not _imports_loopy_at_top(module):
                offenders.append(f"{where}: imports pytato's {module}")
                continue
            above = lineno - 2
            while above >= 0 and (not lines[above].strip()
                                  or lines[above].lstrip().startswith(
                                      ("import ", "from "))):
                above -= 1  # the block of imports this one belongs to
            if "#" not in lines[lineno - 1] and not (
                    above >= 0 and lines[above].lstrip().startswith("#")):
                offenders.append(f"{where}: no comment says why")
    assert not offenders, "\n".join(offenders)

# }}}
