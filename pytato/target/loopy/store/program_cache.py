"""The in-memory cache of generated programs: ``PROGRAM_CACHE``,
documented (and imported) as :data:`pytato.target.loopy.PROGRAM_CACHE`; it
lives here so that the run stage (the program store clears it) needs
nothing of :mod:`pytato.target.loopy` itself.
"""

from __future__ import annotations

from pytato.codegen import ProgramCache


__all__ = ["PROGRAM_CACHE"]


PROGRAM_CACHE = ProgramCache(64)
"""The in-memory cache of :func:`~pytato.target.loopy.generate_loopy`: a
:class:`pytato.codegen.ProgramCache` from (structurally equal) graphs, with
the target, options, function name and flags, to the generated program.
Generating code for an equal graph returns the same program object."""
