import sys, time, os, subprocess
sys.path.insert(0, "benchmarks"); sys.path.insert(0, ".")
os.environ["PYTATO_NO_PROGRAM_STORE"] = "1"
t = time.perf_counter(); subprocess.run([sys.executable, "-c", "import pytato"], check=True); print("import pytato subprocess", time.perf_counter() - t, flush=True)
import pyopencl as cl, pytato as pt
from bench_codegen import make_random_dag
from pytato.target.loopy.run import split, split_build
ctx = cl.create_some_context(interactive=False)
prog = pt.generate_loopy(make_random_dag(int(sys.argv[1])), cl_device=ctx.devices[0])
t_unit = prog.program
knl = t_unit.default_entrypoint
units = split.split_kernel(knl)
seen = {}
for u in units: seen.setdefault(u.key, u)
us = sorted(seen.values(), key=lambda u: -len(u.kernel.instructions))
from constantdict import constantdict
from loopy.kernel.function_interface import CallableKernel
def tu_of(u):
    k = u.kernel
    return t_unit.copy(callables_table=constantdict({k.name: CallableKernel(k)}), entrypoints=frozenset({k.name}))
for u in us[:2]:
    t = time.perf_counter(); split_build._compile_one(tu_of(u), u.canonical_names); print("serial one", len(u.kernel.instructions), time.perf_counter() - t, flush=True)
for w in sys.argv[2:]:
    jobs = [(tu_of(u), u.canonical_names) for u in us]
    t = time.perf_counter(); comps = split_build._compile_in_processes(jobs, int(w)); print("processes", w, time.perf_counter() - t, flush=True)
codes = [c.code for c in comps]
dev = ctx.devices[0]
t = time.perf_counter(); cl.Program(ctx, codes[0] + "\n//x1").build(); print("build one", len(codes[0]), time.perf_counter() - t, flush=True)
from concurrent.futures import ThreadPoolExecutor
tag = "\n//" + str(time.time())
t = time.perf_counter()
with ThreadPoolExecutor(16) as pool: list(pool.map(lambda c: cl.Program(ctx, c + tag + "a").build(), codes))
print("build threads", time.perf_counter() - t, flush=True)
# processes: each builds a share with pyopencl (binary cache), then parent builds
import pickle
W = """
import pickle, sys, pyopencl as cl
codes = pickle.load(sys.stdin.buffer)
ctx = cl.create_some_context(interactive=False)
for c in codes: cl.Program(ctx, c).build()
"""
t = time.perf_counter()
cs = [c + tag + "b" for c in codes]
procs = []
for i in range(16):
    p = subprocess.Popen([sys.executable, "-c", W], stdin=subprocess.PIPE)
    p.stdin.write(pickle.dumps(cs[i::16])); p.stdin.close(); procs.append(p)
for p in procs: p.wait()
t1 = time.perf_counter()
for c in cs: cl.Program(ctx, c).build()
print("build processes", t1 - t, "then parent", time.perf_counter() - t1, flush=True)
