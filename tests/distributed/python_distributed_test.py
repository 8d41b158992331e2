"""mutagrad.distributed and mutagrad.nn.parallel under mpirun (tests/distributed/BUILD.bazel):
torch.distributed's names, hand-computed results, the stale-graph error naming this file's
all_reduce line, a pending async tensor refusing reads, and DistributedDataParallel against one
process on the whole batch. A plain script (every rank runs it); exits 1 on any failure."""

import sys
import traceback

import mutagrad as mg
import mutagrad.distributed as dist
from mutagrad.nn.parallel import DistributedDataParallel as DDP
import mutagrad.nn.functional as F

dist.init_process_group("mpi")
rank, world = dist.get_rank(), dist.get_world_size()


def test_names_and_values():
    assert dist.is_initialized() and dist.get_backend() == "mpi"
    t = mg.ones(3) * (rank + 1)
    assert dist.all_reduce(t) is None
    assert t.tolist() == [world * (world + 1) / 2] * 3 and t._version == 1
    m = mg.full((2,), float(rank), dtype=mg.float64)
    dist.all_reduce(m, op=dist.ReduceOp.MAX)
    assert m.tolist() == [world - 1.0] * 2
    b = mg.tensor([rank, rank], dtype=mg.int64)
    dist.broadcast(b, src=world - 1)
    assert b.tolist() == [world - 1] * 2
    out = [mg.zeros(2) for _ in range(world)]
    dist.all_gather(out, mg.full((2,), 10.0 * rank))
    assert [o.tolist() for o in out] == [[10.0 * r] * 2 for r in range(world)]
    dist.barrier()


def test_mismatch_raises_on_every_rank():
    try:
        dist.all_reduce(mg.zeros(2 + rank))
    except RuntimeError as e:
        assert "rank 1: all_reduce_(float32 [3], op=SUM)" in str(e), str(e)
    else:
        raise AssertionError("expected RuntimeError")


def test_all_reduce_of_a_saved_tensor_names_the_line():
    w = mg.ones(3, dtype=mg.float64).requires_grad_()
    x = mg.full((3,), 2.0, dtype=mg.float64)
    loss = (w * x).sum()
    line = sys._getframe().f_lineno + 1
    dist.all_reduce(x)
    try:
        loss.backward()
    except RuntimeError as e:
        assert f"all_reduce_ at {__file__}:{line}" in str(e), str(e)
    else:
        raise AssertionError("expected the stale-tensor error")


def test_pending_async_refuses_reads():
    t = mg.ones(4)
    work = dist.all_reduce(t, async_op=True)
    try:
        t.sum()
    except RuntimeError as e:
        assert "still being written by all_reduce_" in str(e), str(e)
    else:
        raise AssertionError("expected the pending-write error")
    work.wait()
    assert work.is_completed() and t.tolist() == [float(world)] * 4


def refused(fn, what):
    try:
        fn()
    except RuntimeError as e:
        assert what in str(e), str(e)
    else:
        raise AssertionError(f"expected the pending-access error ({what})")


def test_every_alias_of_a_pending_tensor_is_refused():
    # Issue 34 item 4: t.data.add_(1000) during the all_reduce was lost when it landed.
    t = mg.ones(4)
    before = t.numpy()  # a NumPy array taken before: its memory is t's
    aliases = [t.data, t.detach(), t[1:3], t.data[2:], mg.from_numpy(before), mg.from_numpy(before[2:])]
    work = dist.all_reduce(t, async_op=True)
    for a in aliases:
        version = a._version
        refused(lambda: a.add_(1000), "still being written by all_reduce_")
        refused(lambda: a.sum(), "still being written by all_reduce_")
        assert a._version == version
    refused(lambda: t.numpy(), "still being written by all_reduce_")
    work.wait()
    assert t.tolist() == [float(world)] * 4, t.tolist()
    t.data.add_(1)
    assert before.tolist() == [world + 1.0] * 4


def test_all_gather_input_refuses_writes_until_wait():
    x = mg.full((3,), 10.0 * rank)
    out = [mg.zeros(3) for _ in range(world)]
    work = dist.all_gather(out, x, async_op=True)
    for a in (x, x.data, x[0:1], mg.from_numpy(x.numpy())):
        refused(lambda: a.add_(1), "still being read by all_gather")
    assert x.sum().item() == 30.0 * rank  # reads are allowed
    work.wait()
    assert [o.tolist() for o in out] == [[10.0 * r] * 3 for r in range(world)]
    x.data.add_(1)
    assert x.tolist() == [10.0 * rank + 1] * 3


def test_ddp_matches_one_process():
    def model_params(seed):
        mg.manual_seed(seed)
        return [mg.randn(4, 6, dtype=mg.float64).requires_grad_(),
                mg.randn(6, 3, dtype=mg.float64).requires_grad_()]

    mg.manual_seed(5)
    xs = [mg.randn(6, 4, dtype=mg.float64) for _ in range(10)]
    ys = [mg.randint(0, 3, (6,)) for _ in range(10)]

    def train(params, shard):
        opt = mg.optim.SGD(params, lr=0.1, momentum=0.9)
        for x, y in zip(xs, ys):
            opt.zero_grad()
            F.cross_entropy(x[shard].matmul(params[0]).tanh().matmul(params[1]), y[shard]).backward()
            opt.step()
        return params

    want = train(model_params(1), slice(None))
    params = model_params(1 if rank == 0 else 50 + rank)
    ddp = DDP(params)
    per = 6 // world
    got = train(params, slice(rank * per, (rank + 1) * per))
    assert len(ddp.buckets()) == 1
    for a, b in zip(got, want):
        assert (a - b).abs().max().item() <= 1e-13 * b.abs().max().item()


failed = 0
for name, fn in list(globals().items()):
    if name.startswith("test_") and callable(fn):
        try:
            fn()
        except Exception:
            failed = 1
            print(f"rank {rank}: {name} FAILED", file=sys.stderr)
            traceback.print_exc()
verdict = mg.tensor([failed], dtype=mg.int32)
dist.all_reduce(verdict, op=dist.ReduceOp.MAX)
if rank == 0:
    print(f"python_distributed_test: {world} ranks, " + ("a rank failed" if verdict.item() else "passed"))
sys.exit(int(verdict.item()))
