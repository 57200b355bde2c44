"""Stage 1 of the loopy backend: lowering.

**In:** a preprocessed array graph (:func:`pytato.codegen.preprocess`: only
index lambdas, placeholders, size parameters, calls and sparse products
remain), as a :class:`~pytato.array.DictOfNamedArrays`.

**Out:** a :class:`loopy.TranslationUnit` that computes it, with no device
schedule yet: one loop nest per stored array, fused where the nests match,
global temporaries for stored intermediates, and one callee kernel per
function definition.

* :mod:`~pytato.target.loopy.lower.graph`: the graph walk that decides what
  is stored and emits instructions;
* :mod:`~pytato.target.loopy.lower.expressions`: the scalar expressions of
  the nodes, with numpy's semantics;
* :mod:`~pytato.target.loopy.lower.calls` and
  :mod:`~pytato.target.loopy.lower.sparse`: function calls and sparse
  products, as calls of callee kernels
  (:mod:`~pytato.target.loopy.lower.callees`), through one mapper given
  the build state of the translation unit;
* :mod:`~pytato.target.loopy.lower.fusion`: fusing loop nests;
* :mod:`~pytato.target.loopy.lower.index_arith`: index arithmetic;
* :mod:`~pytato.target.loopy.lower.reduction_bounds`: reduction bounds
  that depend on output indices or data, as private temporaries;
* :mod:`~pytato.target.loopy.lower.creation`: making the kernel;
* :mod:`~pytato.target.loopy.lower.index_checks`: the graph rewrite behind
  ``check_indices=True``.

* :mod:`~pytato.target.loopy.lower.numpy_arith`: the parts of scalar
  expressions with numpy's semantics that C lacks (integer division,
  powers, complex quotients).

The stage imports no other stage (see :mod:`pytato.target.loopy`); it
shares :mod:`pytato.target.loopy.loopy_walk` and
:mod:`pytato.target.loopy.loopy_memos` with them.
"""
