"""Upstream's module name for the distributive law on einsums (see
:mod:`pytato.transform.einsum_rewrites`).

.. autoclass:: EinsumDistributiveLawDescriptor
    :noindex:
.. autoclass:: DoDistribute
    :noindex:
.. autoclass:: DoNotDistribute
    :noindex:
.. autoclass:: EinsumDistributiveLawMapper
    :noindex:
.. autofunction:: apply_distributive_property_to_einsums
    :noindex:
"""

from __future__ import annotations

from pytato.transform.einsum_rewrites import (
    DoDistribute,
    DoNotDistribute,
    EinsumDistributiveLawDescriptor,
    EinsumDistributiveLawMapper,
    apply_distributive_property_to_einsums,
)


__all__ = [
    "DoDistribute", "DoNotDistribute", "EinsumDistributiveLawDescriptor",
    "EinsumDistributiveLawMapper", "apply_distributive_property_to_einsums",
]
