"""The build stage of the loopy backend: device code.

* :mod:`~pytato.target.loopy.build.target_parameters` and
  :mod:`~pytato.target.loopy.build.cl_target`: the :mod:`loopy` target of
  pytato's OpenCL programs;
* :mod:`~pytato.target.loopy.build.cl_complex` and
  :mod:`~pytato.target.loopy.build.cl_math`: OpenCL C helpers (complex
  functions with numpy's semantics, out-of-line math);
* :mod:`~pytato.target.loopy.build.vector_code`: the OpenCL C of the
  schedule's vector nests;
* :mod:`~pytato.target.loopy.build.preprocessing`: preprocessing,
  linearization and code generation of a scheduled unit;
* :mod:`~pytato.target.loopy.build.subkernels`: the device kernels of a
  linearized kernel, as its host code enqueues them;
* :mod:`~pytato.target.loopy.build.binaries`,
  :mod:`~pytato.target.loopy.build.parallel_builds`,
  :mod:`~pytato.target.loopy.build.job_processes` and
  :mod:`~pytato.target.loopy.build.child_processes`: device binaries, and
  builds of several programs at once in worker processes;
* :mod:`~pytato.target.loopy.build.split`,
  :mod:`~pytato.target.loopy.build.split_canonical`,
  :mod:`~pytato.target.loopy.build.split_sizes` and
  :mod:`~pytato.target.loopy.build.split_build`: the split path (a kernel
  cut into sub-units keyed by their canonical form, generated and built
  once each);
* :mod:`~pytato.target.loopy.build.jit_primer` and
  :mod:`~pytato.target.loopy.build.launch_once`: kernels launched once
  after their build, so that their first call is not the device's first
  launch.

The stage imports the store stage (it saves binaries and generated
sub-units there) and none above it: the schedule stage imports its vector
code emitter, the run stage its programs' builds.
"""
