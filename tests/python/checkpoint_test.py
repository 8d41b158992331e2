"""Checkpoints: torch 1.13's files load in mutagrad and mutagrad's load in torch 1.13 with equal
values and shared storages; a malicious pickle is refused without running; safetensors bytes
match the spec written by hand (docs/checkpoints.md)."""
import collections
import io
import json
import os
import struct

import pytest
import torch

import mutagrad

DTYPES = ["float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8",
          "uint8", "bool"]
ST_CODES = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16",
            "int64": "I64", "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8",
            "bool": "BOOL"}


def dname(t):
    return str(t.dtype).split(".")[-1]


def same(m, t):
    """A mutagrad tensor m equals a torch tensor t: dtype, shape, values."""
    assert dname(m) == dname(t)
    assert tuple(m.shape) == tuple(t.shape)
    assert m.tolist() == t.tolist()


def torch_sample(dtype):
    g = torch.Generator().manual_seed(len(dtype))
    return (torch.randn(3, 4, generator=g) * 50).to(getattr(torch, dtype))


def test_torch_files_load_with_equal_values_and_shared_storages(tmp_path):
    base = torch.arange(12.0).reshape(3, 4)
    obj = {
        "dtypes": {d: torch_sample(d) for d in DTYPES},
        "base": base, "t": base.t(), "row": base[1, 1:],
        "nested": [1, -(2**40), 0.5, "s", None, True, (1, 2), {7: "seven"}],
        "linear": torch.nn.Linear(3, 2).state_dict(),
        "bn": torch.nn.BatchNorm1d(3).state_dict(),
        "conv": torch.nn.Conv2d(2, 3, 3).state_dict(),
    }
    path = tmp_path / "torch.pt"
    torch.save(obj, path)
    got = mutagrad.load(path)
    for d in DTYPES:
        same(got["dtypes"][d], obj["dtypes"][d])
    same(got["t"], obj["t"])
    same(got["row"], obj["row"])
    assert got["t"].stride() == (1, 4)
    assert got["row"].storage_offset() == 5
    got["base"].add_(1)  # one storage: the views see the write
    assert got["t"].tolist() == (obj["t"] + 1).tolist()
    assert got["nested"] == obj["nested"]
    for name in ("linear", "bn", "conv"):
        assert isinstance(got[name], collections.OrderedDict)
        assert list(got[name].keys()) == list(obj[name].keys())
        assert got[name]._metadata == obj[name]._metadata
        for k, v in obj[name].items():
            same(got[name][k], v)
    # A file object and map_location work too.
    buf = io.BytesIO(path.read_bytes())
    same(mutagrad.load(buf, map_location="cpu")["dtypes"]["int8"], obj["dtypes"]["int8"])


def test_mutagrad_files_load_in_torch_with_shared_storage(tmp_path):
    base = mutagrad.arange(12.0).reshape(3, 4)
    obj = {
        "dtypes": {d: mutagrad.tensor(torch_sample(d).tolist(), dtype=getattr(mutagrad, d))
                   for d in DTYPES},
        "base": base, "t": base.t(), "row": base[1, 1:],
        "nested": [1, -(2**40), 0.5, "s", None, False, (1, 2), {7: "seven"}],
    }
    path = tmp_path / "mutagrad.pt"
    mutagrad.save(obj, path)
    got = torch.load(path)
    for d in DTYPES:
        same(obj["dtypes"][d], got["dtypes"][d])
    assert got["t"].stride() == (1, 4) and got["row"].storage_offset() == 5
    assert got["t"].storage().data_ptr() == got["base"].storage().data_ptr()
    assert got["row"].storage().data_ptr() == got["base"].storage().data_ptr()
    same(obj["t"], got["t"])
    same(obj["row"], got["row"])
    assert got["nested"] == obj["nested"]
    buf = io.BytesIO()
    mutagrad.save(obj, buf)
    buf.seek(0)
    same(obj["row"], torch.load(buf)["row"])


def test_module_and_optimizer_state_dicts_round_trip_through_both(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    opt = torch.optim.Adam(model.parameters(), lr=0.01, betas=(0.8, 0.9))
    model(torch.randn(5, 3)).sum().backward()
    opt.step()
    ckpt = {"model": model.state_dict(), "opt": opt.state_dict(), "epoch": 3}
    torch.save(ckpt, tmp_path / "a.pt")
    mid = mutagrad.load(tmp_path / "a.pt")
    assert mid["opt"]["param_groups"][0]["betas"] == (0.8, 0.9)
    assert sorted(mid["opt"]["state"].keys()) == [0, 1, 2, 3]
    mutagrad.save(mid, tmp_path / "b.pt")
    back = torch.load(tmp_path / "b.pt")
    model2 = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    model2.load_state_dict(back["model"])
    for k, v in model.state_dict().items():
        assert torch.equal(model2.state_dict()[k], v)
    assert back["model"]._metadata == ckpt["model"]._metadata
    opt2 = torch.optim.Adam(model2.parameters())
    opt2.load_state_dict(back["opt"])
    assert opt2.state_dict()["param_groups"] == ckpt["opt"]["param_groups"]
    for i, s in ckpt["opt"]["state"].items():
        for k, v in s.items():
            assert torch.equal(back["opt"]["state"][i][k], v)
    assert back["epoch"] == 3


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, ("touch " + self.marker,))


def test_a_malicious_pickle_is_a_typed_error_and_runs_nothing(tmp_path):
    marker = str(tmp_path / "pwned")
    torch.save({"w": torch.ones(2), "x": _Evil(marker)}, tmp_path / "evil.pt")
    before = (tmp_path / "evil.pt").read_bytes()
    with pytest.raises(RuntimeError, match="'posix.system' is not one a weights file needs"):
        mutagrad.load(tmp_path / "evil.pt", weights_only=False)
    assert not os.path.exists(marker)
    assert (tmp_path / "evil.pt").read_bytes() == before


def spec_bytes(tensors, metadata=None):
    """A safetensors file built by hand from the spec (the package's layout)."""
    order = sorted(tensors, key=lambda k: (-tensors[k].element_size(), k))
    header, offset, data = {}, 0, b""
    if metadata:
        header["__metadata__"] = metadata
    for k in order:
        t = tensors[k].contiguous()
        raw = t.view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[k] = {"data_offsets": [offset, offset + len(raw)], "dtype": ST_CODES[dname(t)],
                     "shape": list(t.shape)}
        offset += len(raw)
        data += raw
    text = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def test_safetensors_bytes_match_the_spec_and_round_trip(tmp_path):
    ref = {d: torch_sample(d) for d in DTYPES}
    ref["empty"] = torch.zeros(0, 3)
    ours = {k: mutagrad.tensor(v.tolist(), dtype=getattr(mutagrad, dname(v))).reshape(v.shape)
            for k, v in ref.items()}
    path = tmp_path / "m.safetensors"
    mutagrad.safetensors.save_file(ours, path, metadata={"format": "pt"})
    assert path.read_bytes() == spec_bytes(ref, {"format": "pt"})
    # The oracle's bytes load with equal values, through every entry point.
    (tmp_path / "ref.safetensors").write_bytes(spec_bytes(ref))
    loaded = mutagrad.safetensors.load_file(tmp_path / "ref.safetensors")
    for k, v in ref.items():
        same(loaded[k], v)
    same(mutagrad.safetensors.load(spec_bytes(ref))["int16"], ref["int16"])
    with mutagrad.safetensors.safe_open(path, framework="pt") as f:
        assert sorted(f.keys()) == sorted(ref)
        assert f.metadata() == {"format": "pt"}
        same(f.get_tensor("bfloat16"), ref["bfloat16"])
    with pytest.raises(RuntimeError, match="unknown dtype \"U16\""):
        mutagrad.safetensors.load(struct.pack("<Q", 56) +
                                  b'{"x":{"dtype":"U16","shape":[1],"data_offsets":[0,2]}}' +
                                  b"\0\0")


def test_mutagrad_module_and_optimizer_state_dicts_round_trip_and_load_in_torch(tmp_path):
    m = mutagrad.nn.Linear(3, 2)
    opt = mutagrad.optim.Adam(m.parameters(), lr=0.1)
    m(mutagrad.randn(4, 3)).sum().backward()
    opt.step()
    mutagrad.save({"model": m.state_dict(), "opt": opt.state_dict()}, tmp_path / "m.pt")
    t = torch.load(tmp_path / "m.pt")
    for k, v in m.state_dict().items():
        same(v, t["model"][k])
    assert t["opt"]["param_groups"][0]["betas"] == (0.9, 0.999)
    back = mutagrad.load(tmp_path / "m.pt")
    m2 = mutagrad.nn.Linear(3, 2)
    m2.load_state_dict(back["model"])
    opt2 = mutagrad.optim.Adam(m2.parameters(), lr=0.1)
    opt2.load_state_dict(back["opt"])
    for k, v in m.state_dict().items():
        assert m2.state_dict()[k].tolist() == v.tolist()
    x = mutagrad.randn(4, 3)
    for model, o in ((m, opt), (m2, opt2)):  # one more step: the restored state matches
        o.zero_grad()
        model(x).sum().backward()
        o.step()
    for k, v in m.state_dict().items():
        assert m2.state_dict()[k].tolist() == v.tolist()
