"""Checkpoints: torch 1.13's files load in mutagrad and mutagrad's load in torch 1.13 with equal
values and shared storages; a malicious pickle is refused without running; safetensors bytes
match the spec written by hand (docs/checkpoints.md)."""
import collections
import io
import json
import os
import pickle
import struct
import zipfile

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


def _data_offsets(path):
    """Each record's data offset, from its local header (Python's zipfile as the oracle)."""
    out = {}
    with zipfile.ZipFile(path) as z, open(path, "rb") as f:
        for info in z.infolist():
            f.seek(info.header_offset)
            head = f.read(30)
            assert head[:4] == b"PK\x03\x04"
            name_len, extra_len = struct.unpack("<HH", head[26:30])
            out[info.filename] = info.header_offset + 30 + name_len + extra_len
            assert info.compress_type == zipfile.ZIP_STORED
        assert z.testzip() is None  # every record's CRC-32, checked by zlib
    return out


def test_records_we_write_are_64_byte_aligned_crc_correct_and_load_in_torch(tmp_path):
    """torch.save aligns each record's data to 64 bytes (Note [Zip writer]); so do we, for
    storages of odd sizes, and torch 1.13 loads the file with equal values."""
    obj = {d: mutagrad.tensor(torch_sample(d)[:1, :3].tolist(), dtype=getattr(mutagrad, d))
           for d in DTYPES}
    obj["one"] = mutagrad.tensor([True])
    obj["big"] = mutagrad.arange(300000.0)  # beyond one 1 MiB write chunk
    path = tmp_path / "aligned.pt"
    mutagrad.save(obj, path)
    offsets = _data_offsets(path)
    assert len(offsets) == len(obj) + 3
    assert all(off % 64 == 0 for off in offsets.values()), offsets
    got = torch.load(path)
    for k, v in obj.items():
        same(v, got[k])
    # torch's own file, for comparison: the same alignment.
    torch.save({"x": torch.ones(3)}, tmp_path / "torch.pt")
    assert all(off % 64 == 0 for off in _data_offsets(tmp_path / "torch.pt").values())


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


def _placed(obj):
    return {k: (v.device.type, v.tolist()) for k, v in obj.items()}


def test_map_location_forms_match_torch(tmp_path):
    """Each form torch.load accepts, on a file with a CPU and a cuda:0 storage (torch 1.13 here
    has no CUDA device: wherever it can load, both put every tensor on the CPU with equal
    values; where torch refuses for want of CUDA, mutagrad keeps the tensor on cuda:0)."""
    g = mutagrad.arange(6.0, device="cuda")
    obj = {"c": mutagrad.arange(4.0), "g": g.reshape(2, 3), "v": g[2:5]}
    path = tmp_path / "two.pt"
    mutagrad.save(obj, path)
    want = {"c": ("cpu", [0.0, 1.0, 2.0, 3.0]), "g": ("cpu", [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]),
            "v": ("cpu", [2.0, 3.0, 4.0])}
    for form in ("cpu", torch.device("cpu"), {"cuda:0": "cpu"}, lambda s, loc: s,
                 lambda s, loc: s.cpu()):
        assert _placed(torch.load(path, map_location=form)) == want
        ours = form if not isinstance(form, torch.device) else mutagrad.device("cpu")
        assert _placed(mutagrad.load(path, map_location=ours)) == want
    # torch refuses the cuda:0 storage where the form leaves it there (no CUDA): no
    # map_location, a dict whose keys do not match exactly, a callable returning None.
    for form in (None, {"cuda": "cpu"}, {"cuda:1": "cpu"}, lambda s, loc: None):
        with pytest.raises(RuntimeError, match="CUDA"):
            torch.load(path, map_location=form)
        got = mutagrad.load(path, map_location=form)
        assert [got[k].device.type for k in ("c", "g", "v")] == ["cpu", "cuda", "cuda"]
        assert got["v"].tolist() == [2.0, 3.0, 4.0]
    # What a callable is given: each distinct storage once, on the CPU, with its location.
    seen_t, seen_m = [], []
    torch.load(path, map_location=lambda s, loc: seen_t.append((loc, s.nbytes(), s.device.type))
               or s)
    mutagrad.load(path, map_location=lambda s, loc: seen_m.append((loc, s.nbytes(),
                                                                   s.device.type)) or s)
    assert seen_m == seen_t == [("cpu", 16, "cpu"), ("cuda:0", 24, "cpu")]
    # Beyond torch 1.13 here (it has no CUDA): moving to the device, views keep sharing.
    for form in ("cuda", {"cpu": "cuda:0"}, lambda s, loc: s.cuda()):
        got = mutagrad.load(path, map_location=form)
        assert [got[k].device.type for k in ("c", "g", "v")] == ["cuda"] * 3
        got["g"].add_(1)
        assert got["v"].tolist() == [3.0, 4.0, 5.0]
    with pytest.raises(TypeError, match="map_location returned a int"):
        mutagrad.load(path, map_location=lambda s, loc: 3)
    with pytest.raises(TypeError, match="map_location must be"):
        mutagrad.load(path, map_location=3)


class _Storage:
    def __init__(self, numel, storage_type=None):
        self.numel, self.type = numel, storage_type or torch.FloatStorage


class _Tensor:
    """Pickles as torch's tensor rebuild call over a _Storage, with any geometry."""

    def __init__(self, storage, offset, size, stride):
        self.args = (storage, offset, size, stride, False, collections.OrderedDict())

    def __reduce__(self):
        return (torch._utils._rebuild_tensor_v2, self.args)


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, _Storage):
            return ("storage", obj.type, "0", "cpu", obj.numel)
        return None


def _archive(obj, records=None, compress=False):
    """A torch-format zip of obj's pickle and the given data records."""
    pkl = io.BytesIO()
    _Pickler(pkl, protocol=2).dump(obj)
    out = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(out, "w", method) as z:
        z.writestr("archive/data.pkl", pkl.getvalue())
        for name, data in (records or {}).items():
            z.writestr("archive/" + name, data)
        z.writestr("archive/version", "3\n")
    return out.getvalue()


def _st(header, data):
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def test_each_hostile_file_raises_its_documented_class(tmp_path):
    """docs/checkpoints.md's table of errors: the exact class for each kind of hostile file, and
    every one a RuntimeError (UnpicklingError also a pickle.UnpicklingError)."""
    ser = mutagrad.serialization
    good = _archive([_Tensor(_Storage(4), 0, (4,), (1,))], {"data/0": b"\0" * 16})
    assert mutagrad.load(io.BytesIO(good))[0].tolist() == [0.0] * 4
    cyclic = []
    cyclic.append(cyclic)
    deep = []
    for _ in range(300):
        deep = [deep]
    marker = str(tmp_path / "pwned")
    cases = [
        (ser.FormatError, b"PK\x03\x04 garbage"),
        (ser.FormatError, good[:len(good) // 2]),
        (ser.FormatError, _archive([_Tensor(_Storage(4), 0, (4,), (1,))])),  # no data/0
        (ser.FormatError, _archive([1], {"data/0": b"\0" * 16}, compress=True)),
        (ser.OffsetError, _archive([_Tensor(_Storage(4), 2, (4,), (1,))],
                                   {"data/0": b"\0" * 16})),
        (ser.SizeMismatchError, _archive([_Tensor(_Storage(4), 0, (4,), (1,))],
                                         {"data/0": b"\0" * 12})),
        (ser.UnknownDTypeError, _archive([_Tensor(_Storage(2, torch.ComplexFloatStorage), 0,
                                                  (2,), (1,))], {"data/0": b"\0" * 16})),
        (ser.UnpicklingError, _archive([_Evil(marker)])),
        (ser.UnpicklingError, _archive(cyclic)),
        (ser.UnpicklingError, _archive(deep)),
    ]
    for cls, data in cases:
        for load in (lambda: mutagrad.load(io.BytesIO(data)),
                     lambda: mutagrad.load(_write(tmp_path / "h.pt", data))):
            with pytest.raises(ser.SerializationError) as info:
                load()
            assert type(info.value) is cls, (cls, type(info.value), str(info.value))
            assert isinstance(info.value, RuntimeError)
    assert issubclass(ser.UnpicklingError, pickle.UnpicklingError)
    assert not os.path.exists(marker)
    with pytest.raises(ser.SerializationError) as info:
        mutagrad.load(tmp_path / "absent.pt")
    assert type(info.value) is ser.SerializationError
    # safetensors
    f4 = b"\0" * 8
    st_cases = [
        (ser.FormatError, b"abc"),
        (ser.FormatError, struct.pack("<Q", 1000) + b"{}"),
        (ser.UnknownDTypeError, _st({"x": {"dtype": "U16", "shape": [1],
                                           "data_offsets": [0, 2]}}, b"\0\0")),
        (ser.SizeMismatchError, _st({"x": {"dtype": "F32", "shape": [3],
                                           "data_offsets": [0, 8]}}, f4)),
        (ser.OffsetError, _st({"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
                               "y": {"dtype": "F32", "shape": [1], "data_offsets": [2, 6]}},
                              f4)),
    ]
    for cls, data in st_cases:
        for load in (lambda: mutagrad.safetensors.load(data),
                     lambda: mutagrad.safetensors.load_file(_write(tmp_path / "h.st", data))):
            with pytest.raises(mutagrad.safetensors.SafetensorError) as info:
                load()
            assert type(info.value) is cls, (cls, type(info.value), str(info.value))


def _write(path, data):
    path.write_bytes(data)
    return path
