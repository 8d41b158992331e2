"""mutagrad.nn.parallel: DistributedDataParallel, torch's names for distributed::DataParallel.

    import mutagrad.distributed as dist
    from mutagrad.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("mpi")
    ddp = DDP(model)             # model.parameters() := rank 0's; or DDP([w1, b1, ...])
    loss_fn(ddp(x_shard), y_shard).backward()   # gradients averaged over the ranks here
    opt.step()

The subset: the parameters are broadcast from rank 0 at construction and the gradients are
averaged in buckets (bucket_cap_mb) while backward runs. Every parameter must get a gradient in
every backward (find_unused_parameters=False). Forward calls the wrapped module (or function).
"""

import sys

from mutagrad import _C

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel:
    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, process_group=None, bucket_cap_mb=25,
                 find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False):
        if process_group is not None:
            raise RuntimeError("DistributedDataParallel: only the default process group exists")
        if find_unused_parameters:
            raise RuntimeError(
                "DistributedDataParallel: find_unused_parameters=True is not supported; every "
                "parameter must receive a gradient in every backward"
            )
        self.module = module
        params = module.parameters() if hasattr(module, "parameters") else module
        self._params = list(params)
        caller = sys._getframe(1)
        self._impl = _C._distributed.DataParallel(
            self._params, int(bucket_cap_mb * 1024 * 1024), True, caller.f_code.co_filename,
            caller.f_lineno,
        )

    def parameters(self):
        return iter(self._params)

    def buckets(self):
        """The parameter indices of each bucket, in the order they are reduced."""
        return self._impl.buckets()

    def forward(self, *args, **kwargs):
        if not callable(self.module):
            raise TypeError(
                "DistributedDataParallel: the wrapped object is a parameter list, not callable; "
                "call your model directly"
            )
        return self.module(*args, **kwargs)

    __call__ = forward
