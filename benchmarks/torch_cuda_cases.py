#!/usr/bin/env python3
"""PyTorch's counterparts of benchmarks/cuda_benchmark.cc, with the same case names.

Run both on the GPU machine, one after the other, and divide:

    ./bazelw run --config=cuda //benchmarks:cuda_benchmark
    python3 benchmarks/torch_cuda_cases.py            # needs a torch built with CUDA

Each case is timed as Google Benchmark does it for ours: repeat until at least --min-time
seconds have passed, synchronizing the device after every iteration, and report the mean
microseconds per iteration. `--device cpu` runs the same cases on the CPU (to try the script
on a machine without a GPU; those are not CUDA figures).
"""
import argparse
import sys
import time

import torch

K4M = 4 << 20
K1M = 1 << 20


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def cases(device):
    """(name, setup) pairs; setup returns the function one iteration calls."""
    def copy(nbytes):
        def setup():
            src = torch.ones(nbytes // 4, device=device)
            dst = torch.zeros(nbytes // 4, device=device)
            return lambda: dst.copy_(src)
        return setup

    def set_item_tiny():
        x = torch.zeros(3, 3, device=device)
        def run():
            x[1, 2] = 3.0
        return run

    def set_item_slice():
        x = torch.zeros(4096, 4096, device=device)
        y = torch.ones(4096, 4094, device=device)
        def run():
            x[:, 1:-1] = y
        return run

    def index_put(accumulate):
        def setup():
            gen = torch.Generator(device=device).manual_seed(42)
            x = torch.zeros(K4M, device=device)
            idx = torch.randint(0, K4M, (K1M,), generator=gen, device=device)
            v = torch.rand(K1M, generator=gen, device=device)
            return lambda: x.index_put_((idx,), v, accumulate=accumulate)
        return setup

    def index_put_skewed(accumulate):
        def setup():
            gen = torch.Generator(device=device).manual_seed(44)
            x = torch.zeros(K4M, device=device)
            idx = torch.zeros(K1M, dtype=torch.int64, device=device)
            v = torch.rand(K1M, generator=gen, device=device)
            return lambda: x.index_put_((idx,), v, accumulate=accumulate)
        return setup

    def set_item_mask():
        gen = torch.Generator(device=device).manual_seed(7)
        x = torch.zeros(K4M, device=device)
        mask = torch.rand(K4M, generator=gen, device=device) < 0.25
        def run():
            x[mask] = 1.0
        return run

    def gather():
        gen = torch.Generator(device=device).manual_seed(43)
        x = torch.rand(K4M, generator=gen, device=device)
        idx = torch.randint(0, K4M, (K1M,), generator=gen, device=device)
        return lambda: x[idx]

    def sort():
        gen = torch.Generator(device=device).manual_seed(45)
        x = torch.rand(K1M, generator=gen, device=device)
        return lambda: x.sort()

    def cumsum():
        gen = torch.Generator(device=device).manual_seed(46)
        x = torch.rand(K1M, generator=gen, device=device)
        return lambda: x.cumsum(0)

    def total():
        x = torch.rand(K4M, device=device)
        return lambda: x.sum()

    def matmul(n):
        def setup():
            a = torch.rand(n, n, device=device)
            b = torch.rand(n, n, device=device)
            return lambda: a @ b
        return setup

    def exp():
        x = torch.rand(K4M, device=device)
        return lambda: x.exp()

    def conv2d_forward_backward():
        gen = torch.Generator(device=device).manual_seed(4)
        x = torch.randn(64, 3, 32, 32, generator=gen, device=device, requires_grad=True)
        w = torch.randn(64, 3, 3, 3, generator=gen, device=device, requires_grad=True)
        b = torch.randn(64, generator=gen, device=device, requires_grad=True)
        def run():
            torch.nn.functional.conv2d(x, w, b, padding=1).sum().backward()
            x.grad = w.grad = b.grad = None
        return run

    return [
        (f"BM_CudaCopy/{4 * K4M}", copy(4 * K4M)),
        (f"BM_CudaCopy/{4 * 4096 * 4094}", copy(4 * 4096 * 4094)),
        ("BM_CudaSetItemTiny", set_item_tiny),
        ("BM_CudaSetItemSlice4096", set_item_slice),
        ("BM_CudaIndexPut1MInto4M/accumulate:0", index_put(False)),
        ("BM_CudaIndexPut1MInto4M/accumulate:1", index_put(True)),
        ("BM_CudaIndexPutSkewed1M/accumulate:0", index_put_skewed(False)),
        ("BM_CudaIndexPutSkewed1M/accumulate:1", index_put_skewed(True)),
        ("BM_CudaSetItemMask4M", set_item_mask),
        ("BM_CudaIndex1MFrom4M", gather),
        ("BM_CudaSort1M", sort),
        ("BM_CudaCumsum1M", cumsum),
        ("BM_CudaSum4M", total),
        ("BM_CudaMatmul/256", matmul(256)),
        ("BM_CudaMatmul/1024", matmul(1024)),
        ("BM_CudaExp4M", exp),
        ("BM_CudaConv2dForwardBackward", conv2d_forward_backward),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--min-time", type=float, default=0.5)
    parser.add_argument("--deterministic", action="store_true",
                        help="torch.use_deterministic_algorithms(True): PyTorch's sort-based "
                        "index_put_ with accumulate, comparable with ours")
    parser.add_argument("--no-tf32", action="store_true",
                        help="torch.backends.cudnn.allow_tf32 = False: float32 convolutions "
                        "without TF32 tensor cores, as mutagrad's (cuda/cudnn.cc)")
    args = parser.parse_args()
    if args.deterministic:
        torch.use_deterministic_algorithms(True)
    if args.no_tf32:
        torch.backends.cudnn.allow_tf32 = False
    if args.device == "cuda" and not torch.cuda.is_available():
        print("torch.cuda.is_available() is False: no CUDA device for torch "
              f"{torch.__version__}; run on the GPU machine (or pass --device cpu)",
              file=sys.stderr)
        return 2
    device = torch.device(args.device)
    name = torch.cuda.get_device_name() if device.type == "cuda" else "cpu"
    mode = ", deterministic algorithms" if args.deterministic else ""
    mode += ", no TF32 in cuDNN" if args.no_tf32 else ""
    print(f"torch {torch.__version__} on {name}{mode}")
    print(f"{'case':45s} {'us/iter':>12s} {'iterations':>11s}")
    for case, setup in cases(device):
        run = setup()
        run()  # warm-up (allocations, cuBLAS handles)
        sync(device)
        iterations, start = 0, time.perf_counter()
        while True:
            run()
            sync(device)
            iterations += 1
            elapsed = time.perf_counter() - start
            if elapsed >= args.min_time:
                break
        print(f"{case:45s} {elapsed / iterations * 1e6:12.1f} {iterations:11d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
