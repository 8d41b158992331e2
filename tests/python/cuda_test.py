"""device="cuda" from Python: mutagrad.cuda, mutagrad.device, factories with device=, transfers
(.cuda(), .cpu(), .to()), printing, tolist/item/numpy of CUDA tensors, and mixed-device errors.

The suite runs against the host-run build (//python:mutagrad_host_run: the CUDA kernels run on
the CPU), so a CUDA device is always there. torch here has no CUDA: a CUDA result is checked
against mutagrad's CPU result and against torch on the CPU; texts and exception types against
torch where torch has them without a GPU (torch.device, to()'s forms).
"""

import pickle

import numpy as np
import pytest
import torch

import mutagrad as mg
from api_util import outcome, same, same_outcome

CUDA_SPELLINGS = ["cuda", "cuda:0", mg.device("cuda"), mg.device("cuda", 0), torch.device("cuda"),
                  torch.device("cuda:0"), 0]
SPELLING_IDS = ["str", "str:0", "mg.device", "mg.device(cuda,0)", "torch.device",
                "torch.device:0", "int"]
DTYPES = ["float32", "float64", "int32", "int64", "bool"]


def on_cuda(t):
    assert isinstance(t, mg.Tensor)
    assert t.is_cuda and t.get_device() == 0
    assert repr(t.device) == "device(type='cuda', index=0)" and str(t.device) == "cuda:0"
    return t


def bits(t):
    """A tensor's values as bytes (on the host): equal bits, nan payloads included."""
    return t.cpu().contiguous().numpy().tobytes()


# ---- mutagrad.cuda ---------------------------------------------------------------------------

def test_cuda_queries_in_the_host_run_build():
    assert mg.cuda.is_available() is True
    assert mg.cuda.device_count() == 1
    assert mg.cuda.unavailable_reason() == ""
    assert mg.cuda.current_device() == 0
    assert mg.cuda.get_device_name() == "host-run (Thrust OMP)"
    for d in [0, "cuda", "cuda:0", mg.device("cuda:0"), torch.device("cuda")]:
        assert mg.cuda.get_device_name(d) == "host-run (Thrust OMP)"
    assert mg.cuda.build_name().startswith("host-run (Thrust OMP), Thrust ")
    mg.cuda.synchronize()
    mg.cuda.synchronize(0)


def test_cuda_device_arguments_are_checked():
    with pytest.raises(RuntimeError, match="CUDA device 1 does not exist; there is 1 CUDA device"):
        mg.cuda.get_device_name(1)
    with pytest.raises(ValueError, match="expected a cuda device, but got: cpu"):
        mg.cuda.memory_allocated("cpu")


def test_memory_stats_follow_cuda_tensors():
    mg.cuda.empty_cache()
    base = mg.cuda.memory_allocated()
    x = mg.zeros(1000, device="cuda")
    assert mg.cuda.memory_allocated() >= base + 4000
    assert mg.cuda.max_memory_allocated() >= mg.cuda.memory_allocated()
    assert mg.cuda.memory_reserved() >= mg.cuda.memory_allocated()
    del x
    assert mg.cuda.memory_allocated() == base
    assert mg.cuda.memory_reserved() >= base + 4000  # cached, not freed
    mg.cuda.empty_cache()
    assert mg.cuda.memory_reserved() == mg.cuda.memory_allocated() == base
    mg.cuda.reset_peak_memory_stats()
    assert mg.cuda.max_memory_allocated() == base
    y = mg.ones(10, device="cuda")  # still works after the cache was emptied
    assert y.sum().item() == 10.0


def test_cpu_tensors_take_no_cuda_memory():
    mg.cuda.empty_cache()
    base = mg.cuda.memory_allocated()
    x = mg.zeros(10000)
    assert mg.cuda.memory_allocated() == base and x.numel() == 10000


def test_pin_memory_and_non_blocking_copies():
    # torch's names; torch here has no CUDA, so the values are checked against the source.
    x = mg.arange(12.0).reshape(3, 4).t()
    assert x.is_pinned() is False
    p = x.pin_memory()
    assert p.is_pinned() is True and p.device.type == "cpu" and p.is_contiguous()
    assert p.tolist() == x.tolist()
    assert p.pin_memory() is p and p[1].is_pinned()
    g = p.to("cuda", non_blocking=True)
    assert on_cuda(g).tolist() == x.tolist() and not g.is_pinned()
    d = mg.zeros(4, 3).pin_memory()
    assert d.copy_(g, non_blocking=True) is d
    mg.cuda.synchronize()  # a non-blocking copy into pinned memory: synchronize, then read
    assert d.tolist() == x.tolist() and d._version == 1
    e = mg.zeros(4, 3)
    e.copy_(g, True)
    assert e.tolist() == x.tolist()
    with pytest.raises(RuntimeError, match="pin_memory\\(\\): cannot pin a tensor on cuda:0"):
        g.pin_memory()
    for flag in [None, 1]:  # a bool only, as torch
        assert same_outcome(lambda lib: lib.zeros(2).copy_(lib.ones(2), non_blocking=flag)) \
            == "TypeError"
    assert same_outcome(lambda lib: lib.zeros(2).copy_(lib.ones(2), non_blocking=True)) == "ok"


@pytest.mark.parametrize("factory", ["rand", "randn"])
def test_manual_seed_seeds_the_cuda_generator(factory):
    make = getattr(mg, factory)
    mg.manual_seed(7)
    a = make(64, device="cuda")
    mg.manual_seed(7)
    b = make(64, device="cuda")
    mg.cuda.manual_seed(7)
    c = make(64, device="cuda")
    assert bits(a) == bits(b) == bits(c)
    d = make(64, device="cuda")  # the generator moved on
    assert bits(d) != bits(c)
    mg.cuda.manual_seed_all(8)
    e = make(64, device="cuda")
    assert bits(e) != bits(a)
    assert mg.cuda.initial_seed() == 8


def test_cuda_seed_leaves_the_cpu_generator_alone():
    mg.manual_seed(3)
    a = mg.rand(16)
    mg.manual_seed(3)
    mg.cuda.manual_seed(100)
    _ = mg.rand(16, device="cuda")
    b = mg.rand(16)
    assert bits(a) == bits(b)


def test_cuda_manual_seed_arguments_as_torch():
    mg.cuda.manual_seed(-1)  # taken modulo 2**64, as torch
    mg.cuda.manual_seed(2**64 - 1)
    with pytest.raises(OverflowError):
        mg.cuda.manual_seed(2**64)
    with pytest.raises(TypeError, match="argument 'seed' must be an int, not str"):
        mg.cuda.manual_seed("1")


def test_random_factories_on_cuda():
    mg.manual_seed(0)
    r = on_cuda(mg.rand(1000, device="cuda", dtype=mg.float64))
    assert r.dtype == mg.float64 and 0.0 <= r.min().item() and r.max().item() < 1.0
    n = on_cuda(mg.randn(4000, device="cuda"))
    assert abs(n.mean().item()) < 0.1 and 0.9 < (n * n).mean().item() < 1.1
    i = on_cuda(mg.randint(3, 9, (500,), device="cuda"))
    assert i.dtype == mg.int64 and i.min().item() >= 3 and i.max().item() <= 8
    j = on_cuda(mg.randint(5, (2, 3), device="cuda", dtype=mg.int32))
    assert j.dtype == mg.int32 and tuple(j.shape) == (2, 3)
    like = on_cuda(mg.rand_like(r))
    assert like.dtype == mg.float64 and tuple(like.shape) == (1000,)
    on_cuda(mg.randn_like(mg.zeros(2, 2), device="cuda"))
    assert not mg.rand_like(r, device="cpu").is_cuda


# ---- mutagrad.device -------------------------------------------------------------------------

@pytest.mark.parametrize("args", [("cpu",), ("cuda",), ("cuda:0",), ("cuda:3",), ("cuda", 0),
                                  ("cuda", 2), ("cpu", 0), ("cpu:0",), (0,), (1,)])
def test_device_matches_torch_device(args):
    t, m = torch.device(*args), mg.device(*args)
    assert (m.type, m.index, str(m), repr(m)) == (t.type, t.index, str(t), repr(t))
    assert mg.device(m) == m and hash(mg.device(m)) == hash(m)
    assert pickle.loads(pickle.dumps(m)) == m


def test_device_equality_as_torch():
    assert mg.device("cuda") != mg.device("cuda:0")  # as torch: the index is part of it
    assert mg.device("cuda", 0) == mg.device("cuda:0")
    assert mg.device("cpu") != "cpu"
    with pytest.raises(AttributeError):
        mg.device("cpu").type = "cuda"


@pytest.mark.parametrize("args", [("gpu",), ("CUDA",), ("cuda:x",), ("cuda:-1",), ("cuda:01",),
                                  ("cuda:0:0",), ("cuda:0", 0), ("cuda", -1), ("cuda", "x"),
                                  (1.5,)])
def test_bad_devices_raise_as_torch(args):
    kind_t, text_t = outcome(lambda lib: lib.device(*args), torch)
    kind_m, text_m = outcome(lambda lib: lib.device(*args), mg)
    assert kind_m == kind_t, f"torch: {kind_t} {text_t}\nmutagrad: {kind_m} {text_m}"
    if text_t.startswith("Expected one of"):  # torch lists more device types than cpu, cuda
        tail = text_t[text_t.index(" device type at start of device string"):]
        assert text_m.startswith("Expected one of cpu, cuda") and text_m.endswith(tail), text_m
    elif kind_t == "RuntimeError":
        assert text_m.startswith(text_t), text_m  # torch's text, then how to fix it


def test_device_of_a_torch_device():
    assert mg.device(torch.device("cuda:0")) == mg.device("cuda", 0)
    assert repr(mg.device(torch.device("cpu"))) == "device(type='cpu')"


def test_tensor_device_attribute():
    x = mg.zeros(2)
    assert repr(x.device) == repr(torch.zeros(2).device) == "device(type='cpu')"
    assert not x.is_cuda and x.get_device() == -1 == torch.zeros(2).get_device()
    y = on_cuda(x.cuda())
    assert y.device == mg.device("cuda:0") and y.device != x.device


# ---- factories with device= ------------------------------------------------------------------

FACTORIES = {
    "tensor": lambda lib, **kw: lib.tensor([[1.5, -2.0], [0.0, 3.25]], **kw),
    "tensor_int": lambda lib, **kw: lib.tensor([1, 2, 3], dtype=lib.int32, **kw),
    "tensor_0dim": lambda lib, **kw: lib.tensor(True, **kw),
    "tensor_empty": lambda lib, **kw: lib.tensor([], **kw),
    "zeros": lambda lib, **kw: lib.zeros(2, 3, **kw),
    "ones": lambda lib, **kw: lib.ones((4,), dtype=lib.int64, **kw),
    "full": lambda lib, **kw: lib.full((2, 2), 7, **kw),
    "full_float": lambda lib, **kw: lib.full((3,), -0.5, dtype=lib.float64, **kw),
    "arange": lambda lib, **kw: lib.arange(5, **kw),
    "arange_range": lambda lib, **kw: lib.arange(1, 4, 0.5, **kw),
    "arange_dtype": lambda lib, **kw: lib.arange(0, 10, 3, dtype=lib.float64, **kw),
    "zeros_like": lambda lib, **kw: lib.zeros_like(lib.ones(2, 2), **kw),
    "ones_like": lambda lib, **kw: lib.ones_like(lib.ones(3, dtype=lib.int32), **kw),
    "full_like": lambda lib, **kw: lib.full_like(lib.ones(2), 4.5, dtype=lib.float64, **kw),
}


@pytest.mark.parametrize("spelling", CUDA_SPELLINGS, ids=SPELLING_IDS)
@pytest.mark.parametrize("name", list(FACTORIES))
def test_factories_with_device_match_cpu_and_torch(name, spelling):
    make = FACTORIES[name]
    g = on_cuda(make(mg, device=spelling))
    c = make(mg)
    assert not c.is_cuda
    same(make(torch), g)  # values, shape and dtype of torch's CPU result
    assert bits(g) == bits(c)


@pytest.mark.parametrize("spelling", ["cpu", mg.device("cpu"), torch.device("cpu"), None])
@pytest.mark.parametrize("name", list(FACTORIES))
def test_factories_with_cpu_device_match_torch(name, spelling):
    make = FACTORIES[name]
    m = make(mg, device=spelling)
    assert not m.is_cuda and repr(m.device) == "device(type='cpu')"
    same(make(torch, device=spelling if not isinstance(spelling, mg.device) else "cpu"), m)


def test_empty_and_like_factories_keep_the_input_device():
    e = on_cuda(mg.empty(2, 3, device="cuda", dtype=mg.int32))
    assert tuple(e.shape) == (2, 3) and e.dtype == mg.int32
    x = mg.ones(2, 3, device="cuda")
    for like in [mg.zeros_like(x), mg.ones_like(x), mg.empty_like(x), mg.full_like(x, 2),
                 mg.rand_like(x), mg.randn_like(x)]:
        on_cuda(like)
        assert tuple(like.shape) == (2, 3) and like.dtype == mg.float32
    assert mg.zeros_like(x, device="cpu").tolist() == [[0.0] * 3] * 2


def test_factory_requires_grad_on_cuda_is_a_leaf():
    for x in [mg.zeros(3, device="cuda", requires_grad=True),
              mg.tensor([1.0, 2.0], device="cuda", requires_grad=True),
              mg.rand(2, device="cuda", requires_grad=True)]:
        on_cuda(x)
        assert x.requires_grad and x.is_leaf and x.grad_fn is None


def test_tensor_of_a_cuda_tensor_stays_on_cuda():
    x = mg.arange(4, device="cuda")
    y = on_cuda(mg.tensor(x))
    assert y.tolist() == [0, 1, 2, 3]
    assert not mg.tensor(x, device="cpu").is_cuda
    z = on_cuda(mg.tensor([mg.tensor(1.0, device="cuda"), mg.tensor(2.0)], device="cuda"))
    assert z.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("bad", [1.5, [0], object()])
def test_bad_device_argument_is_a_type_error(bad):
    for f in [lambda: mg.zeros(2, device=bad), lambda: mg.tensor([1], device=bad),
              lambda: mg.arange(3, device=bad), lambda: mg.ones(2).to(bad)]:
        with pytest.raises(TypeError, match="argument 'device' must be a device"):
            f()


def test_bad_device_strings_raise_torchs_text():
    with pytest.raises(RuntimeError, match="device type at start of device string: gpu"):
        mg.zeros(2, device="gpu")
    with pytest.raises(RuntimeError, match="mutagrad drives one CUDA device per process"):
        mg.zeros(2, device="cuda:1")
    with pytest.raises(RuntimeError, match="CUDA_VISIBLE_DEVICES"):
        mg.ones(2).to("cuda:1")


# ---- transfers -------------------------------------------------------------------------------

def cpu_inputs(dtype):
    base = mg.tensor([[1.5, -2.25, float("nan"), 0.0], [float("inf"), -0.0, 3.0, 1e-30],
                      [7.0, -1.0, 2.5, -float("inf")]], dtype=mg.float64)
    if dtype == "bool":
        base = base.ne(0.0)
    elif dtype.startswith("int"):
        base = mg.tensor([[1, -2, 3, 0], [2**30, -7, 5, 9], [4, 4, -4, 8]], dtype=mg.int64)
    x = base.to(getattr(mg, dtype))
    return {"contiguous": x, "transposed": x.t(), "sliced": x[:, 1::2], "row": x[1],
            "0-dim": x[2, 3], "empty": x[:, 4:], "expanded": x[0:1].expand(3, 4)}


@pytest.mark.parametrize("dtype", DTYPES)
def test_transfers_round_trip_bit_for_bit(dtype):
    for layout, x in cpu_inputs(dtype).items():
        for there in [x.cuda(), x.to("cuda"), x.to(mg.device("cuda:0")), x.to(torch.device("cuda")),
                      x.cuda(0), x.cuda("cuda:0"), x.to("cuda", non_blocking=True),
                      x.cuda(non_blocking=True)]:
            on_cuda(there)
            assert tuple(there.shape) == tuple(x.shape) and there.dtype == x.dtype, layout
            back = there.cpu()
            assert not back.is_cuda and back.is_contiguous()
            assert bits(back) == bits(x), layout
            assert back.tolist() == x.tolist() or dtype.startswith("float"), layout


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("to_dtype", DTYPES)
def test_to_device_and_dtype_matches_torch(dtype, to_dtype):
    # Finite values: torch leaves nan/inf -> int undefined (mutagrad defines it; docs/cuda.md).
    data = [[1.5, -2.25, 0.0], [-0.0, 3.0, 1e-30], [7.0, -1.0, 2.5]]
    x = mg.tensor(data, dtype=mg.float64).to(getattr(mg, dtype)).t()
    t = torch.tensor(data, dtype=torch.float64).to(getattr(torch, dtype)).t()
    want = t.to(getattr(torch, to_dtype))
    mg_dtype = getattr(mg, to_dtype)
    for got in [x.to("cuda", mg_dtype), x.to(device="cuda", dtype=mg_dtype),
                x.cuda().to(mg_dtype), x.to("cuda:0", mg_dtype, True)]:
        on_cuda(got)
        same(want, got)
        assert bits(got) == bits(x.to(mg_dtype))


def test_to_other_tensor_takes_its_device_and_dtype():
    x = mg.tensor([1.5, 2.5])
    other = mg.zeros(1, dtype=mg.int32, device="cuda")
    y = on_cuda(x.to(other))
    assert y.dtype == mg.int32 and y.tolist() == [1, 2]
    z = y.to(mg.zeros(1, dtype=mg.float64))
    assert not z.is_cuda and z.dtype == mg.float64


def test_to_returns_self_when_nothing_changes_as_torch():
    for lib in [torch, mg]:
        x = lib.ones(2)
        assert x.to("cpu") is x and x.cpu() is x and x.to(lib.float32) is x and x.to(x) is x
        assert x.to() is x and x.to(None) is x and x.to(dtype=None) is x
        assert x.to("cpu", copy=True) is not x and x.to(lib.float32, False, True) is not x
    g = mg.ones(2, device="cuda")
    assert g.cuda() is g and g.to("cuda") is g and g.to(mg.device("cuda", 0)) is g
    c = on_cuda(g.to("cuda", copy=True))
    assert c is not g and c.tolist() == g.tolist()
    c[0] = 5.0
    assert g[0].item() == 1.0  # a copy


@pytest.mark.parametrize("call", [
    lambda lib, x: x.to("cpu", lib.float64, True, True),
    lambda lib, x: x.to(lib.float64, True, True),
    lambda lib, x: x.to(x, True),
    lambda lib, x: x.to(device="cpu", dtype=lib.int32, non_blocking=True, copy=False),
    lambda lib, x: x.to(dtype=lib.float64),
    lambda lib, x: x.to(foo=1),
    lambda lib, x: x.to("cpu", "x"),
    lambda lib, x: x.to(lib.float64, False, False, 1),
    lambda lib, x: x.to("cpu", device="cpu"),
    lambda lib, x: x.to(lib.float64, 1),
    lambda lib, x: x.to(lib.float64, non_blocking=None),
], ids=["device_dtype_flags", "dtype_flags", "other_flag", "keywords", "dtype_keyword",
        "unknown_keyword", "bad_dtype", "too_many", "device_twice", "int_flag", "none_flag"])
def test_to_forms_match_torch(call):
    kind_t, value_t = outcome(lambda lib: call(lib, lib.tensor([1.25, -2.0])), torch)
    kind_m, value_m = outcome(lambda lib: call(lib, lib.tensor([1.25, -2.0])), mg)
    assert kind_m == kind_t, f"torch: {kind_t} {value_t}\nmutagrad: {kind_m} {value_m}"
    if kind_t == "ok":
        same(value_t, value_m)


def test_cuda_method_rejects_a_cpu_device():
    with pytest.raises(RuntimeError, match="cuda\\(\\): expected a CUDA device, got 'cpu'"):
        mg.ones(2).cuda("cpu")


# ---- host reads of CUDA tensors: tolist, item, printing, numpy ---------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_tolist_and_item_of_cuda_tensors(dtype):
    for layout, x in cpu_inputs(dtype).items():
        g = x.cuda()
        assert repr(g.tolist()) == repr(x.tolist()), layout
        if x.numel() == 1:
            v = g.item()
            assert type(v) is type(x.item()) and repr(v) == repr(x.item())
    s = mg.tensor(2.5, device="cuda")
    assert float(s) == 2.5 and int(mg.tensor(3, device="cuda")) == 3
    assert bool(mg.tensor(True, device="cuda")) and [0, 1, 2][mg.tensor(1, device="cuda")] == 1


@pytest.mark.parametrize("data,dtype,torch_repr", [
    ([1.0, 2.0], "float32", "tensor([1., 2.])"),
    ([1, 2], "int32", "tensor([1, 2], dtype=torch.int32)"),
    ([[True, False]], "bool", "tensor([[ True, False]])"),
    ([1.25, -3.5], "float64", "tensor([ 1.2500, -3.5000], dtype=torch.float64)"),
])
def test_printing_cuda_tensors_as_torch(data, dtype, torch_repr):
    t = torch.tensor(data, dtype=getattr(torch, dtype))
    assert repr(t) == torch_repr  # the CPU layout this test starts from
    g = mg.tensor(data, dtype=getattr(mg, dtype), device="cuda")
    # torch: device= comes first among the suffixes, then dtype=, then grad_fn= / requires_grad=.
    want = torch_repr[:-1].replace(", dtype=torch.", ", device='cuda:0', dtype=mutagrad.")
    if "device=" not in want:
        want += ", device='cuda:0'"
    assert repr(g) == want + ")"
    assert str(g) == repr(g)


def test_printing_cuda_tensors_with_autograd_and_empty_shapes():
    x = mg.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    assert repr(x) == "tensor([1., 2.], device='cuda:0', requires_grad=True)"
    assert repr(x * 2) == "tensor([2., 4.], device='cuda:0', grad_fn=<MulBackward0>)"
    assert repr(mg.zeros(0, 2, dtype=mg.int64, device="cuda")) == \
        "tensor([], device='cuda:0', size=(0, 2), dtype=mutagrad.int64)"
    big = mg.arange(2000, device="cuda")
    assert repr(big) == repr(mg.arange(2000))[:-1] + ", device='cuda:0')"


CUDA_NUMPY_TEXT = ("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
                   "tensor to host memory first.")


def test_numpy_of_a_cuda_tensor_is_torchs_type_error():
    g = mg.ones(2, device="cuda")
    for f in [g.numpy, lambda: np.asarray(g), lambda: np.array(g),
              mg.ones(2, device="cuda", requires_grad=True).numpy]:  # the device is checked first
        with pytest.raises(TypeError) as info:
            f()
        assert str(info.value) == CUDA_NUMPY_TEXT
    assert g.cpu().numpy().tolist() == [1.0, 1.0]


# ---- ops on CUDA tensors and mixed devices ---------------------------------------------------

def test_ops_on_cuda_match_cpu():
    mg.manual_seed(1)
    a, b = mg.randn(3, 4, dtype=mg.float64), mg.randn(4, 2, dtype=mg.float64)
    ga, gb = a.cuda(), b.cuda()
    for f in [lambda x, y: x + 1, lambda x, y: (x * x).sum(1), lambda x, y: x.relu().max(),
              lambda x, y: x.t().contiguous(), lambda x, y: x.clamp(-0.5, 0.5) * 2,
              lambda x, y: mg.where(x > 0, x, -x), lambda x, y: x.argmax(1)]:
        assert bits(on_cuda(f(ga, gb))) == bits(f(a, b))
    m = on_cuda(ga @ gb)
    assert np.allclose(m.cpu().numpy(), (a @ b).numpy(), rtol=1e-12, atol=1e-12)


MIXED_TEXT = ("Expected all tensors to be on the same device, but found at least two devices, "
              "cuda:0 and cpu!")


@pytest.mark.parametrize("op", [
    lambda g, c: g + c, lambda g, c: g * c, lambda g, c: g @ c.reshape(3, 1),
    lambda g, c: mg.where(g > 0, g, c), lambda g, c: g.add_(c), lambda g, c: mg.maximum(g, c),
    lambda g, c: g.index_put_((mg.tensor([0, 2], device="cuda"),), c[:2]),
    lambda g, c: mg.cat([g, c]), lambda g, c: mg.stack([g, c]),
], ids=["add", "mul", "matmul", "where", "add_", "maximum", "index_put_", "cat", "stack"])
def test_mixed_devices_raise_torchs_text(op):
    g, c = mg.ones(3, device="cuda"), mg.ones(3)
    version = g._version
    with pytest.raises(RuntimeError) as info:
        op(g, c)
    assert MIXED_TEXT in str(info.value)
    assert g.tolist() == [1.0, 1.0, 1.0] and g._version == version  # nothing written


def test_a_0dim_cpu_tensor_combines_with_cuda_tensors_as_torch():
    g = mg.ones(3, device="cuda")
    assert on_cuda(g + mg.tensor(2.0)).tolist() == [3.0, 3.0, 3.0]
    assert on_cuda(mg.tensor(2.0) * g).tolist() == [2.0, 2.0, 2.0]


# ---- one device per process (Note [One device per process] in cuda/runtime.h) -----------------

_LOCAL_RANK_SCRIPT = r"""
import mutagrad as mg
assert mg.cuda.device_count() == 3
assert mg.cuda.current_device() == 1          # LOCAL_RANK=4 % 3
x = mg.zeros(2, device="cuda")
for t in [x, mg.ones(2).cuda(), mg.ones(2).to("cuda"), x + 1, mg.arange(3, device="cuda:1")]:
    assert str(t.device) == "cuda:1" and t.get_device() == 1, t.device
assert mg.cuda.memory_allocated() > 0 and mg.cuda.memory_allocated(0) == 0
assert mg.cuda.memory_allocated("cuda:1") == mg.cuda.memory_allocated()
for bad in ["cuda:0", 2]:
    try:
        mg.zeros(2, device=bad)
        raise AssertionError("accepted " + str(bad))
    except RuntimeError as e:
        assert "mutagrad drives one CUDA device per process, and this one's is cuda:1" in str(e)
try:
    mg.cuda.set_device(0)
    raise AssertionError("set_device(0) accepted after use")
except RuntimeError as e:
    assert "this process already works on cuda:1 (chosen by LOCAL_RANK=4" in str(e), str(e)
mg.cuda.set_device(1)
mg.cuda.set_device("cuda")
print("ok")
"""

_SET_DEVICE_SCRIPT = r"""
import mutagrad as mg
assert mg.cuda.current_device() == 0
mg.cuda.set_device("cuda:1")
assert mg.cuda.current_device() == 1
assert str(mg.ones(2, device="cuda").device) == "cuda:1"
try:
    mg.cuda.set_device(5)
    raise AssertionError("set_device(5) accepted")
except RuntimeError as e:
    assert "CUDA device 5 does not exist; there are 2 CUDA devices" in str(e), str(e)
print("ok")
"""


@pytest.mark.parametrize("script,env", [
    (_LOCAL_RANK_SCRIPT, {"MUTAGRAD_HOST_RUN_DEVICE_COUNT": "3", "LOCAL_RANK": "4"}),
    (_SET_DEVICE_SCRIPT, {"MUTAGRAD_HOST_RUN_DEVICE_COUNT": "2"}),
], ids=["local_rank", "set_device"])
def test_one_device_per_process_with_simulated_devices(script, env):
    import os
    import subprocess
    import sys
    full = {k: v for k, v in os.environ.items()
            if k not in ("LOCAL_RANK", "RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                         "OMPI_COMM_WORLD_RANK", "PMI_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID")}
    full.update(env)
    run = subprocess.run([sys.executable, "-c", script], env=full, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr
