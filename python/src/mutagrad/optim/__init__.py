"""mutagrad.optim: SGD, Adam, AdamW, RMSprop and Adagrad with torch.optim's constructors,
param_groups, step(closure=None), zero_grad(set_to_none=True), state_dict() and
load_state_dict(); the LR schedulers (mutagrad.optim.lr_scheduler) and weight averaging
(mutagrad.optim.swa_utils).

    opt = mutagrad.optim.AdamW(model_params, lr=1e-3, weight_decay=1e-2)
    loss.backward()
    opt.step()          # in place, one version bump per parameter, recorded at this line
    opt.zero_grad()
    opt.param_groups[0]["lr"] = 1e-4   # as a scheduler does

The updates run in C++ (optim/, torch 1.13's single-tensor formulas). This class keeps the
param_groups dicts that torch users read and write and pushes their options to C++ before
each step. step() passes its caller's file:line to C++: if a parameter saved by a forward is
stepped before that forward's backward, the stale-tensor error names ``SGD.step`` (etc.) at the
line that called step().
"""

import sys

from mutagrad import _C
from mutagrad.grad_mode import enable_grad

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler",
           "swa_utils"]


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()

# Flags torch accepts that select another implementation of the same math; only the default
# is implemented (foreach is accepted and ignored: the single-tensor form is used).
_UNSUPPORTED_FLAGS = ("capturable", "differentiable", "fused")


class Optimizer:
    """The base of the optimizers: torch.optim.Optimizer's Python surface over a C++ optimizer.
    Subclasses set _kind ("SGD"), _options (the option names C++ knows) and call __init__."""

    _kind = None
    _options = ()

    def __init__(self, params, defaults):
        if isinstance(params, _C.Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                "dicts, but got " + type(params).__name__)
        self.defaults = defaults
        self.param_groups = []
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        self._impl = None
        for group in groups:
            self.add_param_group(group)

    # ---- groups and options -------------------------------------------------------------------
    def _c_options(self, group):
        out = {}
        for name in self._options:
            if name == "betas":
                beta1, beta2 = group["betas"]
                out["beta1"] = float(beta1)
                out["beta2"] = float(beta2)
            else:
                out[name] = float(group[name])
        return out

    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError("param group must be a dict, but got " + type(param_group).__name__)
        params = param_group["params"]
        if isinstance(params, _C.Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            param_group["params"] = list(params)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for param in param_group["params"]:
            if not isinstance(param, _C.Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + type(param).__name__)
            if not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
            if id(param) in seen:
                # torch 1.13 only warns within a group (and steps the parameter twice).
                raise ValueError("some parameters appear more than once in the parameter "
                                 "groups; give each parameter to one group, once")
            seen.add(id(param))
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 "optimization parameter " + name)
            param_group.setdefault(name, default)
        for flag in _UNSUPPORTED_FLAGS:
            if param_group.get(flag):
                raise ValueError("%s: %s=True is not implemented by mutagrad.optim (the "
                                 "single-tensor update is); pass %s=False"
                                 % (self._kind, flag, flag))
        options = self._c_options(param_group)
        if self._impl is None:
            self._impl = _C._optim.make(self._kind, [(param_group["params"], options)])
        else:
            self._impl.add_param_group(param_group["params"], options)
        self.param_groups.append(param_group)

    def _push_options(self):
        for i, group in enumerate(self.param_groups):
            self._impl.set_group_options(i, self._c_options(group))

    # ---- the update -----------------------------------------------------------------------------
    def step(self, closure=None):
        """One update of every parameter with a gradient; returns closure()'s loss if given."""
        return self._step(closure, sys._getframe(1))

    def _step(self, closure, caller):
        # caller: the frame whose line the bumps record (a scheduler's step counter wraps
        # step() and passes its own caller's frame).
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        self._push_options()
        self._impl.step(caller.f_code.co_filename, caller.f_lineno)
        return loss

    def zero_grad(self, set_to_none=True):
        self._impl.zero_grad(set_to_none)

    # ---- state ----------------------------------------------------------------------------------
    @property
    def state(self):
        """{param: {name: tensor}} for the parameters stepped so far (the live state tensors)."""
        out = {}
        for group in self.param_groups:
            for p in group["params"]:
                s = self._impl.state_of(p)
                if s:
                    out[p] = self._state_from_c(s)
        return out

    def _state_from_c(self, s):
        return s

    def _state_to_c(self, s):
        return s

    def state_dict(self):
        """{'state': {index: {name: tensor}}, 'param_groups': [{..., 'params': [index, ...]}]}
        as torch's; the tensors are copies taken now."""
        state, groups = self._impl.state_dict()
        param_groups = []
        for group, (_, indices) in zip(self.param_groups, groups):
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = list(indices)
            param_groups.append(packed)
        return {"state": {i: self._state_from_c(s) for i, s in state.items()},
                "param_groups": param_groups}

    def load_state_dict(self, state_dict):
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for saved, group in zip(groups, self.param_groups):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't "
                                 "match the size of optimizer's group")
        merged = []
        for saved, group in zip(groups, self.param_groups):
            g = dict(group)
            g.update({k: v for k, v in saved.items() if k != "params"})
            merged.append(g)
        c_groups = [(self._c_options(g), list(s["params"])) for g, s in zip(merged, groups)]
        c_state = {int(i): self._state_to_c(s) for i, s in state_dict["state"].items()}
        self._impl.load_state_dict(c_state, c_groups)
        for g, group in zip(merged, self.param_groups):
            params = group["params"]
            group.clear()
            group.update(g)
            group["params"] = params

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append("Parameter Group %d" % i)
            for key in sorted(group):
                if key != "params":
                    lines.append("    %s: %s" % (key, group[key]))
        lines.append(")")
        return "\n".join(lines)


def _check(ok, what, value):
    if not ok:
        raise ValueError("Invalid %s: %s" % (what, value))


class SGD(Optimizer):
    _kind = "SGD"
    _options = ("lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize")

    def __init__(self, params, lr=required, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False):
        _check(lr is required or lr >= 0.0, "learning rate", lr)
        _check(momentum >= 0.0, "momentum value", momentum)
        _check(weight_decay >= 0.0, "weight_decay value", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)


class Adam(Optimizer):
    _kind = "Adam"
    _options = ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize")

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=False):
        _check_adam(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)


class AdamW(Optimizer):
    _kind = "AdamW"
    _options = Adam._options

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False):
        _check_adam(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, foreach=foreach, maximize=maximize,
                        capturable=capturable)
        super().__init__(params, defaults)


def _check_adam(lr, betas, eps, weight_decay):
    _check(0.0 <= lr, "learning rate", lr)
    _check(0.0 <= eps, "epsilon value", eps)
    _check(0.0 <= betas[0] < 1.0, "beta parameter at index 0", betas[0])
    _check(0.0 <= betas[1] < 1.0, "beta parameter at index 1", betas[1])
    _check(0.0 <= weight_decay, "weight_decay value", weight_decay)


class RMSprop(Optimizer):
    _kind = "RMSprop"
    _options = ("lr", "alpha", "eps", "weight_decay", "momentum", "centered", "maximize")

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, foreach=None, maximize=False, differentiable=False):
        _check(0.0 <= lr, "learning rate", lr)
        _check(0.0 <= eps, "epsilon value", eps)
        _check(0.0 <= momentum, "momentum value", momentum)
        _check(0.0 <= weight_decay, "weight_decay value", weight_decay)
        _check(0.0 <= alpha, "alpha value", alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    # torch keeps RMSprop's step as a Python int.
    def _state_from_c(self, s):
        s = dict(s)
        if s.get("step") is not None:
            s["step"] = int(s["step"].item())
        return s

    def _state_to_c(self, s):
        s = dict(s)
        if isinstance(s.get("step"), int):
            s["step"] = _C.tensor(s["step"])
        return s


class Adagrad(Optimizer):
    """torch.optim.Adagrad 1.13: every parameter's state ("step", "sum") exists from the
    constructor on, as torch's; step() writes each parameter once (one version bump)."""

    _kind = "Adagrad"
    _options = ("lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps",
                "maximize")

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False):
        _check(0.0 <= lr, "learning rate", lr)
        _check(0.0 <= lr_decay, "lr_decay value", lr_decay)
        _check(0.0 <= weight_decay, "weight_decay value", weight_decay)
        _check(0.0 <= initial_accumulator_value, "initial_accumulator_value value",
               initial_accumulator_value)
        _check(0.0 <= eps, "epsilon value", eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)


from mutagrad.optim import lr_scheduler  # noqa: E402  (it imports Optimizer)


def __getattr__(name):
    # swa_utils needs mutagrad.nn, which mutagrad imports after optim: loaded on first use.
    if name == "swa_utils":
        import importlib
        return importlib.import_module("mutagrad.optim.swa_utils")
    raise AttributeError("module 'mutagrad.optim' has no attribute " + repr(name))
