"""The store stage of the loopy backend: generated programs kept.

* :mod:`~pytato.target.loopy.store.program_store`: the on-disk store of
  generated programs (lowered and scheduled units, compiled code, device
  binaries), keyed by graph;
* :mod:`~pytato.target.loopy.store.program_cache`: the in-memory cache of
  generated programs.

The stage imports no other stage: the build stage saves binaries and
generated sub-units here, the run stage reads stored units
(:mod:`pytato.target.loopy.run.stored_unit`), the pipeline keys programs.
"""
