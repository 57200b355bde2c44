"""The numpy-like front end: functions that build array graphs.

One module per family: :mod:`~pytato.frontend.elementwise`,
:mod:`~pytato.frontend.math`, :mod:`~pytato.frontend.creation`,
:mod:`~pytato.frontend.reductions`, :mod:`~pytato.frontend.shape_ops`,
:mod:`~pytato.frontend.indexing`, :mod:`~pytato.frontend.linalg`,
:mod:`~pytato.frontend.misc`.
"""

from pytato.frontend import array_methods as _array_methods


# Attach the numpy-like methods and operators to Array (see
# :mod:`pytato.frontend.array_methods`): deliberately done here, once, so
# that pytato.array never imports the front end.
_array_methods.install()
