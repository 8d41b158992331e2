"""mutagrad.utils.data: torch.utils.data's Dataset, TensorDataset, ConcatDataset, Subset,
random_split, the samplers (SequentialSampler, RandomSampler, SubsetRandomSampler,
BatchSampler), default_collate and DataLoader, loading in the main process.

    ds = TensorDataset(x, y)
    for xb, yb in DataLoader(ds, batch_size=64, shuffle=True, generator=g):
        ...

Shuffles draw from mutagrad's generators (Philox), so a seed gives another order than torch's
with the same seed: the same permutation properties, deterministic per seed, but not torch's
indices. See docs/python.md ("Data loading").
"""

from mutagrad.utils.data.dataset import (  # noqa: F401
    ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split)
from mutagrad.utils.data.sampler import (  # noqa: F401
    BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler)
from mutagrad.utils.data.collate import default_collate, default_convert  # noqa: F401
from mutagrad.utils.data.dataloader import DataLoader, get_worker_info  # noqa: F401

__all__ = ["BatchSampler", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset",
           "RandomSampler", "Sampler", "SequentialSampler", "Subset", "SubsetRandomSampler",
           "TensorDataset", "default_collate", "default_convert", "get_worker_info",
           "random_split"]
