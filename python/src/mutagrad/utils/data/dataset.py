"""Datasets: torch.utils.data.dataset's Dataset, IterableDataset, TensorDataset, ConcatDataset,
Subset and random_split."""

import bisect
import math
import warnings

import mutagrad
from mutagrad import _C


class Dataset:
    """A map-style dataset: __getitem__(index) and (for the samplers) __len__."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """An iterable-style dataset: __iter__ yields the samples (no sampler, no shuffle)."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        raise TypeError("IterableDataset cannot be concatenated with +")


class TensorDataset(Dataset):
    """Sample i is (t[i] for t in tensors); every tensor has the same size in dim 0."""

    def __init__(self, *tensors):
        if any(not isinstance(t, _C.Tensor) for t in tensors):
            bad = next(type(t).__name__ for t in tensors if not isinstance(t, _C.Tensor))
            raise TypeError("TensorDataset: every argument must be a Tensor, got " + bad)
        if tensors and any(t.dim() == 0 for t in tensors):
            raise ValueError("TensorDataset: a 0-dim tensor has no samples; give tensors with "
                             "the samples along dim 0")
        if not all(tensors[0].size(0) == t.size(0) for t in tensors):
            sizes = [t.size(0) for t in tensors]
            raise AssertionError("Size mismatch between tensors: sizes in dim 0 are %s; every "
                                 "tensor needs one row per sample" % sizes)
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)


class ConcatDataset(Dataset):
    """The datasets one after the other."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        d = bisect.bisect_right(self.cumulative_sizes, idx)
        start = 0 if d == 0 else self.cumulative_sizes[d - 1]
        return self.datasets[d][idx - start]


class Subset(Dataset):
    """dataset[indices[i]] as sample i."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Splits `dataset` into Subsets of the given lengths (or fractions summing to 1, the
    remainder spread one by one from the first) over a random permutation drawn from
    `generator` (the default generator when None)."""
    if generator is None:
        generator = mutagrad.default_generator
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError("Fraction at index {} is not between 0 and 1".format(i))
            counts.append(int(math.floor(n * frac)))
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, count in enumerate(counts):
            if count == 0:
                warnings.warn("Length of split at index {} is 0. This might result in an empty "
                              "dataset.".format(i))
        lengths = counts
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = mutagrad.randperm(sum(lengths), generator=generator).tolist()
    out = []
    offset = 0
    for length in lengths:
        out.append(Subset(dataset, order[offset:offset + length]))
        offset += length
    return out
