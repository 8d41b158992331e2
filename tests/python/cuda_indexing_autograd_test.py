"""x[idx], x[idx] = v, index_put_ and autograd with CUDA tensors from Python, against mutagrad's
CPU results (bit for bit) and torch on the CPU (torch here has no CUDA).

Runs against the host-run build (//python:mutagrad_host_run), whose CUDA kernels run on the
CPU: the same kernel sources as the GPU build, so the bits are the ones docs/cuda.md promises.
"""

import numpy as np
import pytest
import torch

import mutagrad as mg
from api_util import outcome, same
from lib_util import same_kind


def bits(t):
    return t.detach().cpu().contiguous().numpy().tobytes()


def on_cuda(t):
    assert isinstance(t, mg.Tensor) and t.is_cuda, t
    return t


def source(lib, dtype="float32"):
    return lib.arange(60, dtype=getattr(lib, dtype)).reshape(3, 4, 5) * 0.5 - 7


def place(index, where):
    """The index with every tensor in it moved to `where` ("cpu" or "cuda")."""
    if isinstance(index, mg.Tensor):
        return index.to(where)
    if isinstance(index, tuple):
        return tuple(place(i, where) for i in index)
    return index


def for_torch(index):
    """The same index for torch: mutagrad tensors as torch tensors."""
    if isinstance(index, mg.Tensor):
        return torch.tensor(index.tolist(), dtype=torch.bool if index.dtype == mg.bool else
                            torch.int64)
    if isinstance(index, tuple):
        return tuple(for_torch(i) for i in index)
    return index


INDICES = [
    1, -1, slice(1, None), (0, slice(None), 2), (Ellipsis, 1), (None, 0), [0, 2, 2],
    [[0, 1], [1, 0]], mg.tensor([2, 0, 2, 2]), mg.tensor([[1], [0]]),
    (mg.tensor([0, 2, 0]), slice(None), mg.tensor([4, 4, 1])), (slice(None), mg.tensor([3, 3])),
    (mg.tensor([0, 2]), mg.tensor([1, -1])), mg.tensor([True, False, True]),
    (slice(None), mg.tensor([True, False, False, True])), mg.tensor(1), np.array([2, 1]),
    (0, mg.tensor([1, 1]), mg.tensor([[0], [4]])), mg.tensor([], dtype=mg.int64),
]
IDS = [repr(i).replace("\n", "")[:40] for i in INDICES]


@pytest.mark.parametrize("where", ["cpu", "cuda"])
@pytest.mark.parametrize("index", INDICES, ids=IDS)
def test_getitem_on_cuda_matches_cpu_and_torch(index, where):
    x = source(mg)
    got = on_cuda(x.cuda()[place(index, where)])
    want = x[index]
    assert tuple(got.shape) == tuple(want.shape) and bits(got) == bits(want)
    same(source(torch)[for_torch(index)], got)


VALUES = [
    lambda lib, shape: 9.5,
    lambda lib, shape: lib.tensor(-3.25),
    lambda lib, shape: lib.arange(int(np.prod(shape)), dtype=lib.float32).reshape(shape) + 0.25,
]


@pytest.mark.parametrize("value", range(len(VALUES)), ids=["number", "0-dim", "full"])
@pytest.mark.parametrize("where", ["cpu", "cuda"])
@pytest.mark.parametrize("index", INDICES, ids=IDS)
def test_setitem_on_cuda_matches_cpu(index, where, value):
    x = source(mg)
    shape = tuple(x[index].shape)
    v = VALUES[value](mg, shape)
    g = x.cuda()
    version = g._version
    g[place(index, where)] = v.cuda() if isinstance(v, mg.Tensor) else v
    x[index] = v
    assert bits(g) == bits(x)  # duplicates: the last write wins, on both devices
    assert g._version == version + 1


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_setitem_with_duplicates_is_bitwise_the_cpus(dtype):
    mg.manual_seed(11)
    for where in ["cpu", "cuda"]:
        x = mg.randn(50, dtype=getattr(mg, dtype))
        idx = mg.randint(0, 50, (400,))
        vals = mg.randn(400, dtype=getattr(mg, dtype))
        g = x.cuda()
        g[idx.to(where)] = vals.cuda()
        x[idx] = vals
        assert bits(g) == bits(x)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_index_put_accumulate_with_duplicates_is_bitwise_the_cpus(dtype):
    mg.manual_seed(5)
    t = getattr(mg, dtype)
    for n, size in [(20000, 3), (1000, 40), (7, 7)]:
        if dtype.startswith("float"):
            vals = mg.randn(n, dtype=t) * 1000
            x = mg.randn(size, dtype=t)
        else:
            vals = mg.randint(-1000, 1000, (n,), dtype=t)
            x = mg.randint(-5, 5, (size,), dtype=t)
        idx = mg.randint(0, size, (n,))
        for where in ["cpu", "cuda"]:
            g = x.cuda()
            g.index_put_((idx.to(where),), vals.cuda(), accumulate=True)
            c = x.clone()
            c.index_put_((idx,), vals, accumulate=True)
            assert bits(g) == bits(c), (n, size, where)
        if dtype == "float64":  # against torch: the same sum in index order
            tx = torch.tensor(x.tolist(), dtype=torch.float64)
            tx.index_put_((torch.tensor(idx.tolist()),), torch.tensor(vals.tolist(),
                                                                       dtype=torch.float64),
                          accumulate=True)
            assert np.allclose(g.cpu().numpy(), tx.numpy(), rtol=1e-12, atol=1e-9)


def test_index_put_2d_accumulate_matches_cpu():
    mg.manual_seed(2)
    x = mg.zeros(4, 6)
    rows, cols = mg.randint(0, 4, (300,)), mg.randint(0, 6, (300,))
    vals = mg.rand(300)
    g = x.cuda()
    g.index_put_((rows.cuda(), cols), vals.cuda(), accumulate=True)
    x.index_put_((rows, cols), vals, accumulate=True)
    assert bits(g) == bits(x)


# ---- errors leave the tensor alone ------------------------------------------------------------

BAD_WRITES = [
    lambda lib, x, d: x.__setitem__(lib.tensor([0, 3]).to(d), 1.0),
    lambda lib, x, d: x.__setitem__(lib.tensor([0, -4]).to(d), 1.0),
    lambda lib, x, d: x.__setitem__((lib.tensor([0, 1]).to(d), lib.tensor([2, 5]).to(d)), 1.0),
    lambda lib, x, d: x.__setitem__(3, 1.0),
    lambda lib, x, d: x.index_put_((lib.tensor([7]).to(d),), lib.tensor([1.0]).to(d),
                                   accumulate=True),
    lambda lib, x, d: x.__setitem__(lib.tensor([True, False]).to(d), 1.0),
    lambda lib, x, d: x.__setitem__((0, 0, 0), 1.0),
]
BAD_IDS = ["past_end", "negative", "2d", "int", "accumulate", "mask_shape", "too_many"]


def torch_outcome(call):
    def run(lib):
        x = lib.arange(12, dtype=lib.float32).reshape(3, 4)
        call(lib, x, "cpu")
    return outcome(run, torch)


@pytest.mark.parametrize("where", ["cpu", "cuda"])
@pytest.mark.parametrize("call", BAD_WRITES, ids=BAD_IDS)
def test_failed_write_on_cuda_changes_nothing(call, where):
    kind_t, _ = torch_outcome(call)
    x = mg.arange(12, dtype=mg.float32).reshape(3, 4)
    kind_c, text_c = outcome(lambda lib: call(lib, x.clone(), "cpu"), mg)
    g = x.cuda()
    before, version = bits(g), g._version
    kind_g, text_g = outcome(lambda lib: call(lib, g, where), mg)
    # An out-of-range index is mutagrad.IndexOutOfRangeError, also an IndexError.
    assert kind_t == "IndexError" and same_kind(kind_t, kind_c), (kind_c, kind_t)
    assert kind_g == kind_c, (kind_g, kind_c)
    assert text_g == text_c  # the CPU's text
    assert bits(g) == before and g._version == version
    # Later CUDA work still succeeds.
    g[mg.tensor([0, 2], device="cuda"), 1] = 100.0
    assert g._version == version + 1
    assert g.sum().item() == x.sum().item() - 1.0 - 9.0 + 200.0
    assert on_cuda(mg.randn(8, device="cuda") * 0).tolist() == [0.0] * 8


@pytest.mark.parametrize("where", ["cpu", "cuda"])
def test_out_of_range_read_on_cuda_is_index_error(where):
    g = mg.arange(5, device="cuda")
    for bad in [mg.tensor([1, 5]).to(where), 5, (0, 0)]:
        kind, text = outcome(lambda lib: g[bad], mg)
        if isinstance(bad, tuple):
            assert kind == "IndexError" and "too many indices" in text
        else:
            assert kind == "IndexOutOfRangeError", kind
            assert "out of bounds for dimension 0 with size 5" in text
    assert g.tolist() == [0, 1, 2, 3, 4]


# ---- autograd across devices -------------------------------------------------------------------

def test_grad_through_cuda_lands_on_the_cpu_leaf():
    data = [[1.5, -2.0, 0.25], [3.0, 0.5, -1.0]]
    results = {}
    for lib in [torch, mg]:
        x = lib.tensor(data, requires_grad=True)
        h = x.cuda() if lib is mg else x  # torch: the same computation on the CPU
        y = (h * h * 3 + h.sin()).sum(1)
        z = y.cpu() if lib is mg else y
        (z * lib.tensor([1.0, -2.0])).sum().backward()
        results[lib] = x.grad
    g = results[mg]
    assert not g.is_cuda and g.dtype == mg.float32
    same(results[torch], g, tol=1e-6)


def test_grad_through_cpu_lands_on_the_cuda_leaf():
    x = mg.tensor([1.0, -2.0, 4.0], device="cuda", requires_grad=True)
    y = x.cpu()
    assert y.grad_fn.name() == "ToCopyBackward0"
    (y * y).sum().backward()
    on_cuda(x.grad)
    assert x.grad.tolist() == [2.0, -4.0, 8.0]
    t = torch.tensor([1.0, -2.0, 4.0], requires_grad=True)
    (t.to("cpu", copy=True) ** 2).sum().backward()
    same(t.grad, x.grad)


def test_grad_through_device_and_dtype_conversion():
    x = mg.tensor([0.5, 1.5], device="cuda", requires_grad=True)
    y = x.to("cpu", mg.float64)
    assert y.dtype == mg.float64 and y.grad_fn.name() == "ToCopyBackward0"
    (y * mg.tensor([2.0, 3.0], dtype=mg.float64)).sum().backward()
    on_cuda(x.grad)
    assert x.grad.dtype == mg.float32 and x.grad.tolist() == [2.0, 3.0]


def test_grad_of_cuda_indexing_with_duplicates_matches_cpu_and_torch():
    idx = [0, 2, 2, 2, 1, 0]
    grads = {}
    for device in ["cpu", "cuda"]:
        x = (mg.arange(5, dtype=mg.float32) * 0.25).to(device).requires_grad_(True)
        w = mg.arange(6, dtype=mg.float32, device=device) + 1
        (x[mg.tensor(idx, device=device)] * w).sum().backward()
        grads[device] = x.grad
    on_cuda(grads["cuda"])
    assert bits(grads["cuda"]) == bits(grads["cpu"])
    t = (torch.arange(5, dtype=torch.float32) * 0.25).requires_grad_(True)
    (t[torch.tensor(idx)] * (torch.arange(6, dtype=torch.float32) + 1)).sum().backward()
    same(t.grad, grads["cuda"])


def test_grad_of_setitem_on_a_cuda_non_leaf_matches_torch():
    results = {}
    for lib in [torch, mg]:
        x = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        v = lib.tensor([10.0, 20.0], requires_grad=True)
        h = x.cuda() * 2 if lib is mg else x * 2
        vv = v.cuda() if lib is mg else v
        h[lib.tensor([1, 0]), lib.tensor([2, 2])] = vv
        (h * h).sum().backward()
        results[lib] = (x.grad, v.grad)
    assert not results[mg][0].is_cuda and not results[mg][1].is_cuda
    same(results[torch], results[mg])


def test_gradcheck_across_devices():
    x = mg.tensor([0.3, -1.2, 2.0], dtype=mg.float64, requires_grad=True)
    assert mg.autograd.gradcheck(lambda a: (a.cuda().sin() * a.cuda()).cpu(), (x,))
    g = mg.tensor([0.3, -1.2], dtype=mg.float64, device="cuda", requires_grad=True)
    assert mg.autograd.gradcheck(lambda a: a.cpu().exp() * 2, (g,))
    assert mg.autograd.gradgradcheck(lambda a: (a * a * a).cpu(), (g,))


def test_grad_accumulates_on_the_leafs_device_from_both_devices():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    (x.cuda() * 3).sum().backward()
    (x * 5).sum().backward()
    assert not x.grad.is_cuda and x.grad.tolist() == [8.0, 8.0]
