"""mutagrad.nn's Conv1d, Conv2d, ConvTranspose1d and ConvTranspose2d against torch 1.13's: build
torch's layer, copy its state_dict into ours, and compare repr, state_dict keys, parameter
shapes, the output, the input and parameter gradients (float64 1e-12, float32 1e-5) on the CPU
and the host-run CUDA device, over fixed geometries (every padding mode and string, groups,
dilation, output_padding, unbatched inputs, forward(input, output_size)) and 200 random ones;
initialisation bounds; the arguments torch refuses (the same ValueError text); a bad input
(torch's exception kind, nothing written); and what a convolution saves (an inplace ReLU after
it is safe, a write into its input is refused naming the line).
"""

import math
import random

import numpy as np
import pytest
import torch

import mutagrad as mg
from lib_util import from_torch, numpy_of

TOL = {"float64": 1e-12, "float32": 1e-5}


@pytest.fixture(params=["cpu", "cuda"])
def device(request):
    return request.param


def mgt(t, device, requires_grad=False):
    out = from_torch(mg, t.detach()).to(device)
    return out.requires_grad_() if requires_grad else out


def assert_close(m, t, tol, what):
    a, b = numpy_of(m), numpy_of(t)
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs torch {b.shape}"
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=what)


def differential(make, shape, device, dtype, forward_kwargs=None):
    """make(lib) in both libraries, torch's state_dict copied into ours: repr, keys, the
    output and every gradient of sum(y * r)."""
    forward_kwargs = forward_kwargs or {}
    tol = TOL[dtype]
    t = make(torch).to(getattr(torch, dtype))
    m = make(mg).to(getattr(mg, dtype)).to(device)
    assert repr(m) == repr(t)
    assert list(m.state_dict()) == list(t.state_dict())
    for (tn, tp), (mn, mp) in zip(t.named_parameters(), m.named_parameters()):
        assert (tn, tuple(tp.shape)) == (mn, tuple(mp.shape))
    m.load_state_dict({k: mgt(v, device) for k, v in t.state_dict().items()})
    tx = torch.randn(*shape, dtype=getattr(torch, dtype), requires_grad=True)
    mx = mgt(tx, device, True)
    ty = t(tx, **forward_kwargs)
    my = m(mx, **forward_kwargs)
    what = repr(t)
    assert_close(my, ty, tol, what + " output")
    r = torch.randn(ty.shape, dtype=ty.dtype)
    (ty * r).sum().backward()
    (my * mgt(r, device)).sum().backward()
    assert my.grad_fn is not None
    assert_close(mx.grad, tx.grad, tol, what + " input grad")
    for (name, tp), (_, mp) in zip(t.named_parameters(), m.named_parameters()):
        assert_close(mp.grad, tp.grad, tol, f"{what} {name}.grad")


CASES = {
    "conv1d": (lambda lib: lib.nn.Conv1d(4, 6, 3, stride=2, padding=1, groups=2), (2, 4, 9)),
    "conv1d_same_reflect": (lambda lib: lib.nn.Conv1d(3, 2, 4, padding="same", dilation=2,
                                                      padding_mode="reflect"), (2, 3, 9)),
    "conv1d_valid_circular": (lambda lib: lib.nn.Conv1d(3, 2, 3, padding="valid",
                                                        padding_mode="circular"), (2, 3, 6)),
    "conv1d_unbatched": (lambda lib: lib.nn.Conv1d(2, 3, 2, bias=False), (2, 6)),
    "conv2d": (lambda lib: lib.nn.Conv2d(3, 4, (3, 2), stride=(2, 1), padding=(1, 0),
                                         dilation=(1, 2)), (2, 3, 7, 6)),
    "conv2d_same_circular": (lambda lib: lib.nn.Conv2d(2, 4, 3, padding="same", groups=2,
                                                       padding_mode="circular", bias=False),
                             (1, 2, 5, 5)),
    "conv2d_same_even_kernel": (lambda lib: lib.nn.Conv2d(2, 3, (4, 2), padding="same"),
                                (2, 2, 5, 6)),
    "conv2d_replicate": (lambda lib: lib.nn.Conv2d(2, 3, 2, stride=2, padding=1,
                                                   padding_mode="replicate"), (2, 2, 4, 5)),
    "conv2d_reflect_unbatched": (lambda lib: lib.nn.Conv2d(2, 2, 3, padding=(1, 2),
                                                           padding_mode="reflect"), (2, 5, 4)),
    "conv2d_depthwise": (lambda lib: lib.nn.Conv2d(4, 8, 3, groups=4, padding=1), (3, 4, 6, 6)),
    "convt1d": (lambda lib: lib.nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1,
                                                   output_padding=1, groups=2), (2, 4, 5)),
    "convt1d_unbatched": (lambda lib: lib.nn.ConvTranspose1d(2, 3, 2, dilation=2), (2, 5)),
    "convt2d": (lambda lib: lib.nn.ConvTranspose2d(3, 4, (3, 2), stride=(2, 3), padding=(1, 0),
                                                   output_padding=(1, 2)), (2, 3, 4, 3)),
    "convt2d_dilated": (lambda lib: lib.nn.ConvTranspose2d(2, 2, 3, dilation=2, output_padding=1,
                                                           bias=False), (1, 2, 3, 3)),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_layers_match_torch(name, dtype, device):
    make, shape = CASES[name]
    differential(make, shape, device, dtype)


@pytest.mark.parametrize("output_size", [[6, 7], [2, 3, 5, 8], [5, 8]])
def test_transposed_output_size_matches_torch(output_size, device):
    differential(lambda lib: lib.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1), (2, 2, 3, 4),
                 device, "float64", {"output_size": output_size})
    for lib in (torch, mg):
        layer = lib.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)
        with pytest.raises(ValueError, match=r"valid sizes range from \[5, 7\] to \[6, 8\]"):
            layer(lib.zeros(2, 2, 3, 4), output_size=[8, 7])


def random_layer(rng):
    """(make(lib), input shape) of one random layer."""
    dims = rng.choice([1, 2])
    transposed = rng.random() < 0.4
    groups = rng.choice([1, 1, 2, 3])
    cin, cout = groups * rng.randint(1, 3), groups * rng.randint(1, 3)
    k = tuple(rng.randint(1, 4) for _ in range(dims))
    stride = tuple(rng.randint(1, 3) for _ in range(dims))
    dilation = tuple(rng.choice([1, 1, 2]) for _ in range(dims))
    size = tuple(rng.randint(4, 8) for _ in range(dims))
    batch = () if rng.random() < 0.2 else (rng.randint(1, 3),)
    bias = rng.random() < 0.7
    name = ("ConvTranspose" if transposed else "Conv") + f"{dims}d"
    if transposed:
        padding = tuple(rng.randint(0, kk - 1) for kk in k)
        out_pad = tuple(rng.randint(0, max(s, d) - 1) for s, d in zip(stride, dilation))
        kwargs = dict(stride=stride, padding=padding, output_padding=out_pad, groups=groups,
                      bias=bias, dilation=dilation)
    else:
        mode = rng.choice(["zeros", "zeros", "reflect", "replicate", "circular"])
        padding = rng.choice(["same", "valid", tuple(rng.randint(0, 2) for _ in range(dims))])
        if padding == "same":
            stride = (1,) * dims
        kwargs = dict(stride=stride, padding=padding, dilation=dilation, groups=groups,
                      bias=bias, padding_mode=mode)
    return (lambda lib: getattr(lib.nn, name)(cin, cout, k, **kwargs)), batch + (cin,) + size


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_random_layers_match_torch(dtype, device):
    rng = random.Random(37)
    done = 0
    while done < 100:
        make, shape = random_layer(rng)
        try:
            make(torch)(torch.zeros(shape))
        except (RuntimeError, ValueError):
            continue  # a geometry torch refuses (kernel larger than the padded input)
        torch.manual_seed(done)
        differential(make, shape, device, dtype)
        done += 1


def test_initialisation_uses_torchs_bounds():
    mg.manual_seed(3)
    for layer, fan_in in ((mg.nn.Conv2d(8, 16, 3, groups=2), 36),
                          (mg.nn.ConvTranspose2d(8, 6, 2), 24),
                          (mg.nn.Conv1d(5, 7, 4), 20)):
        bound = 1 / math.sqrt(fan_in)
        top = float(layer.weight.detach().abs().max())
        assert 0.8 * bound < top <= bound, (layer, top, bound)  # the draws fill the range
        assert 0 < float(layer.bias.detach().abs().max()) <= bound


REFUSED = [
    lambda lib: lib.nn.Conv2d(4, 4, 3, groups=0),
    lambda lib: lib.nn.Conv2d(3, 4, 3, groups=2),
    lambda lib: lib.nn.Conv1d(4, 3, 3, groups=2),
    lambda lib: lib.nn.Conv2d(4, 4, 3, padding="full"),
    lambda lib: lib.nn.Conv2d(4, 4, 3, padding="same", stride=2),
    lambda lib: lib.nn.Conv2d(4, 4, 3, padding_mode="mirror"),
    lambda lib: lib.nn.ConvTranspose2d(4, 4, 3, padding_mode="reflect"),
    lambda lib: lib.nn.ConvTranspose1d(4, 4, 3, padding_mode="circular"),
]


@pytest.mark.parametrize("i", range(len(REFUSED)))
def test_refused_arguments_raise_torchs_value_error(i):
    messages = []
    for lib in (torch, mg):
        with pytest.raises(ValueError) as e:
            REFUSED[i](lib)
        messages.append(str(e.value).replace("{'same', 'valid'}", "").replace(
            "{'reflect', 'zeros', 'circular', 'replicate'}", ""))
    # torch prints its sets in hash order: compare the text around them.
    assert messages[1].split("{")[0] == messages[0].split("{")[0]


def test_mutagrad_also_refuses_bad_sizes():
    with pytest.raises(ValueError, match="kernel_size must be 2 values >= 1"):
        mg.nn.Conv2d(2, 2, (3, 0))
    with pytest.raises(ValueError, match="padding must be 1 values >= 0"):
        mg.nn.Conv1d(2, 2, 3, padding=-1)
    with pytest.raises(ValueError, match="padding must be sizes"):
        mg.nn.ConvTranspose2d(2, 2, 3, padding="same")


def test_bad_input_raises_torchs_kind_and_changes_nothing(device):
    t = torch.nn.Conv2d(4, 6, 3, groups=2)
    m = mg.nn.Conv2d(4, 6, 3, groups=2).to(device)
    for x in (torch.randn(2, 3, 5, 5), torch.randn(4, 5), torch.randn(1, 4, 2, 2),
              torch.randn(1, 4, 5, 5).double()):
        with pytest.raises(RuntimeError) as te:
            t(x)
        mx = mgt(x, device)
        w, wv, xv = numpy_of(m.weight), m.weight._version, mx._version
        with pytest.raises(Exception) as me:
            m(mx)
        assert isinstance(me.value, type(te.value)), (me.value, te.value)
        assert (m.weight._version, mx._version) == (wv, xv)
        assert np.array_equal(numpy_of(m.weight), w)


def test_inplace_relu_after_a_conv_is_safe_and_a_write_into_its_input_is_refused(device):
    conv = mg.nn.Conv2d(2, 3, 3, padding=1).double().to(device)
    net = mg.nn.Sequential(conv, mg.nn.ReLU(inplace=True))
    x = mgt(torch.randn(1, 2, 4, 4, dtype=torch.float64), device, True)
    y = net(x)
    assert y.grad_fn.name() == "ReluBackward0"
    y.sum().backward()
    gx, gw = numpy_of(x.grad), numpy_of(conv.weight.grad)
    x.grad = None
    conv.zero_grad()
    conv(x).relu().sum().backward()
    assert np.array_equal(numpy_of(x.grad), gx)
    assert np.array_equal(numpy_of(conv.weight.grad), gw)

    h = x * 2.0
    z = conv(h)
    h.add_(1.0); line = __import__("inspect").currentframe().f_lineno  # noqa: E702
    with pytest.raises(RuntimeError, match=f"add_ at .*conv_modules_test.py:{line}") as e:
        z.sum().backward()
    assert "ConvolutionBackward0" in str(e.value)
