"""Forward-mode J v of //benchmarks:autograd_benchmark's small MLP (BM_MlpJvp: x 32x64,
tanh(x W1 + b1) W2 + b2 with W1 64x128, W2 128x10, float32, v over the four parameters), ours
against PyTorch 2.x's in one process, interleaved (issue 40's libtorch 2.x figure):

    ./bazelw build //python:mutagrad_host_run
    PYTHONPATH=bazel-bin/python/host_run ~/.cache/mutagrad/torch2-venv/bin/python \\
        tools/torch2/forward_ad_benchmark.py [REPS] [CALLS] [TORCH_THREADS]

Cases, each a full J v from Python: the dual-tensor API (mutagrad.autograd.forward_ad and
torch.autograd.forward_ad: enter a level, make_dual the parameters, run the MLP, unpack the
tangent) and the functional one (mutagrad.autograd.functional.jvp, a dual pass in C++ calling
the Python function, and torch.func.jvp). Each repetition times CALLS calls of every case, in a
shuffled order; the ratios are per repetition, so a load change between repetitions cancels.
TORCH_THREADS (default: torch's own choice) sets torch.set_num_threads; OMP_WAIT_POLICY=passive
keeps the two libraries' OpenMP teams from spinning against each other on a small machine.
"""

import random
import statistics
import sys
import time

import torch
import torch.autograd.forward_ad as tfw

import mutagrad as mg
import mutagrad.autograd.forward_ad as mfw
import mutagrad.autograd.functional as mfunc


def setup(lib):
    g = torch.Generator().manual_seed(0)

    def randn(*shape):
        t = torch.randn(*shape, generator=g)
        return t if lib is torch else mg.tensor(t.tolist(), dtype=mg.float32)

    x = randn(32, 64)
    params = [randn(64, 128) * 0.1, randn(128) * 0.1, randn(128, 10) * 0.1, randn(10) * 0.1]
    v = [randn(*p.shape) for p in params]
    return x, params, v


def mlp(x):
    return lambda w1, b1, w2, b2: (x.matmul(w1) + b1).tanh().matmul(w2) + b2


def dual_api(lib, fw, x, params, v):
    f = mlp(x)

    def run():
        with fw.dual_level():
            duals = [fw.make_dual(p, t) for p, t in zip(params, v)]
            return fw.unpack_dual(f(*duals)).tangent
    return run


def cases():
    mx, mp, mv = setup(mg)
    tx, tp, tv = setup(torch)
    mf, tf = mlp(mx), mlp(tx)
    return {
        "mutagrad forward_ad": dual_api(mg, mfw, mx, mp, mv),
        "torch2 forward_ad": dual_api(torch, tfw, tx, tp, tv),
        "mutagrad functional.jvp": lambda: mfunc.jvp(mf, tuple(mp), tuple(mv))[1],
        "torch2 torch.func.jvp": lambda: torch.func.jvp(tf, tuple(tp), tuple(tv))[1],
    }


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    if len(sys.argv) > 3:
        torch.set_num_threads(int(sys.argv[3]))
    cs = cases()
    # Same values: both libraries' tangents agree.
    ours = cs["mutagrad forward_ad"]().tolist()
    theirs = cs["torch2 forward_ad"]().tolist()
    assert torch.allclose(torch.tensor(ours), torch.tensor(theirs), rtol=1e-4, atol=1e-4)
    for fn in cs.values():  # warm up
        for _ in range(20):
            fn()
    times = {name: [] for name in cs}
    rng = random.Random(0)
    for _ in range(reps):
        order = list(cs)
        rng.shuffle(order)
        for name in order:
            fn = cs[name]
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            times[name].append((time.perf_counter() - start) / calls * 1e6)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; "
          f"{reps} repetitions of {calls} calls, medians (us per J v):")
    for name, ts in times.items():
        print(f"  {name:26s} {statistics.median(ts):8.1f}  (min {min(ts):.1f}, "
              f"max {max(ts):.1f})")
    for ours_name, theirs_name in (("mutagrad forward_ad", "torch2 forward_ad"),
                                   ("mutagrad functional.jvp", "torch2 torch.func.jvp")):
        ratios = [a / b for a, b in zip(times[ours_name], times[theirs_name])]
        print(f"  ratio {ours_name} / {theirs_name}: median {statistics.median(ratios):.2f} "
              f"(per repetition {', '.join(f'{r:.2f}' for r in ratios)})")


if __name__ == "__main__":
    main()
