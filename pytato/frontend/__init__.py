"""The numpy-like front end: functions that build array graphs.

One module per family: :mod:`~pytato.frontend.elementwise`,
:mod:`~pytato.frontend.math`, :mod:`~pytato.frontend.creation`,
:mod:`~pytato.frontend.reductions`, :mod:`~pytato.frontend.shape_ops`,
:mod:`~pytato.frontend.indexing`, :mod:`~pytato.frontend.linalg`,
:mod:`~pytato.frontend.misc`.
"""
