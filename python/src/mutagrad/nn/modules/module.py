"""mutagrad.nn.Module: the base class of layers and models, with torch.nn.Module's API.

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(4, 8)      # registered as the child "fc1"
            self.fc2 = nn.Linear(8, 2)
        def forward(self, x):
            return self.fc2(F.relu(self.fc1(x)))

    model = MLP()
    list(model.state_dict())      # ['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias']

What a Module mutates (docs/nn.md): nothing on its own but load_state_dict (one copy_ per
parameter and buffer, after every check passed), to()/double()/... (the parameters take new
data, keeping their identity and version counter), zero_grad, and what its layers' forward
does (BatchNorm's running statistics, inplace activations).

Two additions to torch, both for error messages (Note [Module paths in errors]):
  - a stale-tensor error names a parameter or buffer by its path: "[torch.FloatTensor [4, 3]]
    (a view of fc1.weight)";
  - an in-place write made inside a module's forward records the module's path as its place:
    "The first in-place write after it was saved is relu_ at module features.2 (ReLU), called
    from model.py:31."
"""

import collections
import copy
import itertools
import os
import weakref

import mutagrad
from mutagrad import _C
from mutagrad.nn.parameter import Parameter

_support = _C._nn_module
_support._set_package_dir(os.path.dirname(os.path.dirname(os.path.dirname(__file__))) + os.sep)

__all__ = ["Module"]


class _IncompatibleKeys(
        collections.namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What load_state_dict returns: the keys the model had and the state_dict lacked, and the
    keys the state_dict had and the model lacked."""

    def __repr__(self):
        if self.missing_keys or self.unexpected_keys:
            return super().__repr__()
        return "<All keys matched successfully>"

    __str__ = __repr__


class RemovableHandle:
    """Returned by the register_*_hook methods: .remove() takes the hook out; also a context
    manager that removes it on exit."""

    _next_id = itertools.count()

    def __init__(self, hooks_dict):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(RemovableHandle._next_id)

    def remove(self):
        hooks = self.hooks_dict_ref()
        if hooks is not None and self.id in hooks:
            del hooks[self.id]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


# Note [Module paths in errors]
# Paths are relative to the module a forward started from (the root call: no module forward
# running on this thread). A root is (re)named when the module tree changed since it was named
# (any registration or deletion anywhere bumps _structure_version) or when another root's naming
# took over one of its modules: every submodule gets its label ("features.2 (ReLU)") and every
# parameter and buffer its name in the C++ registry (autograd/tensor_names.h; tied parameters
# take the first path, as named_parameters lists them). A module remembers the root that labeled
# it, so roots that share nothing (two layers called one after the other) are named once each.
# Then each Module.__call__ swaps the thread's module label (python/call_site.cc) in and out:
# two C calls per module call, nothing per op.
_structure_version = [0]


def _structure_changed():
    _structure_version[0] += 1


def _name_tree(root):
    version = _structure_version[0]
    if root.__dict__.get("_named_version") == version:
        return
    set_ = object.__setattr__
    root_ref = weakref.ref(root)
    for path, module in root.named_modules(remove_duplicate=False):
        owner = module.__dict__.get("_label_root")
        previous = owner() if owner is not None else None
        if previous is not None and previous is not root:
            set_(previous, "_named_version", None)  # its labels are ours now
        label = type(module).__name__
        set_(module, "_module_label", f"{path} ({label})" if path else label)
        set_(module, "_label_root", root_ref)
    for name, tensor in itertools.chain(root.named_parameters(), root.named_buffers()):
        _support._set_tensor_name(tensor, name)
    set_(root, "_named_version", version)


def _indent(text, spaces):
    """Every line of text but the first indented by `spaces`."""
    head, *rest = text.split("\n")
    return "\n".join([head] + [" " * spaces + line for line in rest])


class Module:
    """The base class of every layer and model (torch.nn.Module)."""

    _version = 1  # of the state_dict layout, in state_dict()._metadata
    training: bool

    def __init__(self):
        set_ = object.__setattr__
        set_(self, "training", True)
        set_(self, "_parameters", collections.OrderedDict())
        set_(self, "_buffers", collections.OrderedDict())
        set_(self, "_non_persistent_buffers_set", set())
        set_(self, "_modules", collections.OrderedDict())
        set_(self, "_forward_hooks", collections.OrderedDict())
        set_(self, "_forward_pre_hooks", collections.OrderedDict())
        set_(self, "_module_label", None)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function')

    # ---- registration ---------------------------------------------------------------------------

    def register_parameter(self, name, param):
        """Adds param (a Parameter, or None for an absent one) as the parameter `name`."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter", self._parameters)
        if param is not None:
            if not isinstance(param, Parameter):
                raise TypeError(
                    f"cannot assign '{_type_name(param)}' object to parameter '{name}' "
                    "(torch.nn.Parameter or None required)")
            if param.grad_fn is not None:
                raise ValueError(
                    f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters "
                    f"must be created explicitly. To express '{name}' as a function of another "
                    "Tensor, compute the value in the forward() method.")
        self._parameters[name] = param
        _structure_changed()

    def register_buffer(self, name, tensor, persistent=True):
        """Adds tensor (or None) as the buffer `name`; a persistent buffer is in state_dict()."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer", self._buffers)
        if tensor is not None and not isinstance(tensor, _C.Tensor):
            raise TypeError(f"cannot assign '{_type_name(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)
        _structure_changed()

    def add_module(self, name, module):
        """Adds module (or None) as the child `name`."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_type_name(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_type_name(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module
        _structure_changed()

    register_module = add_module

    def _check_name(self, name, kind, table):
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {_type_name(name)}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in table:
            raise KeyError(f"attribute '{name}' already exists")

    def get_submodule(self, target):
        """The submodule at the dotted path target ('' is self)."""
        module = self
        for item in target.split(".") if target else []:
            if not hasattr(module, item):
                raise AttributeError(f"{module._get_name()} has no attribute `{item}`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return module

    def get_parameter(self, target):
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
        param = getattr(module, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
        if name not in module._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return getattr(module, name)

    # ---- attributes -----------------------------------------------------------------------------

    def __getattr__(self, name):
        # Only reached when normal lookup failed: the registered members.
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            members = d.get(table)
            if members is not None and name in members:
                return members[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")

        def drop_from(*tables):
            for table in tables:
                if name in table:
                    if isinstance(table, dict):
                        del table[name]
                    else:
                        table.discard(name)

        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            drop_from(d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
            return
        modules = d.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            drop_from(d, self._parameters, self._buffers, self._non_persistent_buffers_set)
            modules[name] = value
            _structure_changed()
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            modules[name] = value
            _structure_changed()
            return
        buffers = d.get("_buffers")
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, _C.Tensor):
                raise TypeError(f"cannot assign '{_type_name(value)}' as buffer '{name}' "
                                "(torch.Tensor or None expected)")
            buffers[name] = value
            _structure_changed()
            return
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                self._non_persistent_buffers_set.discard(name)
                _structure_changed()
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = itertools.chain(dir(type(self)), self.__dict__, self._parameters, self._modules,
                               self._buffers)
        return sorted({k for k in keys if not k[0].isdigit()})

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __deepcopy__(self, memo):
        """copy.deepcopy(model): parameters and buffers cloned (tied ones stay tied, through
        memo), everything else by the usual protocol. The copy's paths are named at its first
        call."""
        if id(self) in memo:
            return memo[id(self)]
        result = type(self).__new__(type(self))
        memo[id(self)] = result
        for buf in self._buffers.values():
            if buf is not None and id(buf) not in memo and not isinstance(buf, Parameter):
                memo[id(buf)] = buf.detach().clone().requires_grad_(buf.requires_grad)
        for key, value in self.__dict__.items():
            if key not in ("_named_version", "_label_root"):
                object.__setattr__(result, key, copy.deepcopy(value, memo))
        return result

    # ---- iteration ------------------------------------------------------------------------------

    def _named_members(self, members_of, prefix="", recurse=True, remove_duplicate=True):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for key, value in members_of(module):
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (module_prefix + "." + key if module_prefix else key), value

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """(path, parameter) pairs; a parameter reached by two paths is listed once."""
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                   remove_duplicate)

    def parameters(self, recurse=True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse,
                                   remove_duplicate)

    def buffers(self, recurse=True):
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_children(self):
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(path, module) for self and every submodule, depth first; each module once unless
        remove_duplicate=False."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + "." + name if prefix else name,
                                            remove_duplicate)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    # ---- modes and gradients --------------------------------------------------------------------

    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Drops every parameter's gradient (set_to_none, torch 2's default) or zeroes it in
        place (one write per gradient, detached from any graph first, as torch)."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                g = p.grad
                if g.grad_fn is not None:
                    g.detach_()
                else:
                    g.requires_grad_(False)
                g.zero_()

    def apply(self, fn):
        """Calls fn on every submodule (children first) and then on self; returns self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ---- devices and dtypes ---------------------------------------------------------------------

    def _apply(self, fn):
        """fn applied to every parameter, gradient and buffer. A parameter keeps its identity
        (and so its optimizer state and tied uses): it takes fn's result as its data."""
        for module in self.children():
            module._apply(fn)
        with mutagrad.no_grad():
            for param in self._parameters.values():
                if param is None:
                    continue
                param.data = fn(param)
                if param.grad is not None:
                    param.grad.data = fn(param.grad)
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs):
        """to(device), to(dtype), to(device, dtype), to(tensor), with non_blocking= accepted.
        Floating parameters and buffers take the dtype; all take the device."""
        device, dtype = _parse_to(args, kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={dtype}")

        def convert(t):
            if dtype is not None and t.is_floating_point():
                return t.to(device=device, dtype=dtype) if device is not None else t.to(dtype)
            return t.to(device) if device is not None else t

        return self._apply(convert)

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda() if device is None else t.to(_cuda_device(device)))

    def double(self):
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def float(self):
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def half(self):
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self):
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    # ---- state_dict -----------------------------------------------------------------------------

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An OrderedDict path -> tensor of every parameter and persistent buffer (detached,
        sharing memory with them unless keep_vars). Tied parameters appear under each path."""
        if args:  # torch's deprecated positional form (destination, prefix, keep_vars)
            destination, prefix, keep_vars = (list(args) + [destination, prefix, keep_vars]
                                              [len(args):])[:3]
        if destination is None:
            destination = collections.OrderedDict()
            destination._metadata = collections.OrderedDict()
        metadata = getattr(destination, "_metadata", None)
        if metadata is not None:
            metadata[prefix[:-1]] = {"version": self._version}
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        return destination

    def _plan_load(self, state_dict, prefix, plan, missing, unexpected, errors):
        """Checks this module's keys against state_dict (nothing is written): appends
        (target, source) copies to plan and the problems to the lists."""
        local = [(n, p) for n, p in self._parameters.items() if p is not None]
        local += [(n, b) for n, b in self._buffers.items()
                  if b is not None and n not in self._non_persistent_buffers_set]
        local_names = {n for n, _ in local}
        for name, target in local:
            key = prefix + name
            if key not in state_dict:
                missing.append(key)
                continue
            source = state_dict[key]
            if not isinstance(source, _C.Tensor):
                errors.append(f'While copying the parameter named "{key}", expected '
                              "torch.Tensor or Tensor-like object from checkpoint but received "
                              f"{type(source)}")
                continue
            if target.dim() == 0 and source.dim() == 1 and source.shape[0] == 1:
                source = source[0]  # torch's reading of checkpoints from before 0-dim tensors
            if tuple(source.shape) != tuple(target.shape):
                errors.append(f"size mismatch for {key}: copying a param with shape "
                              f"{source.shape} from checkpoint, the shape in current model is "
                              f"{target.shape}.")
                continue
            if source.is_floating_point() and not target.is_floating_point():
                errors.append(f"dtype mismatch for {key}: copying a {source.dtype} tensor from "
                              f"checkpoint into the {target.dtype} tensor of the model would "
                              "truncate it; convert the checkpoint's value first.")
                continue
            plan.append((target, source))
        for key in state_dict:
            if key.startswith(prefix):
                first = key[len(prefix):].split(".", 1)[0]
                if first not in self._modules and first not in local_names:
                    unexpected.append(key)
        for name, module in self._modules.items():
            if module is not None:
                module._plan_load(state_dict, prefix + name + ".", plan, missing, unexpected,
                                  errors)

    def load_state_dict(self, state_dict, strict=True):
        """Copies state_dict's tensors into the parameters and buffers (copy_ under no_grad:
        one version bump each, with the caller's line). Every key, shape and dtype is checked
        first; on any problem it raises RuntimeError naming all of them and changes nothing
        (torch copies the matching ones before raising). Returns _IncompatibleKeys."""
        if not isinstance(state_dict, collections.abc.Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        plan, missing, unexpected, errors = [], [], [], []
        self._plan_load(state_dict, "", plan, missing, unexpected, errors)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        # A tensor reached by several keys (tied weights) is written once, with the last key's
        # value (what torch's successive copies leave).
        last = collections.OrderedDict()
        for target, source in plan:
            last.pop(id(target), None)
            last[id(target)] = (target, source)
        with mutagrad.no_grad():
            for target, source in last.values():
                target.copy_(source)
        return _IncompatibleKeys(missing, unexpected)

    # ---- hooks and calls ------------------------------------------------------------------------

    def register_forward_pre_hook(self, hook):
        """hook(module, args) runs before forward; a non-None result replaces args (a value
        that is not a tuple becomes a 1-tuple)."""
        handle = RemovableHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle.id] = hook
        return handle

    def register_forward_hook(self, hook):
        """hook(module, args, output) runs after forward; a non-None result replaces output."""
        handle = RemovableHandle(self._forward_hooks)
        self._forward_hooks[handle.id] = hook
        return handle

    def __call__(self, *args, **kwargs):
        label = self.__dict__.get("_module_label")
        swap = _support._swap_module_label
        previous = swap(label if label is not None else type(self).__name__)
        try:
            if previous is None:  # a root call: name the tree (cheap when unchanged)
                _name_tree(self)
                swap(self.__dict__.get("_module_label") or type(self).__name__)
            for hook in tuple(self._forward_pre_hooks.values()):
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
            output = self.forward(*args, **kwargs)
            for hook in tuple(self._forward_hooks.values()):
                result = hook(self, args, output)
                if result is not None:
                    output = result
            return output
        finally:
            swap(previous)

    _call_impl = __call__

    # ---- repr -----------------------------------------------------------------------------------

    def extra_repr(self):
        """The text between the parentheses of this module's repr (layers override it)."""
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        # One line when there is only a one-line extra_repr; else one line per extra_repr line
        # and per child ("(name): child's repr", indented), between "Name(" and ")".
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): " + _indent(repr(module), 2)
                       for name, module in self._modules.items()]
        lines = extra_lines + child_lines
        if not lines:
            body = ""
        elif len(extra_lines) == 1 and not child_lines:
            body = extra_lines[0]
        else:
            body = "\n  " + "\n  ".join(lines) + "\n"
        return f"{self._get_name()}({body})"


def _type_name(obj):
    if isinstance(obj, _C.Tensor):
        return obj.type()  # "torch.FloatTensor", as torch.typename
    t = type(obj)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _cuda_device(device):
    if isinstance(device, int):
        return f"cuda:{device}"
    return device


def _parse_to(args, kwargs):
    """(device, dtype) from Module.to's arguments."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() received an invalid combination of arguments: {sorted(kwargs)}")
    for arg in args:
        if isinstance(arg, _C.Tensor):
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, (str, mutagrad.device)):
            device = arg
        elif isinstance(arg, int) and not isinstance(arg, bool):
            device = f"cuda:{arg}"
        elif isinstance(arg, bool):
            continue  # non_blocking, positionally
        elif arg is not None:
            dtype = arg
    return device, dtype

