"""Checkpoint save/load bandwidth (docs/performance/checkpoints.md): a 1 GiB state_dict (64 float32 tensors
of 16 MiB) through mutagrad.save/load (torch's zip format), mutagrad.safetensors, torch.save/
torch.load and the safetensors package, against a plain write/read of the same bytes.

    tools/torch2/... venv python, mutagrad on PYTHONPATH:
    PYTHONPATH=<host_run copy> ~/.cache/mutagrad/torch2-venv/bin/python \
        benchmarks/checkpoint_benchmark.py [--dir DIR] [--repeats 3] [--mib 1024]

Each figure is the best of --repeats runs, in GiB/s, with the page cache warm (every file was
just written). mutagrad's saves fsync (Note [Atomic save]); the plain write is timed with and
without fsync, and torch/safetensors do not fsync. Ratios are against the plain figure of the
same durability. Torch and safetensors are optional (skipped with a note when absent).
"""
import argparse
import gc
import os
import time

import numpy as np

import mutagrad

try:
    import torch
except ImportError:
    torch = None
try:
    import safetensors.torch as st_torch
except ImportError:
    st_torch = None

N_TENSORS = 64


def best(fn, repeats, setup=None):
    times = []
    for _ in range(repeats):
        if setup:
            setup()
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
        del out
    return min(times)


def plain_write(path, arrays, fsync):
    def run():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            for a in arrays:
                mv = memoryview(a).cast("B")
                while mv:
                    mv = mv[os.write(fd, mv):]
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
    return run


def plain_read(path, numel):
    def run():
        out = []
        with open(path, "rb", buffering=0) as f:
            for _ in range(N_TENSORS):
                a = np.empty(numel, dtype=np.float32)
                f.readinto(memoryview(a).cast("B"))
                out.append(a)
        return out
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default=os.environ.get("TMPDIR", "/tmp"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--mib", type=int, default=1024, help="total size")
    args = ap.parse_args()
    numel = args.mib * (1 << 20) // 4 // N_TENSORS
    gib = N_TENSORS * numel * 4 / (1 << 30)
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(numel, dtype=np.float32) for _ in range(N_TENSORS)]
    ours = {f"layer{k}.weight": mutagrad.from_numpy(a) for k, a in enumerate(arrays)}
    d = args.dir
    paths = {k: os.path.join(d, f"ckpt_bench.{k}") for k in
             ("plain", "mg_pt", "mg_st", "torch_pt", "pkg_st")}
    rows = []  # (what, seconds, baseline key)

    w_sync = best(plain_write(paths["plain"], arrays, True), args.repeats)
    w_nosync = best(plain_write(paths["plain"], arrays, False), args.repeats)
    r_plain = best(plain_read(paths["plain"], numel), args.repeats)
    rows += [("plain write + fsync", w_sync, None), ("plain write", w_nosync, None),
             ("plain read", r_plain, None)]

    rows.append(("mutagrad.save (zip, atomic + fsync)",
                 best(lambda: mutagrad.save(ours, paths["mg_pt"]), args.repeats), "w_sync"))
    rows.append(("mutagrad.load (zip)", best(lambda: mutagrad.load(paths["mg_pt"]),
                                             args.repeats), "r"))
    rows.append(("mutagrad.safetensors.save_file (atomic + fsync)",
                 best(lambda: mutagrad.safetensors.save_file(ours, paths["mg_st"]),
                      args.repeats), "w_sync"))

    def st_load_touch():  # the mmap view reads pages when touched: sum them to read every byte
        t = mutagrad.safetensors.load_file(paths["mg_st"])
        for v in t.values():
            v.sum()
        return t
    rows.append(("mutagrad.safetensors.load_file (mmap view, untouched)",
                 best(lambda: mutagrad.safetensors.load_file(paths["mg_st"]), args.repeats),
                 "r"))
    rows.append(("mutagrad.safetensors.load_file + sum of every tensor",
                 best(st_load_touch, args.repeats), "r"))

    if torch is not None:
        theirs = {k: torch.from_numpy(a) for k, a in zip(ours, arrays)}
        rows.append((f"torch.save ({torch.__version__}, no fsync)",
                     best(lambda: torch.save(theirs, paths["torch_pt"]), args.repeats), "w"))
        kw = {"weights_only": True} if torch.__version__ >= "2" else {}
        rows.append((f"torch.load ({torch.__version__})",
                     best(lambda: torch.load(paths["torch_pt"], **kw), args.repeats), "r"))
        rows.append(("mutagrad.load of torch.save's file",
                     best(lambda: mutagrad.load(paths["torch_pt"]), args.repeats), "r"))
        if st_torch is not None:
            rows.append(("safetensors.torch.save_file (no fsync)",
                         best(lambda: st_torch.save_file(theirs, paths["pkg_st"]),
                              args.repeats), "w"))
            rows.append(("safetensors.torch.load_file",
                         best(lambda: st_torch.load_file(paths["pkg_st"]), args.repeats), "r"))
        else:
            print("(safetensors package absent: its rows are skipped)")
    else:
        print("(torch absent: its rows are skipped)")

    base = {"w_sync": w_sync, "w": w_nosync, "r": r_plain}
    print(f"checkpoint_benchmark: {gib:.2f} GiB in {N_TENSORS} float32 tensors, best of "
          f"{args.repeats}, files in {d}")
    for what, secs, key in rows:
        ratio = "" if key is None else f"  {base[key] / secs:5.2f}x plain"
        print(f"  {what:58s} {secs:7.3f} s {gib / secs:6.2f} GiB/s{ratio}")
    for p in paths.values():
        if os.path.exists(p):
            os.unlink(p)


if __name__ == "__main__":
    main()
