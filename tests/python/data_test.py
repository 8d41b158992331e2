"""mutagrad.utils.data against torch.utils.data 1.13. Orders without shuffling and every
collate result (tensors of each dtype, numbers, bools, strings, dicts, tuples, namedtuples,
lists, NumPy arrays and scalars) equal torch's for the same samples; shuffled orders are
checked by their properties, since mutagrad's generator is not torch's (a permutation per
epoch, each sample once, a new order each epoch, the same orders for the same seed, drop_last
sizes); random_split's sizes equal torch's; bad arguments raise torch's exception kind and
message; TensorDataset on the host-run CUDA device yields CUDA batches.
"""

import collections

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import mutagrad as mg
import mutagrad.utils.data as mdata

Point = collections.namedtuple("Point", ["x", "y"])


def plain(value):
    """A comparable form of a collated batch: tensors as (dtype name, shape, values)."""
    if isinstance(value, (torch.Tensor, mg.Tensor)):
        return ("tensor", str(value.dtype).split(".")[-1], tuple(value.shape), value.tolist())
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return ("namedtuple", type(value).__name__, tuple(plain(v) for v in value))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [plain(v) for v in value])
    return value


def convert(sample, lib):
    """The same sample for lib: arrays become lib tensors where marked."""
    if isinstance(sample, tuple) and len(sample) == 2 and sample[0] == "T":
        values, dtype = sample[1]
        return lib.tensor(values, dtype=getattr(lib, dtype))
    if isinstance(sample, dict):
        return {k: convert(v, lib) for k, v in sample.items()}
    if isinstance(sample, tuple) and hasattr(sample, "_fields"):
        return type(sample)(*(convert(v, lib) for v in sample))
    if isinstance(sample, (list, tuple)):
        return type(sample)(convert(v, lib) for v in sample)
    return sample


def T(values, dtype="float32"):
    return ("T", (values, dtype))


SAMPLE_KINDS = {
    "float_tensor": lambda i: T([i * 0.5, -i], "float32"),
    "int_tensor": lambda i: T([[i, i + 1], [2 * i, 3]], "int64"),
    "double_scalar_tensor": lambda i: T(i * 0.25, "float64"),
    "bool_tensor": lambda i: T([i % 2 == 0], "bool"),
    "float": lambda i: i * 0.1,
    "int": lambda i: i,
    "bool": lambda i: i % 3 == 0,
    "str": lambda i: "s%d" % i,
    "bytes": lambda i: b"b%d" % i,
    "tuple": lambda i: (T([i, i], "float64"), i, "x"),
    "list": lambda i: [i, i * 2.0],
    "dict": lambda i: {"a": T([i], "int32"), "b": {"c": i * 1.5, "d": [i, -i]}},
    "namedtuple": lambda i: Point(T([i * 1.0]), i),
    "numpy_array": lambda i: np.arange(3, dtype=np.float32) * i,
    "numpy_scalar": lambda i: np.float64(i) / 3,
    "numpy_int": lambda i: np.int16(i),
}


class ListDataset:
    def __init__(self, samples):
        self.samples = samples

    def __getitem__(self, i):
        return self.samples[i]

    def __len__(self):
        return len(self.samples)


@pytest.mark.parametrize("kind", sorted(SAMPLE_KINDS))
@pytest.mark.parametrize("batch_size,drop_last", [(1, False), (3, False), (3, True), (7, False),
                                                  (None, False)])
def test_batches_equal_torch_without_shuffle(kind, batch_size, drop_last):
    raw = [SAMPLE_KINDS[kind](i) for i in range(7)]
    tl = tdata.DataLoader(ListDataset([convert(s, torch) for s in raw]), batch_size=batch_size,
                          drop_last=drop_last)
    ml = mdata.DataLoader(ListDataset([convert(s, mg) for s in raw]), batch_size=batch_size,
                          drop_last=drop_last)
    assert len(ml) == len(tl)
    got = [plain(b) for b in ml]
    want = [plain(b) for b in tl]
    assert got == want


def test_collate_errors_as_torch():
    for batch in ([object(), object()], [[1, 2], [3]], [np.array(["a", "b"])]):
        with pytest.raises(Exception) as want:
            tdata.default_collate(batch)
        with pytest.raises(Exception) as got:
            mdata.default_collate(batch)
        assert (type(got.value), str(got.value)) == (type(want.value), str(want.value))


def test_tensor_dataset_as_torch():
    x = np.arange(24, dtype=np.float32).reshape(8, 3)
    y = np.arange(8) % 3
    tds = tdata.TensorDataset(torch.tensor(x), torch.tensor(y))
    mds = mdata.TensorDataset(mg.tensor(x.tolist()), mg.tensor(y.tolist()))
    assert len(mds) == len(tds) == 8
    for i in (0, 5, -1):
        assert plain(mds[i]) == plain(tds[i])
    with pytest.raises(AssertionError):
        tdata.TensorDataset(torch.zeros(3), torch.zeros(4))
    with pytest.raises(AssertionError) as err:
        mdata.TensorDataset(mg.zeros(3), mg.zeros(4))
    assert "[3, 4]" in str(err.value)
    # A loader over it: x batches stacked, y batches int64.
    tb = [plain(b) for b in tdata.DataLoader(tds, batch_size=3)]
    mb = [plain(b) for b in mdata.DataLoader(mds, batch_size=3)]
    assert mb == tb


def indices_of(loader):
    return [int(v) for batch in loader for v in batch[0].reshape(-1).tolist()]


@pytest.mark.parametrize("n,batch_size,drop_last", [(10, 3, False), (10, 3, True),
                                                    (64, 8, True), (5, 10, False),
                                                    (5, 10, True), (1, 1, False)])
def test_shuffle_properties(n, batch_size, drop_last):
    ds = mdata.TensorDataset(mg.arange(n))
    g = mg.Generator().manual_seed(1234)
    loader = mdata.DataLoader(ds, batch_size=batch_size, shuffle=True, drop_last=drop_last,
                              generator=g)
    full = n // batch_size if drop_last else -(-n // batch_size)
    assert len(loader) == full == len(tdata.DataLoader(range(n), batch_size=batch_size,
                                                       drop_last=drop_last))
    epochs = []
    for _ in range(4):
        batches = list(loader)
        assert len(batches) == full
        sizes = [b[0].shape[0] for b in batches]
        assert all(s == batch_size for s in sizes[:-1])
        if drop_last:
            assert all(s == batch_size for s in sizes)
        else:
            assert sizes[-1] == n - (full - 1) * batch_size
        order = [int(v) for b in batches for v in b[0].tolist()]
        assert len(order) == len(set(order))  # each sample at most once
        if not drop_last:
            assert sorted(order) == list(range(n))  # a permutation
        else:
            assert len(order) == full * batch_size
        epochs.append(order)
    if n >= 10:
        assert len({tuple(e) for e in epochs}) > 1  # a new order each epoch
    # The same seed gives the same epochs.
    g2 = mg.Generator().manual_seed(1234)
    again = mdata.DataLoader(ds, batch_size=batch_size, shuffle=True, drop_last=drop_last,
                             generator=g2)
    assert [[int(v) for b in again for v in b[0].tolist()] for _ in range(4)] == epochs
    if n >= 10:  # another seed, another order
        g3 = mg.Generator().manual_seed(4321)
        other = mdata.DataLoader(ds, batch_size=batch_size, shuffle=True, drop_last=drop_last,
                                 generator=g3)
        assert indices_of(other) != epochs[0]


def test_shuffle_without_generator_follows_the_global_seed():
    ds = mdata.TensorDataset(mg.arange(20))
    mg.manual_seed(5)
    first = indices_of(mdata.DataLoader(ds, batch_size=4, shuffle=True))
    mg.manual_seed(5)
    second = indices_of(mdata.DataLoader(ds, batch_size=4, shuffle=True))
    assert first == second and sorted(first) == list(range(20))
    assert first != list(range(20))


def test_samplers():
    data = list(range(10))
    assert list(mdata.SequentialSampler(data)) == list(tdata.SequentialSampler(data))
    for bs, drop in ((3, False), (3, True), (5, True), (11, False)):
        want = list(tdata.BatchSampler(tdata.SequentialSampler(data), bs, drop))
        got = list(mdata.BatchSampler(mdata.SequentialSampler(data), bs, drop))
        assert got == want
        assert len(mdata.BatchSampler(data, bs, drop)) == len(want)
    g = mg.Generator().manual_seed(0)
    r = list(mdata.RandomSampler(data, generator=g))
    assert sorted(r) == data
    rs = list(mdata.RandomSampler(data, replacement=True, num_samples=70, generator=g))
    assert len(rs) == 70 and set(rs) <= set(data) and len(set(rs)) < 70
    more = list(mdata.RandomSampler(data, num_samples=25, generator=g))
    assert len(more) == 25 and sorted(more[:10]) == data and sorted(more[10:20]) == data
    sub = list(mdata.SubsetRandomSampler([2, 4, 6], generator=g))
    assert sorted(sub) == [2, 4, 6]
    # The sampler feeds a loader in its order.
    ds = mdata.TensorDataset(mg.arange(10) * 10)
    loader = mdata.DataLoader(ds, batch_size=4, sampler=[9, 1, 3, 3, 0])
    assert [b[0].tolist() for b in loader] == [[90, 10, 30, 30], [0]]
    bl = mdata.DataLoader(ds, batch_sampler=[[1, 2], [0]])
    assert [b[0].tolist() for b in bl] == [[10, 20], [0]]


def errors(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the kind and message are compared
        return type(e), str(e)
    return None


BAD = [
    lambda d, ds: d.DataLoader(ds, sampler=[0, 1], shuffle=True),
    lambda d, ds: d.DataLoader(ds, batch_sampler=[[0]], batch_size=2),
    lambda d, ds: d.DataLoader(ds, batch_sampler=[[0]], drop_last=True),
    lambda d, ds: d.DataLoader(ds, batch_size=None, drop_last=True),
    lambda d, ds: d.DataLoader(ds, num_workers=-1),
    lambda d, ds: d.DataLoader(ds, batch_size=0),
    lambda d, ds: d.DataLoader(ds, batch_size=-2),
    lambda d, ds: d.BatchSampler(range(3), 2, drop_last=1),
    lambda d, ds: d.RandomSampler(ds, replacement=1),
    lambda d, ds: d.RandomSampler(ds, num_samples=0),
    lambda d, ds: d.random_split(ds, [3, 3]),
    lambda d, ds: d.random_split(ds, [0.5, 0.6]),
    lambda d, ds: d.ConcatDataset([]),
    lambda d, ds: d.DataLoader(ds, prefetch_factor=4),
    lambda d, ds: d.DataLoader(ds, persistent_workers=True),
    lambda d, ds: d.DataLoader(ds, multiprocessing_context="spawn"),
    lambda d, ds: setattr(d.DataLoader(ds), "batch_size", 4),
    lambda d, ds: setattr(d.DataLoader(ds), "sampler", [0]),
]


@pytest.mark.parametrize("index", range(len(BAD)))
def test_bad_arguments_as_torch(index):
    want = errors(lambda: BAD[index](tdata, tdata.TensorDataset(torch.arange(5))))
    got = errors(lambda: BAD[index](mdata, mdata.TensorDataset(mg.arange(5))))
    assert want is not None
    assert got == want


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.7], [0.5, 0.25, 0.25], [0.33, 0.33, 0.34],
                                     [0.1, 0.1, 0.1, 0.7], [10, 0]])
def test_random_split(lengths):
    ds = mdata.TensorDataset(mg.arange(10))
    tsplit = tdata.random_split(range(10), lengths, generator=torch.Generator().manual_seed(0))
    msplit = mdata.random_split(ds, lengths, generator=mg.Generator().manual_seed(0))
    assert [len(s) for s in msplit] == [len(s) for s in tsplit]
    seen = [int(s[i][0]) for s in msplit for i in range(len(s))]
    assert sorted(seen) == list(range(10))
    again = mdata.random_split(ds, lengths, generator=mg.Generator().manual_seed(0))
    assert [s.indices for s in again] == [s.indices for s in msplit]


def test_concat_subset_and_add():
    a = mdata.TensorDataset(mg.arange(3))
    b = mdata.TensorDataset(mg.arange(10, 14))
    c = a + b
    assert isinstance(c, mdata.ConcatDataset) and len(c) == 7
    assert [int(c[i][0]) for i in range(7)] == [0, 1, 2, 10, 11, 12, 13]
    assert int(c[-1][0]) == 13
    s = mdata.Subset(c, [6, 0])
    assert [int(s[i][0]) for i in range(2)] == [13, 0]


def test_iterable_dataset():
    class Stream(mdata.IterableDataset):
        def __iter__(self):
            return iter(range(7))

    assert [b.tolist() for b in mdata.DataLoader(Stream(), batch_size=3)] == [[0, 1, 2],
                                                                               [3, 4, 5], [6]]
    assert [b.tolist() for b in mdata.DataLoader(Stream(), batch_size=3, drop_last=True)] == \
        [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError):
        mdata.DataLoader(Stream(), shuffle=True)


def test_cuda_tensor_dataset_yields_cuda_batches():
    x = mg.arange(12, dtype=mg.float32, device="cuda").reshape(6, 2)
    y = mg.arange(6, device="cuda")
    batches = list(mdata.DataLoader(mdata.TensorDataset(x, y), batch_size=4))
    assert [b[0].device.type for b in batches] == ["cuda", "cuda"]
    assert batches[1][0].tolist() == [[8.0, 9.0], [10.0, 11.0]]
    assert batches[0][1].tolist() == [0, 1, 2, 3]


def test_num_workers_warns_and_loads():
    ds = mdata.TensorDataset(mg.arange(4))
    with pytest.warns(UserWarning, match="main process"):
        loader = mdata.DataLoader(ds, batch_size=2, num_workers=2)
    assert [b[0].tolist() for b in loader] == [[0, 1], [2, 3]]
    assert mg.utils.data.get_worker_info() is None
