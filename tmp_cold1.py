import sys, time, logging, os
t0 = time.perf_counter()
sys.path.insert(0, "benchmarks"); sys.path.insert(0, ".")
logging.basicConfig(level=logging.WARNING, format="%(relativeCreated)7.0f %(name)s %(message)s")
logging.getLogger("pytato").setLevel(logging.INFO)
import numpy as np, pyopencl as cl, pytato as pt
from bench_codegen import make_random_dag
ctx = cl.create_some_context(interactive=False)
queue = cl.CommandQueue(ctx)
g = make_random_dag(int(sys.argv[1]))
prog = pt.generate_loopy(g, cl_device=queue.device)
t1 = time.perf_counter()
inputs = {f"in{i}": np.ones((16, 16)) for i in range(4)}
prog(queue, **inputs)
t2 = time.perf_counter()
print("until program", t1 - t0, "first call", t2 - t1)
