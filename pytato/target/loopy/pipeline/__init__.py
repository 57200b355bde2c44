"""The pipeline of the loopy backend: the one place that imports every
stage.

* :mod:`~pytato.target.loopy.pipeline.generate`:
  :func:`~pytato.target.loopy.generate_loopy`, the driver from a graph to a
  bound program (store lookup, preprocessing, lowering, schedule, store
  save);
* :mod:`~pytato.target.loopy.pipeline.store_keys`: the keys of programs in
  the program store.

The per-device schedule of a program generated without a device runs at
its first call there, from the run stage
(:mod:`pytato.target.loopy.run.deferred_schedule`), which the programs of
the run stage call.
"""
