"""Documentation coverage: every public name has a docstring and an autodoc
directive in the Sphinx documentation (``doc/``).

The documentation follows one scheme: module docstrings hold explicit
``.. autoclass::``/``.. autofunction::``/... directives, and the pages in
``doc/*.rst`` pull them in with ``.. automodule::`` (without ``:members:``)
or add explicit directives themselves. These tests read the text of the
pages and docstrings (as Sphinx would, following nested ``automodule``
directives); they do not need Sphinx.
"""

from __future__ import annotations

import importlib
import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest


DOC_DIR = Path(__file__).resolve().parent.parent / "doc"

#: Modules whose public names must be documented, besides :mod:`pytato`.
SUBMODULES = (
    "pytato.transform",
    "pytato.analysis",
    "pytato.visualization",
    "pytato.target.loopy",
    "pytato.target.python",
    "pytato.distributed",
    "pytato.tags",
    "pytato.diagnostic",
)

_DIRECTIVE_RE = re.compile(
    r"^\s*\.\.\s+(?:py:)?(automodule|module|currentmodule|autoclass|autofunction"
    r"|autoexception|autodata)::\s*(\S+)\s*$")

_OBJECT_DIRECTIVES = frozenset(
    {"autoclass", "autofunction", "autoexception", "autodata"})


# {{{ public names

def _is_defined_in(obj: Any, prefix: str) -> bool:
    modname = getattr(obj, "__module__", None) or ""
    return modname == prefix or modname.startswith(prefix + ".")


def _public_objects(modname: str, owner_prefix: str) -> dict[str, Any]:
    """Public functions and classes of *modname* (its ``__all__``, else the
    names not starting with ``_``) that are defined in a module under
    *owner_prefix*: re-exported modules and objects of other packages
    (numpy, pytools, typing, ...) are not pytato's to document."""
    mod = importlib.import_module(modname)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [name for name in dir(mod) if not name.startswith("_")]
    result = {}
    for name in names:
        obj = getattr(mod, name)
        if isinstance(obj, ModuleType):
            continue
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        if _is_defined_in(obj, owner_prefix):
            result[f"{modname}.{name}"] = obj
    return result


def public_objects() -> dict[str, Any]:
    """Maps the public names (``module.name``) to their objects."""
    result = _public_objects("pytato", "pytato")
    for modname in SUBMODULES:
        result.update(_public_objects(modname, modname))
    return result


# }}}


# {{{ directives, as Sphinx sees them

@dataclass(frozen=True)
class Directive:
    kind: str
    #: the documented name, with the module that Sphinx resolves it in
    full_name: str
    #: where the directive was written (a page or a module docstring)
    where: str


def _resolve(full_name: str) -> Any:
    """The object that *full_name* (``package.module.attr.attr``) names, or
    raises :class:`LookupError`."""
    parts = full_name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            break
        return obj
    raise LookupError(full_name)


def collect_directives() -> list[Directive]:
    """The autodoc directives of ``doc/*.rst``, following ``automodule``
    directives into module docstrings (and nested ones further). As in
    Sphinx, an undotted name is documented in the current module: the one
    set by the last ``automodule``/``module``/``currentmodule`` directive
    met, in reading order."""
    directives: list[Directive] = []

    for page in sorted(DOC_DIR.glob("*.rst")):
        # a stack of (lines, where), read depth first
        stack: list[tuple[list[str], str]] = [
            (page.read_text().splitlines()[::-1], page.name)]
        current_module: str | None = None
        while stack:
            lines, where = stack[-1]
            if not lines:
                stack.pop()
                continue
            match = _DIRECTIVE_RE.match(lines.pop())
            if match is None:
                continue
            kind, name = match.groups()
            if kind in ("module", "currentmodule"):
                current_module = None if name == "None" else name
            elif kind == "automodule":
                current_module = name
                directives.append(Directive(kind, name, where))
                doc = inspect.getdoc(importlib.import_module(name)) or ""
                stack.append((doc.splitlines()[::-1], f"docstring of {name}"))
            else:
                if "." not in name and current_module is not None:
                    name = f"{current_module}.{name}"
                directives.append(Directive(kind, name, where))

    return directives


# }}}


def _has_own_docstring(obj: Any) -> bool:
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
    if not doc or not doc.strip():
        return False
    if inspect.isclass(obj):
        # dataclasses without a docstring get their signature as one
        try:
            sig = str(inspect.signature(obj)).replace(" -> None", "")
        except (TypeError, ValueError):
            return True
        return doc.strip() != obj.__name__ + sig
    return True


def test_public_names_have_docstrings() -> None:
    missing = sorted(name for name, obj in public_objects().items()
                     if not _has_own_docstring(obj))
    assert not missing, f"public names without a docstring: {missing}"


def test_public_names_are_documented() -> None:
    documented_ids = set()
    for d in collect_directives():
        if d.kind in _OBJECT_DIRECTIVES:
            try:
                documented_ids.add(id(_resolve(d.full_name)))
            except LookupError:
                pass

    missing = sorted(name for name, obj in public_objects().items()
                     if id(obj) not in documented_ids)
    assert not missing, (
        "public names without an autodoc directive in doc/*.rst or in a "
        f"module docstring pulled in by an automodule directive: {missing}")


def test_directives_resolve() -> None:
    unresolved = []
    for d in collect_directives():
        try:
            _resolve(d.full_name)
        except LookupError:
            unresolved.append(f"{d.full_name} ({d.where})")
    assert not unresolved, f"autodoc directives naming nothing: {unresolved}"


def test_no_duplicate_descriptions() -> None:
    seen: dict[tuple[str, str], str] = {}
    duplicates = []
    for d in collect_directives():
        key = ("module" if d.kind == "automodule" else "object", d.full_name)
        if key in seen:
            duplicates.append(f"{d.full_name} ({seen[key]} and {d.where})")
        else:
            seen[key] = d.where
    assert not duplicates, f"documented twice: {duplicates}"


def test_modules_are_documented() -> None:
    import pkgutil

    import pytato

    modules = {"pytato"} | {
        info.name for info in pkgutil.walk_packages(pytato.__path__, "pytato.")
        if not any(part.startswith("_") for part in info.name.split("."))}
    documented = {d.full_name for d in collect_directives()
                  if d.kind == "automodule"}
    missing = sorted(modules - documented)
    assert not missing, (
        f"modules without an automodule directive in doc/*.rst or in a "
        f"module docstring pulled in by one: {missing}")


@pytest.mark.parametrize("page", sorted(p.name for p in DOC_DIR.glob("*.rst")))
def test_no_members_option(page: str) -> None:
    # ':members:' would document again what the module docstrings document
    # explicitly (duplicate object descriptions)
    text = (DOC_DIR / page).read_text()
    assert ":members:" not in text, page

# vim: foldmethod=marker
