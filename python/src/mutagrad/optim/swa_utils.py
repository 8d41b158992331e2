"""mutagrad.optim.swa_utils: AveragedModel (stochastic weight averaging and EMAs of a model's
parameters) and update_bn, as torch.optim.swa_utils.

    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.999))
    for batch in loader:
        train_step(model, batch)
        ema.update_parameters(model)   # each averaged parameter written once, in place

update_parameters writes every averaged tensor in place under no_grad with one copy_ (one
version bump each, recorded at the caller's line); the model's own parameters are only read.
The default average is torch 1.13's running mean avg + (p - avg) / (n + 1); avg_fn(avg, p, n)
(torch 1.13) and multi_avg_fn(avg_list, p_list, n) (torch 2.x) replace it. With use_buffers
the buffers are averaged too; without, they stay as copied at construction, as torch 1.13
(torch 2.x copies the model's buffers at each update).
"""

import itertools
import math
from copy import deepcopy

import mutagrad
from mutagrad.grad_mode import no_grad
from mutagrad.nn import Module
from mutagrad.optim.lr_scheduler import LRScheduler

__all__ = ["AveragedModel", "SWALR", "update_bn", "get_ema_avg_fn", "get_ema_multi_avg_fn",
           "get_swa_avg_fn", "get_swa_multi_avg_fn"]


def get_swa_avg_fn():
    """The running mean: avg + (p - avg) / (n + 1)."""
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


def get_ema_avg_fn(decay=0.999):
    """An exponential moving average: decay * avg + (1 - decay) * p."""
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_multi_avg_fn():
    """The running mean over lists, in place: avg.lerp_(p, 1 / (n + 1)) for floating tensors."""
    def swa_update(averaged_params, current_params, num_averaged):
        for avg, cur in zip(averaged_params, current_params):
            if avg.is_floating_point():
                weight = 1.0 / (float(num_averaged) + 1)
                avg.lerp_(cur, weight)
            else:
                avg.copy_(avg + (cur - avg) // (num_averaged + 1))
    return swa_update


def get_ema_multi_avg_fn(decay=0.999):
    """An EMA over lists, in place: avg.lerp_(p, 1 - decay) for floating tensors."""
    def ema_update(ema_params, current_params, num_averaged):
        for ema, cur in zip(ema_params, current_params):
            if ema.is_floating_point():
                ema.lerp_(cur, 1 - decay)
            else:
                ema.copy_(ema * decay + cur * (1 - decay))
    return ema_update


def _copy_model(model):
    """deepcopy(model), its parameters and buffers cloned (a tied parameter stays tied): the
    memo gives deepcopy the copies, so it never has to copy a tensor itself."""
    from mutagrad.nn import Parameter
    memo = {}
    with no_grad():
        for p in model.parameters():
            if id(p) not in memo:
                memo[id(p)] = Parameter(p.detach().clone(), requires_grad=p.requires_grad)
        for b in model.buffers():
            if b is not None and id(b) not in memo:
                memo[id(b)] = b.detach().clone()
    return deepcopy(model, memo)


class AveragedModel(Module):
    """A deep copy of `model` (on `device` if given) whose parameters (and buffers with
    use_buffers) hold an average of the models passed to update_parameters; n_averaged
    counts them. forward() runs the copy."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        self.module = _copy_model(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged",
                             mutagrad.tensor(0, dtype=mutagrad.long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _tensors(self, model):
        if self.use_buffers:
            return list(itertools.chain(model.parameters(), model.buffers()))
        return list(model.parameters())

    def update_parameters(self, model):
        mine = self._tensors(self.module)
        theirs = self._tensors(model)
        if len(mine) != len(theirs):
            raise ValueError(
                "AveragedModel.update_parameters: the model has %d %s but the averaged copy "
                "has %d; pass a model of the same architecture"
                % (len(theirs), "parameters and buffers" if self.use_buffers else "parameters",
                   len(mine)))
        with no_grad():
            averaged = [p.detach() for p in mine]
            current = [q.detach().to(p.device) for p, q in zip(averaged, theirs)]
            for a, c in zip(averaged, current):
                if tuple(a.shape) != tuple(c.shape):
                    raise ValueError(
                        "AveragedModel.update_parameters: a tensor of shape %s does not match "
                        "the averaged one of shape %s; pass a model of the same architecture"
                        % (list(c.shape), list(a.shape)))
            n = int(self.n_averaged.item())
            if n == 0:
                for a, c in zip(averaged, current):
                    a.copy_(c)
            elif self.multi_avg_fn is not None:
                self.multi_avg_fn(averaged, current, self.n_averaged.to(averaged[0].device)
                                  if averaged else self.n_averaged)
            else:
                avg_fn = self.avg_fn if self.avg_fn is not None else get_swa_avg_fn()
                for a, c in zip(averaged, current):
                    a.copy_(avg_fn(a, c, self.n_averaged.to(a.device)))
            self.n_averaged += 1


def update_bn(loader, model, device=None):
    """Recomputes the running statistics of model's batch-norm layers with one pass over
    `loader` (cumulative averages: momentum None), then restores their momentum and the
    model's training mode."""
    momenta = {}
    for module in model.modules():
        if hasattr(module, "running_mean") and hasattr(module, "momentum") \
                and module.running_mean is not None:
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's lr to swa_lr over anneal_epochs steps ("cos" or "linear"), then
    keeps it there (torch 1.13's formulas, so the same lrs)."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos",
                 last_epoch=-1):
        swa_lrs = self._format_param(optimizer, swa_lr)
        for value, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = value
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must by one of 'cos' or 'linear', "
                             "instead got {}".format(anneal_strategy))
        self.anneal_func = (self._cosine_anneal if anneal_strategy == "cos"
                            else self._linear_anneal)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError("anneal_epochs must be equal or greater than 0, got {}"
                             .format(anneal_epochs))
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _format_param(optimizer, swa_lrs):
        n = len(optimizer.param_groups)
        if isinstance(swa_lrs, (list, tuple)):
            if len(swa_lrs) != n:
                raise ValueError("swa_lr must have the same length as optimizer.param_groups: "
                                 "swa_lr has {}, optimizer.param_groups has {}"
                                 .format(len(swa_lrs), n))
            return swa_lrs
        return [swa_lrs] * n

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        self._warn_outside_step()
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        span = max(1, self.anneal_epochs)
        groups = self.optimizer.param_groups
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / span)))
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        alpha = self.anneal_func(max(0, min(1, step / span)))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, prev_lrs)]
