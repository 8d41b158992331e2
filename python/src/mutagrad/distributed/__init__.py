"""mutagrad.distributed: torch.distributed's names over MPI (Open MPI; NCCL in the device build).

    # mpirun -np 2 python3 train.py
    import mutagrad.distributed as dist
    dist.init_process_group("mpi")
    t = mg.ones(3) * (dist.get_rank() + 1)
    dist.all_reduce(t)                       # in place: [3, 3, 3] on both ranks, t._version == 1
    work = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)
    work.wait()                              # reading t before wait() raises RuntimeError

Every collective is an in-place write of its tensor(s), tracked like x.add_(): one version bump
recorded at the calling line, so a graph that saved the tensor fails in backward naming that
line. The ranks first agree on the call (collective, shape, dtype, op, root): a mismatch raises
RuntimeError on every rank instead of hanging. Launch with Open MPI's mpirun
(docs/distributed.md). ``group`` arguments accept None only (the default group).
"""

import sys

from mutagrad import _C

__all__ = [
    "ReduceOp",
    "Work",
    "init_process_group",
    "is_initialized",
    "is_available",
    "destroy_process_group",
    "get_rank",
    "get_world_size",
    "get_backend",
    "barrier",
    "all_reduce",
    "broadcast",
    "all_gather",
    "reduce_scatter",
]

_D = _C._distributed
Work = _D.Work


class ReduceOp:
    """torch.distributed.ReduceOp's members (the names are what the C++ layer reads)."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"


def _caller():
    frame = sys._getframe(2)
    return frame.f_code.co_filename, frame.f_lineno


def _check_group(group):
    if group is not None:
        raise RuntimeError(
            "mutagrad.distributed: only the default process group exists; pass group=None"
        )


def is_available():
    return True


def init_process_group(backend="mpi", init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name=""):
    """Joins the job that mpirun started: rank and size come from MPI's environment (passing
    world_size or rank is allowed only if they agree). timeout: a datetime.timedelta or seconds,
    how long a rank waits for the others to enter a collective before it raises."""
    if init_method is not None or store is not None:
        raise ValueError(
            "init_process_group: mutagrad joins the job that mpirun launched; init_method and "
            "store are not used (launch with `mpirun -np N python3 script.py`)"
        )
    _D.init_process_group(str(backend).lower())
    if world_size not in (-1, _D.get_world_size()) or rank not in (-1, _D.get_rank()):
        got = (_D.get_world_size(), _D.get_rank())
        _D.destroy_process_group()
        raise ValueError(
            f"init_process_group: mpirun gave world_size={got[0]}, rank={got[1]}, but "
            f"world_size={world_size}, rank={rank} were passed; leave them out"
        )
    if timeout is not None:
        seconds = timeout.total_seconds() if hasattr(timeout, "total_seconds") else timeout
        _D.set_timeout(float(seconds))


def is_initialized():
    return _D.is_initialized()


def destroy_process_group(group=None):
    _check_group(group)
    _D.destroy_process_group()


def get_rank(group=None):
    _check_group(group)
    return _D.get_rank()


def get_world_size(group=None):
    _check_group(group)
    return _D.get_world_size()


def get_backend(group=None):
    _check_group(group)
    return _D.get_backend()


def barrier(group=None, async_op=False, device_ids=None):
    _check_group(group)
    _D.barrier(*_caller())


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    _check_group(group)
    return _D.all_reduce(tensor, op, async_op, *_caller())


def broadcast(tensor, src, group=None, async_op=False):
    _check_group(group)
    return _D.broadcast(tensor, src, async_op, *_caller())


def all_gather(tensor_list, tensor, group=None, async_op=False):
    _check_group(group)
    return _D.all_gather(list(tensor_list), tensor, async_op, *_caller())


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    _check_group(group)
    return _D.reduce_scatter(output, list(input_list), op, async_op, *_caller())
