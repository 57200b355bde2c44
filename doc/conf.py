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

exclude_patterns = ["_build"]
