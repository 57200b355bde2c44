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
    "sphinx.ext.intersphinx",
    "sphinx.ext.napoleon",
]

autodoc_member_order = "bysource"
autodoc_typehints = "description"

exclude_patterns = ["_build"]

intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "numpy": ("https://numpy.org/doc/stable", None),
    "pyopencl": ("https://documen.tician.de/pyopencl", None),
    "loopy": ("https://documen.tician.de/loopy", None),
    "pymbolic": ("https://documen.tician.de/pymbolic", None),
    "pytools": ("https://documen.tician.de/pytools", None),
    "islpy": ("https://documen.tician.de/islpy", None),
}
