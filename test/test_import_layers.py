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
