"""Sphinx configuration for the pytato documentation.

Build with ``sphinx-build doc doc/_build``.
"""

from importlib import metadata


project = "pytato"
copyright = "2026, The pytato developers"
author = "The pytato developers"

try:
    release = metadata.version("pytato")
except metadata.PackageNotFoundError:
    release = "unknown"
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
]

# The documentation follows one scheme: module docstrings hold explicit
# autodoc directives (``.. autoclass::``, ``.. autofunction::``, ...) and the
# pages in this directory pull them in with ``.. automodule::`` (without
# ``:members:``). test/test_docs.py checks that every public name is covered.

autodoc_member_order = "bysource"
autodoc_typehints = "description"

# References to numpy, loopy, pyopencl, ... stay plain text: the build must
# work without network access, so no intersphinx inventories are fetched.
nitpicky = False

# Type hints that Sphinx cannot evaluate (names imported only for type
# checking) stay unqualified, and an unqualified name such as
# ``ArgumentSpec`` may match classes of several modules; such references link
# to one of them instead of failing the build.
suppress_warnings = ["ref.python"]

exclude_patterns = ["_build"]


# {{{ links to re-exported names

# Objects are documented where they are defined (``pytato.array.lambdas.
# IndexLambda``), but text refers to them by the names users import
# (``pytato.IndexLambda``, ``pytato.array.IndexLambda``). A reference that
# Sphinx cannot resolve by name is resolved here by identity: it links to
# the documented name of the same Python object.

_documented_by_id: dict[int, dict[int, tuple[object, str]]] = {}


def _find_object(dotted: str) -> object | None:
    import importlib

    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def _documented_objects(env):
    result = _documented_by_id.get(id(env))
    if result is None:
        result = {}
        for name, entry in env.get_domain("py").objects.items():
            if name.startswith("pytato") and not getattr(entry, "aliased", False):
                obj = _find_object(name)
                if obj is not None:
                    # keep obj alive, so that its id stays unique
                    result.setdefault(id(obj), (obj, name))
        _documented_by_id.clear()
        _documented_by_id[id(env)] = result
    return result


def _resolve_reexported_name(app, env, node, contnode):
    if node.get("refdomain") != "py":
        return None
    from sphinx.util.nodes import make_refnode

    target = node["reftarget"].lstrip(".~")
    candidates = [target]
    for prefix in (node.get("py:class"), node.get("py:module")):
        if prefix:
            candidates.insert(0, f"{prefix}.{target}")

    documented = _documented_objects(env)
    domain = env.get_domain("py")
    for candidate in candidates:
        if not candidate.startswith("pytato"):
            continue
        obj = _find_object(candidate)
        if obj is None or id(obj) not in documented:
            continue
        name = documented[id(obj)][1]
        entry = domain.objects[name]
        return make_refnode(app.builder, node["refdoc"], entry.docname,
                            entry.node_id, contnode, name)
    return None


def setup(app):
    app.connect("missing-reference", _resolve_reexported_name)

# }}}
