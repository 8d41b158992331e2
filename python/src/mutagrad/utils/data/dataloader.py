"""DataLoader: torch.utils.data.DataLoader's arguments and batching, loading in the main
process (num_workers > 0 warns and loads in the main process too)."""

import warnings

from mutagrad.utils.data.collate import default_collate, default_convert
from mutagrad.utils.data.dataset import IterableDataset
from mutagrad.utils.data.sampler import BatchSampler, RandomSampler, SequentialSampler


def get_worker_info():
    """None: every sample is loaded in the main process."""
    return None


class DataLoader:
    """Batches of `dataset`: the indices from `sampler` (shuffle=True: a RandomSampler drawing
    from `generator`), grouped by a BatchSampler(batch_size, drop_last), the samples merged by
    collate_fn (default_collate). batch_size=None yields single samples through
    default_convert. Each iteration is a new epoch (a new order when shuffling)."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=2, persistent_workers=False, pin_memory_device=""):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor != 2:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing.")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if multiprocessing_context is not None and num_workers == 0:
            raise ValueError("multiprocessing_context can only be used with multi-process "
                             "loading (num_workers > 0), but got num_workers=0")
        if num_workers > 0:
            warnings.warn("mutagrad.utils.data.DataLoader loads in the main process; "
                          "num_workers=%d is ignored" % num_workers, UserWarning)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.persistent_workers = persistent_workers

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = "iterable"
            if shuffle not in (False, None):
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 "option, but got shuffle={}".format(shuffle))
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 "option, but got sampler={}".format(sampler))
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 "batch_sampler option, but got batch_sampler={}"
                                 .format(batch_sampler))
        else:
            self._dataset_kind = "map"
            shuffle = bool(shuffle)

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")

        if sampler is None:
            if self._dataset_kind == "iterable":
                sampler = None
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and sampler is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    _FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
               "persistent_workers")

    def __setattr__(self, attr, val):
        if attr in self._FROZEN and "collate_fn" in self.__dict__:  # set last in __init__
            raise ValueError("{} attribute should not be set after {} is initialized"
                             .format(attr, type(self).__name__))
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None or (self._dataset_kind == "iterable"
                                                  and self.batch_size is not None)

    @property
    def _index_sampler(self):
        return self.batch_sampler if self.batch_sampler is not None else self.sampler

    def __iter__(self):
        if self._dataset_kind == "iterable":
            yield from self._iter_iterable()
            return
        if self._auto_collation:
            for indices in self.batch_sampler:
                yield self.collate_fn([self.dataset[i] for i in indices])
        else:
            for index in self.sampler:
                yield self.collate_fn(self.dataset[index])

    def _iter_iterable(self):
        it = iter(self.dataset)
        if self.batch_size is None:
            for sample in it:
                yield self.collate_fn(sample)
            return
        batch = []
        for sample in it:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self):
        if self._dataset_kind == "iterable":
            n = len(self.dataset)
            if self.batch_size is not None:
                if self.drop_last:
                    return n // self.batch_size
                return (n + self.batch_size - 1) // self.batch_size
            return n
        return len(self._index_sampler)
