"""mutagrad.nn.Module and nn.Parameter against torch 1.13's: registration by attribute and its
errors, the iterators (recurse, prefix, shared and tied parameters listed once), train/eval,
requires_grad_, zero_grad, apply, to/double/float/cpu/cuda keeping parameter identity,
state_dict keys and load_state_dict (strict and not: torch's messages and _IncompatibleKeys; a
mismatch anywhere changes nothing; one version bump per copied parameter), forward hooks and
pre-hooks with handles, print(model), __dir__/__delattr__; Parameter's type, identity and repr;
stale-tensor errors naming the parameter's path and the module that wrote in place. On the CPU
and the host-run CUDA device.
"""

import gc
import re

import numpy as np
import pytest
import torch

import mutagrad as mg
from lib_util import from_torch, numpy_of

DEVICE = "cpu"


@pytest.fixture(params=["cpu", "cuda"], autouse=True)
def mg_device(request):
    global DEVICE
    DEVICE = request.param
    yield
    DEVICE = "cpu"


def lib_device(lib):
    return "cpu" if lib is torch else DEVICE


def copy_state(t_module, m_module):
    """torch's state_dict values into the mutagrad module (through load_state_dict)."""
    state = {k: from_torch(mg, v).to(DEVICE) for k, v in t_module.state_dict().items()}
    m_module.load_state_dict(state)


def net(lib, tied=False):
    """The same small model in either library."""
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.act = nn.ReLU()
            self.register_buffer("steps", lib.zeros(1))
            self.register_buffer("scratch", lib.zeros(2), persistent=False)

        def forward(self, x):
            return self.act(self.fc(x))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(3, 4)
            self.blocks = nn.Sequential(Block(), Block())
            self.head = nn.Linear(4, 3, bias=False)
            if tied:
                self.head2 = nn.Linear(4, 3, bias=False)
                self.head2.weight = self.head.weight
            self.scale = nn.Parameter(lib.ones(1))

        def forward(self, x):
            return self.head(self.blocks(self.embed(x))) * self.scale

    return Net().to(lib_device(lib))


def structure(model, lib):
    return {
        "params": [n for n, _ in model.named_parameters()],
        "params_norec": [n for n, _ in model.named_parameters(recurse=False)],
        "params_prefix": [n for n, _ in model.blocks.named_parameters(prefix="blocks")],
        "nparams": len(list(model.parameters())),
        "buffers": [n for n, _ in model.named_buffers()],
        "children": [n for n, _ in model.named_children()],
        "modules": [n for n, _ in model.named_modules()],
        "modules_prefix": [n for n, _ in model.named_modules(prefix="m")],
        "types": [type(m).__name__ for m in model.modules()],
        "state": list(model.state_dict()),
        "state_prefix": list(model.state_dict(prefix="p.")),
        "shapes": [tuple(p.shape) for p in model.parameters()],
    }


@pytest.mark.parametrize("tied", [False, True])
def test_iterators_and_state_dict_keys_match_torch(tied):
    t, m = net(torch, tied), net(mg, tied)
    assert structure(m, mg) == structure(t, torch)
    if tied:
        # One parameter reached by two paths: listed once, two keys in state_dict, one
        # optimizer entry.
        assert m.head.weight is m.head2.weight
        assert sum(p is m.head.weight for p in m.parameters()) == 1
        assert "head.weight" in m.state_dict() and "head2.weight" in m.state_dict()
        opt = mg.optim.SGD(m.parameters(), lr=0.1)
        assert len(opt.param_groups[0]["params"]) == len(list(t.parameters()))


def test_state_dict_tensors_share_memory_and_keep_vars():
    m = net(mg)
    sd = m.state_dict()
    assert isinstance(sd["embed.weight"], mg.Tensor)
    assert not isinstance(sd["embed.weight"], mg.nn.Parameter)
    assert not sd["embed.weight"].requires_grad
    with mg.no_grad():
        sd["embed.weight"][0, 0] = 7.0
    assert m.embed.weight[0, 0].item() == 7.0
    assert m.state_dict(keep_vars=True)["embed.weight"] is m.embed.weight
    assert m.state_dict()._metadata[""] == {"version": 1}
    assert m.state_dict()._metadata["blocks.0.fc"] == {"version": 1}


def test_forward_and_gradients_match_torch_after_copying_state():
    t, m = net(torch).double(), net(mg).double()
    copy_state(t, m)
    x = torch.randn(5, 3, dtype=torch.float64)
    t_out = t(x)
    m_out = m(from_torch(mg, x).to(DEVICE))
    np.testing.assert_allclose(numpy_of(m_out), numpy_of(t_out), rtol=1e-12, atol=1e-12)
    t_out.sum().backward()
    m_out.sum().backward()
    for (tn, tp), (mn, mp) in zip(t.named_parameters(), m.named_parameters()):
        assert tn == mn
        np.testing.assert_allclose(numpy_of(mp.grad), numpy_of(tp.grad), rtol=1e-12,
                                   atol=1e-12, err_msg=mn)


def scenario_outcome(fn, lib):
    try:
        return ("ok", fn(lib))
    except Exception as e:  # noqa: BLE001  (the outcome compared with torch's)
        return (type(e).__name__, str(e).replace("torch.nn.Parameter", "Parameter"))


REGISTRATION_SCENARIOS = {
    "param_before_init": lambda lib: _before_init(lib, "param"),
    "module_before_init": lambda lib: _before_init(lib, "module"),
    "register_param_before_init": lambda lib: _before_init(lib, "register_parameter"),
    "register_buffer_before_init": lambda lib: _before_init(lib, "register_buffer"),
    "tensor_into_param_slot": lambda lib: setattr(lib.nn.Linear(2, 2), "weight",
                                                  lib.zeros(2, 2)),
    "int_into_module_slot": lambda lib: setattr(lib.nn.Sequential(lib.nn.ReLU()), "0", 3),
    "int_into_buffer_slot": lambda lib: setattr(lib.nn.BatchNorm1d(2), "running_mean", 3),
    "dotted_param_name": lambda lib: lib.nn.Module().register_parameter(
        "a.b", lib.nn.Parameter(lib.zeros(1))),
    "empty_param_name": lambda lib: lib.nn.Module().register_parameter(
        "", lib.nn.Parameter(lib.zeros(1))),
    "int_param_name": lambda lib: lib.nn.Module().register_parameter(
        3, lib.nn.Parameter(lib.zeros(1))),
    "tensor_as_parameter": lambda lib: lib.nn.Module().register_parameter("w", lib.zeros(1)),
    "existing_attr_param": lambda lib: _existing(lib, "param"),
    "existing_attr_buffer": lambda lib: _existing(lib, "buffer"),
    "existing_attr_module": lambda lib: _existing(lib, "module"),
    "dotted_buffer_name": lambda lib: lib.nn.Module().register_buffer("a.b", lib.zeros(1)),
    "list_as_buffer": lambda lib: lib.nn.Module().register_buffer("b", [1]),
    "int_as_module": lambda lib: lib.nn.Module().add_module("m", 3),
    "dotted_module_name": lambda lib: lib.nn.Module().add_module("a.b", lib.nn.ReLU()),
    "empty_module_name": lambda lib: lib.nn.Module().add_module("", lib.nn.ReLU()),
    "missing_attribute": lambda lib: lib.nn.Linear(2, 2).nope,
    "forward_missing": lambda lib: lib.nn.Module()(lib.zeros(1)),
    "train_non_bool": lambda lib: lib.nn.ReLU().train(1),
    "to_int_dtype": lambda lib: lib.nn.Linear(2, 2).to(lib.int64),
    "load_non_mapping": lambda lib: lib.nn.Linear(2, 2).load_state_dict([1, 2]),
    "sequential_index": lambda lib: lib.nn.Sequential(lib.nn.ReLU())[3],
    "none_param_then_read": lambda lib: _none_param(lib),
}


def _before_init(lib, what):
    class Early(lib.nn.Module):
        def __init__(self):
            if what == "param":
                self.w = lib.nn.Parameter(lib.zeros(1))
            elif what == "module":
                self.m = lib.nn.ReLU()
            elif what == "register_parameter":
                self.register_parameter("w", None)
            else:
                self.register_buffer("b", None)
            super().__init__()

    Early()


def _existing(lib, what):
    m = lib.nn.Module()
    m.x = 3
    if what == "param":
        m.register_parameter("x", None)
    elif what == "buffer":
        m.register_buffer("x", None)
    else:
        m.add_module("x", None)


def _none_param(lib):
    m = lib.nn.Linear(2, 2, bias=False)
    return (m.bias is None, "bias" in dict(m.named_parameters()), list(m.state_dict()))


@pytest.mark.parametrize("name", sorted(REGISTRATION_SCENARIOS))
def test_registration_errors_match_torch(name):
    fn = REGISTRATION_SCENARIOS[name]
    t_kind, t_msg = scenario_outcome(fn, torch)
    m_kind, m_msg = scenario_outcome(fn, mg)
    assert m_kind == t_kind, (name, m_msg, t_msg)
    if t_kind != "ok" and name not in ("to_int_dtype", "load_non_mapping", "int_param_name"):
        norm = lambda s: s.replace("torch.", "").replace("mutagrad.", "")  # noqa: E731
        assert norm(m_msg) == norm(t_msg), (name, m_msg, t_msg)
    elif t_kind == "ok":
        assert m_msg == t_msg


def test_attribute_assignment_moves_between_kinds():
    for lib in (torch, mg):
        m = lib.nn.Module()
        m.a = lib.nn.ReLU()
        m.a = lib.nn.Parameter(lib.zeros(1))  # a parameter now: the child is gone
        assert [n for n, _ in m.named_parameters()] == ["a"]
        assert [n for n, _ in m.named_children()] == []
        m.a = None
        assert [n for n, _ in m.named_parameters()] == [] and "a" in m._parameters
        with pytest.raises(TypeError, match="as parameter 'a'"):
            m.a = lib.nn.ReLU()
        del m.a
        m.a = lib.nn.ReLU()
        assert [n for n, _ in m.named_children()] == ["a"] and "a" not in m._parameters
        m.register_buffer("b", lib.zeros(1))
        m.b = lib.ones(2)  # still a buffer
        assert [n for n, _ in m.named_buffers()] == ["b"]
        m.b = None
        assert list(m.state_dict()) == []
        del m.a
        assert [n for n, _ in m.named_children()] == []
        assert "b" in dir(m)
        m.w = lib.nn.Parameter(lib.zeros(1))
        assert "w" in dir(m) and "forward" in dir(m)


def test_train_eval_requires_grad_zero_grad_apply():
    for lib in (torch, mg):
        m = net(lib)
        assert m.training and all(x.training for x in m.modules())
        assert m.eval() is m
        assert not any(x.training for x in m.modules())
        m.blocks.train()
        assert [x.training for x in m.modules()] == [False, False, True, True, True, True, True,
                                                      True, True, False]
        m.requires_grad_(False)
        assert not any(p.requires_grad for p in m.parameters())
        m.requires_grad_()
        seen = []
        assert m.apply(lambda x: seen.append(type(x).__name__)) is m
        assert seen == ["Linear", "Linear", "ReLU", "Block", "Linear", "ReLU", "Block",
                        "Sequential", "Linear", "Net"]


def test_zero_grad_both_modes():
    m = net(mg)
    m(mg.randn(2, 3, device=DEVICE)).sum().backward()
    g = m.embed.weight.grad
    v = g._version
    m.zero_grad(set_to_none=False)
    assert m.embed.weight.grad is g and g._version == v + 1
    assert not g.any().item()
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_to_double_float_keep_parameter_identity_and_optimizer_state():
    m = net(mg)
    params = list(m.parameters())
    opt = mg.optim.SGD(m.parameters(), lr=0.1)
    m.double()
    assert all(p.dtype == mg.float64 for p in m.parameters())
    assert all(a is b for a, b in zip(params, m.parameters()))
    assert m.blocks[0].steps.dtype == mg.float64
    assert opt.param_groups[0]["params"][0] is params[0]
    m.float()
    assert all(p.dtype == mg.float32 for p in m.parameters())
    m.to(mg.float64)
    assert m.embed.weight.dtype == mg.float64
    other = "cuda" if DEVICE == "cpu" else "cpu"
    m.to(other)
    assert all(str(p.device).startswith(other) for p in m.parameters())
    assert str(m.blocks[0].steps.device).startswith(other)
    m.cpu()
    assert all(str(p.device) == "cpu" for p in m.parameters())
    m.cuda()
    assert all(str(p.device).startswith("cuda") for p in m.parameters())
    assert all(a is b for a, b in zip(params, m.parameters()))


def test_load_state_dict_round_trip_and_one_bump_per_parameter():
    t, m = net(torch, tied=True), net(mg, tied=True)
    before = {n: p._version for n, p in m.named_parameters()}
    before.update({n: b._version for n, b in m.named_buffers()})
    state = {k: from_torch(mg, v).to(DEVICE) for k, v in t.state_dict().items()}
    result = m.load_state_dict(state)
    assert repr(result) == "<All keys matched successfully>"
    assert result.missing_keys == [] and result.unexpected_keys == []
    for n, p in m.named_parameters():
        assert p._version == before[n] + 1, n  # the tied head.weight too: written once
    assert m.blocks[0].steps._version == before["blocks.0.steps"] + 1
    assert m.blocks[0].scratch._version == before["blocks.0.scratch"]  # not persistent
    for k, v in t.state_dict().items():
        np.testing.assert_array_equal(numpy_of(m.state_dict()[k]), numpy_of(v), err_msg=k)


def _mismatched(lib_state):
    bad = dict(lib_state)
    bad.pop("blocks.1.fc.bias")
    bad["extra.weight"] = bad["embed.bias"]
    bad["head.weight"] = bad["head.weight"][:, :2]  # the last key: checked before any copy
    bad["zzz"] = bad["scale"]
    return bad


@pytest.mark.parametrize("strict", [True, False])
def test_load_state_dict_mismatch_changes_nothing(strict):
    t, m = net(torch), net(mg)
    t_state = {k: v.clone() for k, v in net(torch).state_dict().items()}
    m_state = {k: from_torch(mg, v).to(DEVICE) for k, v in t_state.items()}
    with pytest.raises(RuntimeError) as t_err:
        t.load_state_dict(_mismatched(t_state), strict=strict)
    values = {n: numpy_of(p) for n, p in m.state_dict().items()}
    versions = {n: p._version for n, p in m.state_dict(keep_vars=True).items()}
    with pytest.raises(RuntimeError) as m_err:
        m.load_state_dict(_mismatched(m_state), strict=strict)
    norm = lambda s: re.sub(r"(torch|mutagrad)\.Size", "Size", s)  # noqa: E731
    assert norm(str(m_err.value)) == norm(str(t_err.value))
    for n, p in m.state_dict(keep_vars=True).items():
        assert p._version == versions[n], n
        np.testing.assert_array_equal(numpy_of(p), values[n], err_msg=n)


def test_load_state_dict_not_strict_reports_keys_as_torch():
    t, m = net(torch), net(mg)
    t_state = dict(t.state_dict())
    t_state.pop("blocks.1.fc.bias")
    t_state["extra.weight"] = t_state["embed.bias"]
    m_state = {k: from_torch(mg, v).to(DEVICE) for k, v in t_state.items()}
    t_res = t.load_state_dict(t_state, strict=False)
    m_res = m.load_state_dict(m_state, strict=False)
    assert type(m_res).__name__ == "_IncompatibleKeys"
    assert tuple(m_res) == tuple(t_res)
    assert repr(m_res) == repr(t_res)
    np.testing.assert_array_equal(numpy_of(m.embed.weight), numpy_of(t.embed.weight))


def test_load_state_dict_refuses_truncating_float_into_int_buffer():
    m = mg.nn.BatchNorm1d(2).to(DEVICE)
    state = {k: v.clone() + 1 for k, v in m.state_dict().items()}
    state["num_batches_tracked"] = mg.tensor(2.5, device=DEVICE)
    versions = [t._version for t in m.state_dict().values()]
    with pytest.raises(RuntimeError, match="dtype mismatch for num_batches_tracked"):
        m.load_state_dict(state)
    assert m.num_batches_tracked.item() == 0 and m.running_mean.sum().item() == 0
    assert [t._version for t in m.state_dict().values()] == versions


def test_forward_hooks_and_pre_hooks():
    outs = []
    for lib in (torch, mg):
        m = lib.nn.Linear(3, 2).double().to(lib_device(lib))
        with lib.no_grad():
            m.weight.copy_(from_torch(lib, torch.arange(6.0).reshape(2, 3)).double())
            m.bias.fill_(0.5)
        calls = []
        h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
        h2 = m.register_forward_hook(lambda mod, args, out: out + 1)
        h3 = m.register_forward_hook(lambda mod, args, out: calls.append(
            (type(mod).__name__, len(args))))
        x = lib.ones(1, 3, dtype=lib.float64, device=lib_device(lib))
        a = m(x)
        h1.remove()
        b = m(x)
        h2.remove()
        h2.remove()  # twice is harmless
        c = m(x)
        with m.register_forward_pre_hook(lambda mod, args: args[0] * 0):
            d = m(x)  # a non-tuple result is the only argument
        e = m(x)
        h3.remove()
        outs.append([numpy_of(v).tolist() for v in (a, b, c, d, e)] + [calls])
    assert outs[0] == outs[1]


def deep_model(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(inplace=True), nn.Dropout(0.2),
        nn.Sequential(nn.Linear(8, 8, bias=False), nn.Tanh()),
        nn.ModuleList([nn.LayerNorm(8), nn.Identity()]),
        nn.ModuleDict({"a": nn.Sigmoid(), "b": nn.Softmax(dim=1)}),
        nn.Embedding(10, 3, padding_idx=0), nn.Flatten(), nn.Unflatten(1, (2, 4)),
        nn.GroupNorm(2, 4), nn.LeakyReLU(0.1, inplace=True), nn.ELU(), nn.GELU("tanh"),
        nn.SiLU(), nn.Softplus(beta=2), nn.LogSoftmax(-1), nn.Bilinear(2, 3, 4),
        nn.BatchNorm2d(3, momentum=None, affine=False), nn.Dropout2d(), nn.CrossEntropyLoss(),
        nn.MSELoss(), nn.BCEWithLogitsLoss(), nn.KLDivLoss(), nn.HuberLoss())


def test_repr_matches_torch():
    assert repr(deep_model(mg)) == repr(deep_model(torch))
    assert str(net(mg)) == str(net(torch))
    assert repr(mg.nn.Module()) == "Module()"


def test_parameter_is_a_tensor_subclass_with_one_object():
    data = mg.arange(6.0, device=DEVICE).reshape(2, 3)
    p = mg.nn.Parameter(data)
    assert isinstance(p, mg.Tensor) and type(p) is mg.nn.Parameter
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert not mg.nn.Parameter(data, requires_grad=False).requires_grad
    # Parameter(data) is data.detach(): the same memory and version counter.
    with mg.no_grad():
        p[0, 0] = 10.0
    assert data[0, 0].item() == 10.0 and data._version == p._version == 1
    assert type(p * 2) is mg.Tensor and type(p.detach()) is mg.Tensor
    # The object survives round trips through C++.
    opt = mg.optim.SGD([p], lr=0.1)
    assert opt.param_groups[0]["params"][0] is p
    p.foo = "kept"
    seen = []
    p.register_hook(lambda g: seen.append(g))
    (p * p).sum().backward()
    assert type(p.grad) is mg.Tensor
    gc.collect()
    assert mg.autograd.grad((p * 3).sum(), [p])[0].shape == p.shape
    lin = mg.nn.Linear(3, 2)
    w = lin.weight
    assert next(iter(lin.parameters())) is w and lin.state_dict(keep_vars=True)["weight"] is w
    assert type(mg.nn.Parameter()) is mg.nn.Parameter and mg.nn.Parameter().shape == (0,)


def test_parameter_repr_matches_torch():
    t = torch.nn.Parameter(torch.tensor([[1.5, -2.0], [0.25, 3.0]]))
    m = mg.nn.Parameter(mg.tensor([[1.5, -2.0], [0.25, 3.0]]))
    assert repr(m) == repr(t)
    t = torch.nn.Parameter(torch.tensor([1.0, 2.0], dtype=torch.float64), requires_grad=False)
    m = mg.nn.Parameter(mg.tensor([1.0, 2.0], dtype=mg.float64), requires_grad=False)
    assert repr(m).replace("mutagrad.", "torch.") == repr(t)


def test_written_parameter_is_named_by_its_path_in_the_stale_error():
    class MLP(mg.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = mg.nn.Linear(3, 4)
            self.fc2 = mg.nn.Linear(4, 2)

        def forward(self, x):
            return self.fc2(self.fc1(x).tanh())

    for write_under_no_grad in (False, True):
        model = MLP().to(DEVICE)
        loss = model(mg.randn(5, 3, device=DEVICE)).sum()
        if write_under_no_grad:
            with mg.no_grad():
                model.fc2.weight.mul_(0.5)
            name = "fc2.weight"
        else:
            model.fc2.weight.data.add_(1.0)  # .data: a new counter, nothing stale
            with mg.no_grad():
                model.fc1.bias.zero_()  # fc1.bias is not saved by anything
            loss.backward()
            assert model.fc2.weight.grad is not None
            continue
        with pytest.raises(RuntimeError) as err:
            loss.backward()
        msg = str(err.value)
        assert f"(a view of {name})" in msg or f"({name})" in msg, msg
        assert "mul_ at" in msg and "nn_module_test.py" in msg, msg


def test_stale_error_names_a_buffer_and_the_tied_path():
    model = mg.nn.Sequential(mg.nn.Linear(2, 2, bias=False), mg.nn.Linear(2, 2, bias=False))
    model[1].weight = model[0].weight  # tied: the first path names it
    loss = model(mg.randn(3, 2, device="cpu")).sum()
    with mg.no_grad():
        model[1].weight.add_(1.0)
    with pytest.raises(RuntimeError, match=re.escape("of 0.weight)")):
        loss.backward()


def test_inplace_relu_after_sigmoid_names_the_module_path():
    model = mg.nn.Sequential()
    model.add_module("features", mg.nn.Sequential(
        mg.nn.Linear(3, 3), mg.nn.Sigmoid(), mg.nn.ReLU(inplace=True)))
    model.to(DEVICE)
    out = model(mg.randn(4, 3, device=DEVICE))  # the line the error names
    line = test_inplace_relu_after_sigmoid_names_the_module_path.__code__.co_firstlineno + 5
    with pytest.raises(RuntimeError) as err:
        out.sum().backward()
    msg = str(err.value)
    assert "SigmoidBackward0" in msg, msg
    assert f"relu_ at module features.2 (ReLU), called from {__file__}:{line}." in msg, msg
    # torch refuses it too (without naming the module).
    t = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Sigmoid(), torch.nn.ReLU(True))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        t(torch.randn(4, 3)).sum().backward()


def test_module_paths_follow_the_root_called_and_changes_of_the_tree():
    inner = mg.nn.Sequential(mg.nn.Sigmoid(), mg.nn.ReLU(inplace=True))
    outer = mg.nn.Sequential(mg.nn.Identity(), inner)
    for root, path in ((inner, "1 (ReLU)"), (outer, "1.1 (ReLU)"), (inner, "1 (ReLU)")):
        out = root(mg.randn(3, device=DEVICE, requires_grad=True))
        with pytest.raises(RuntimeError, match=re.escape(f"relu_ at module {path}, called")):
            out.sum().backward()
    outer.add_module("2", mg.nn.Identity())
    outer[0] = mg.nn.Sequential(mg.nn.Identity())
    out = outer(mg.randn(3, device=DEVICE, requires_grad=True))
    with pytest.raises(RuntimeError, match=re.escape("relu_ at module 1.1 (ReLU), called")):
        out.sum().backward()
    # Outside module calls, the write's own line, as before.
    y = mg.randn(3, device=DEVICE, requires_grad=True).sigmoid()
    y.relu_()
    with pytest.raises(RuntimeError, match=r"relu_ at [^ ]*nn_module_test.py:\d+\."):
        y.sum().backward()


def test_load_state_dict_copy_is_named_in_a_stale_error():
    model = mg.nn.Linear(2, 2).to(DEVICE)
    loss = model(mg.randn(3, 2, device=DEVICE, requires_grad=True)).sum()
    model.load_state_dict({k: v.clone() + 1 for k, v in model.state_dict().items()})
    with pytest.raises(RuntimeError) as err:
        loss.backward()
    msg = str(err.value)
    assert "(a view of weight)" in msg and f"copy_ at {__file__}:" in msg, msg


def test_deepcopy_clones_parameters_and_buffers_keeping_ties():
    m = net(mg, tied=True)
    m(mg.randn(2, 3, device=DEVICE))  # named and called before copying
    c = __import__("copy").deepcopy(m)
    assert type(c.head.weight) is mg.nn.Parameter and c.head.weight is c.head2.weight
    assert c.head.weight is not m.head.weight
    assert list(c.state_dict()) == list(m.state_dict())
    for (k, a), (_, b) in zip(m.state_dict().items(), c.state_dict().items()):
        np.testing.assert_array_equal(numpy_of(a), numpy_of(b), err_msg=k)
    with mg.no_grad():
        c.blocks[0].steps.add_(1)
        c.embed.weight.zero_()
    assert m.blocks[0].steps.sum().item() == 0 and m.embed.weight.abs().sum().item() > 0
    assert str(c) == str(m)
    # The copy names its own parameters when called.
    out = c(mg.randn(2, 3, device=DEVICE, requires_grad=True)).sum()
    with mg.no_grad():
        c.head.weight.mul_(2)
    with pytest.raises(RuntimeError, match=re.escape("(a view of head.weight)")):
        out.backward()


def test_layers_called_one_after_the_other_keep_their_names():
    l1, l2 = mg.nn.Linear(3, 3).to(DEVICE), mg.nn.Linear(3, 3).to(DEVICE)
    model = mg.nn.Sequential(l1, mg.nn.Tanh(), l2)
    x = mg.randn(2, 3, device=DEVICE, requires_grad=True)
    model(x)
    assert mg._C._nn_module._tensor_name(l2.weight) == "2.weight"
    l1(x)
    l2(l1(x))  # each its own root now: "weight" and "bias", each named once
    assert mg._C._nn_module._tensor_name(l2.weight) == "weight"
    version = l2.__dict__["_named_version"]
    l1(x)
    assert l2.__dict__["_named_version"] == version
    model(x)  # the model takes its modules back
    assert mg._C._nn_module._tensor_name(l2.weight) == "2.weight"
    assert mg._C._nn_module._tensor_name(l2.weight.t()) == "a view of 2.weight"
