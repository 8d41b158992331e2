"""Checkpoint interop with current PyTorch (2.x) and the `safetensors` package (dev-side).

Run by tools/torch2/checkpoint_interop.sh with the venv of setup_venv.sh (torch 2.x and
safetensors from PyPI); the mutagrad module on PYTHONPATH. Checks, each against the other side:
  1. files mutagrad.save writes load in torch 2.x with weights_only=True (every dtype, views,
     shared storages, nested values, module and optimizer state_dicts);
  2. files torch 2.x's torch.save writes with its defaults load in mutagrad (equal values,
     geometry and sharing); dtypes mutagrad has not are its typed UnknownDTypeError;
  3. safetensors: the package's files load in mutagrad and ours in the package, every dtype.
Prints one line per check and a summary; exits 1 if any check failed.
"""
import collections
import json
import os
import struct
import sys
import tempfile

import torch
import safetensors
import safetensors.torch

import mutagrad

DTYPES = ["float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8",
          "uint8", "bool"]
failures = []
checks = 0


def check(name, fn):
    global checks
    checks += 1
    try:
        fn()
        print(f"ok   {name}")
    except Exception as e:  # noqa: BLE001 - every failure is reported, then the exit status
        failures.append(name)
        print(f"FAIL {name}: {type(e).__name__}: {e}")


def dname(t):
    return str(t.dtype).split(".")[-1]


def same(m, t):
    assert dname(m) == dname(t), (dname(m), dname(t))
    assert tuple(m.shape) == tuple(t.shape), (m.shape, t.shape)
    assert tuple(m.stride()) == tuple(t.stride()), (m.stride(), t.stride())
    assert m.storage_offset() == t.storage_offset()
    assert m.tolist() == t.tolist()


def sample(dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 5, generator=g) * 40).to(getattr(torch, dtype))


def to_mutagrad(t):
    return mutagrad.tensor(t.tolist(), dtype=getattr(mutagrad, dname(t))).reshape(tuple(t.shape))


def ours_load_in_torch2(tmp):
    ref = {d: sample(d, k) for k, d in enumerate(DTYPES)}
    base = mutagrad.arange(20.0).reshape(4, 5)
    obj = {"dtypes": {d: to_mutagrad(v) for d, v in ref.items()},
           "base": base, "t": base.t(), "row": base[2, 1:], "empty": mutagrad.zeros(0, 3),
           "nested": [1, -(2 ** 40), 0.5, "s", None, True, (1, 2), {7: "seven"}]}
    m = mutagrad.nn.Linear(3, 2)
    opt = mutagrad.optim.Adam(m.parameters(), lr=0.1)
    m(mutagrad.randn(4, 3)).sum().backward()
    opt.step()
    obj["model"], obj["opt"] = m.state_dict(), opt.state_dict()
    path = os.path.join(tmp, "ours.pt")
    mutagrad.save(obj, path)
    got = torch.load(path, weights_only=True)
    for d in DTYPES:
        same(obj["dtypes"][d], got["dtypes"][d])
    for k in ("base", "t", "row", "empty"):
        same(obj[k], got[k])
    assert got["t"].untyped_storage().data_ptr() == got["base"].untyped_storage().data_ptr()
    assert got["row"].untyped_storage().data_ptr() == got["base"].untyped_storage().data_ptr()
    assert got["nested"] == obj["nested"]
    assert isinstance(got["model"], collections.OrderedDict)
    for k, v in obj["model"].items():
        same(v, got["model"][k])
    model = torch.nn.Linear(3, 2)
    model.load_state_dict(got["model"])
    topt = torch.optim.Adam(model.parameters(), lr=0.1)
    topt.load_state_dict(got["opt"])
    assert topt.state_dict()["param_groups"][0]["lr"] == 0.1


def torch2_files_load_here(tmp):
    ref = {d: sample(d, 10 + k) for k, d in enumerate(DTYPES)}
    base = torch.arange(20.0).reshape(4, 5)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    opt = torch.optim.AdamW(model.parameters(), lr=0.01)
    model(torch.randn(5, 3)).sum().backward()
    opt.step()
    obj = {"dtypes": ref, "base": base, "t": base.t(), "row": base[2, 1:],
           "param": torch.nn.Parameter(torch.ones(2)),
           "nested": [1, 0.5, "s", None, (1, 2), {7: "seven"}],
           "model": model.state_dict(), "opt": opt.state_dict()}
    path = os.path.join(tmp, "torch2.pt")
    torch.save(obj, path)  # 2.x's defaults
    got = mutagrad.load(path)
    for d in DTYPES:
        same(got["dtypes"][d], ref[d])
    for k in ("base", "t", "row"):
        same(got[k], obj[k])
    got["base"].add_(1)
    assert got["t"].tolist() == (obj["t"] + 1).tolist(), "views do not share a storage"
    assert got["param"].requires_grad and got["param"].tolist() == [1.0, 1.0]
    assert got["nested"] == obj["nested"]
    assert got["model"]._metadata == obj["model"]._metadata
    for k, v in obj["model"].items():
        same(got["model"][k], v)
    for i, s in obj["opt"]["state"].items():
        for k, v in s.items():
            same(got["opt"]["state"][i][k], v)
    assert got["opt"]["param_groups"] == obj["opt"]["param_groups"]
    # And through a file object, and torch 2.x's file re-saved by us loads back in torch 2.x.
    with open(path, "rb") as f:
        same(mutagrad.load(f)["row"], obj["row"])
    mutagrad.save(got, os.path.join(tmp, "resaved.pt"))
    back = torch.load(os.path.join(tmp, "resaved.pt"), weights_only=True)
    same(got["row"], back["row"])


def torch2_dtypes_mutagrad_lacks(tmp):
    names = [n for n in ("uint16", "uint32", "uint64", "complex64", "float8_e4m3fn")
             if hasattr(torch, n)]
    for n in names:
        path = os.path.join(tmp, n + ".pt")
        torch.save({"x": torch.zeros(2, dtype=getattr(torch, n))}, path)
        try:
            mutagrad.load(path)
        except mutagrad.serialization.UnknownDTypeError as e:
            assert "dtype" in str(e) or "Storage" in str(e), str(e)
        else:
            raise AssertionError(f"{n}: loaded without an error")


def torch2_refuses_nothing_ours_refuses(tmp):
    """A torch 2.x weights_only=True load and ours agree on a forbidden global."""
    path = os.path.join(tmp, "evil.pt")

    class Evil:
        def __reduce__(self):
            return (os.getcwd, ())

    torch.save({"x": Evil()}, path)
    import pickle
    for loader in (lambda: torch.load(path, weights_only=True), lambda: mutagrad.load(path)):
        try:
            loader()
        except pickle.UnpicklingError:
            pass
        else:
            raise AssertionError("a forbidden global was loaded")


def safetensors_package_files_load_here(tmp):
    ref = {d: sample(d, 20 + k) for k, d in enumerate(DTYPES)}
    ref["empty"] = torch.zeros(0, 4)
    ref["scalar"] = torch.tensor(3.5)
    path = os.path.join(tmp, "pkg.safetensors")
    safetensors.torch.save_file(ref, path, metadata={"format": "pt"})
    got = mutagrad.safetensors.load_file(path)
    assert sorted(got) == sorted(ref)
    for k, v in ref.items():
        same(got[k], v)
    with mutagrad.safetensors.safe_open(path, framework="pt") as f:
        assert f.metadata() == {"format": "pt"}
    with open(path, "rb") as f:
        same(mutagrad.safetensors.load(f.read())["bfloat16"], ref["bfloat16"])


def ours_load_in_safetensors_package(tmp):
    ref = {d: sample(d, 30 + k) for k, d in enumerate(DTYPES)}
    ref["empty"] = torch.zeros(0, 4)
    ours = {k: to_mutagrad(v) for k, v in ref.items()}
    path = os.path.join(tmp, "ours.safetensors")
    mutagrad.safetensors.save_file(ours, path, metadata={"format": "pt"})
    got = safetensors.torch.load_file(path)
    for k, v in ref.items():
        same(v, got[k])
    with safetensors.safe_open(path, framework="pt") as f:
        assert f.metadata() == {"format": "pt"}
        assert sorted(f.keys()) == sorted(ref)
    raw = open(path, "rb").read()
    assert safetensors.torch.load(raw)["int16"].tolist() == ref["int16"].tolist()
    # The package's header for the same tensors: the same entries (dtype, shape, byte length).
    # The order in the data section may differ: ours is larger elements first, then by name;
    # safetensors 0.8 orders by its dtype enum (I64 before F64, I8 before U8 before BOOL). Both
    # keep every tensor aligned, and each side reads the other's (checked above).
    theirs = safetensors.torch.save(ref, metadata={"format": "pt"})
    n, m = struct.unpack("<Q", raw[:8])[0], struct.unpack("<Q", theirs[:8])[0]
    a, b = json.loads(raw[8:8 + n]), json.loads(theirs[8:8 + m])
    assert a.pop("__metadata__") == b.pop("__metadata__")
    assert sorted(a) == sorted(b)
    for k in a:
        assert (a[k]["dtype"], a[k]["shape"]) == (b[k]["dtype"], b[k]["shape"]), k
        (x0, x1), (y0, y1) = a[k]["data_offsets"], b[k]["data_offsets"]
        assert x1 - x0 == y1 - y0, k
    assert len(raw) - n == len(theirs) - m


def main():
    print(f"torch {torch.__version__}, safetensors {safetensors.__version__}, "
          f"mutagrad from {os.path.dirname(mutagrad.__file__)}")
    if not torch.__version__.startswith("2."):
        print("checkpoint_interop: expected torch 2.x; this is not the torch2 venv")
        return 3
    with tempfile.TemporaryDirectory() as tmp:
        for fn in (ours_load_in_torch2, torch2_files_load_here, torch2_dtypes_mutagrad_lacks,
                   torch2_refuses_nothing_ours_refuses, safetensors_package_files_load_here,
                   ours_load_in_safetensors_package):
            check(fn.__name__, lambda fn=fn: fn(tmp))
    print(f"checkpoint_interop: {checks - len(failures)}/{checks} checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
