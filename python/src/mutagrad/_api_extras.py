"""torch 1.13 names that are compositions of existing ops (issue 35), module functions and
Tensor methods; install() puts the methods on mutagrad.Tensor.

    var, mean = mutagrad.var_mean(x, dim=1)          # (x.var(1), x.mean(1)), one call
    a, b = x.split_with_sizes([2, 4])                # split with sizes that must sum to x.size(0)
    x.swapdims_(0, 1)                                # transpose_ under its NumPy-style names
"""

from mutagrad import _C

_Tensor = _C.Tensor
_NO_ARG = object()


def _reduce_args(dim, unbiased, correction, keepdim):
    """var's keywords, as var_mean / std_mean pass them on (torch's overloads)."""
    kwargs = {"keepdim": keepdim}
    if correction is not None:
        kwargs["correction"] = correction
    elif unbiased is not None:
        kwargs["unbiased"] = unbiased
    return ((dim,) if dim is not _NO_ARG else ()), kwargs


def var_mean(input, dim=_NO_ARG, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    """(input.var(dim, ...), input.mean(dim, keepdim)): torch.var_mean's overloads
    (var_mean(x), var_mean(x, unbiased), var_mean(x, dim, unbiased, keepdim),
    var_mean(x, dim, correction=, keepdim=))."""
    if isinstance(dim, bool):  # var_mean(x, False): the unbiased overload
        dim, unbiased = _NO_ARG, dim
    args, kwargs = _reduce_args(dim, unbiased, correction, keepdim)
    var = input.var(*args, **kwargs)
    if dim is _NO_ARG or dim is None:
        mean = input.mean()
        if keepdim:
            mean = mean.reshape([1] * input.dim())
    else:
        mean = input.mean(dim, keepdim=keepdim)
    return var, mean


def std_mean(input, dim=_NO_ARG, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    """(input.std(dim, ...), input.mean(dim, keepdim)), as var_mean."""
    if isinstance(dim, bool):
        dim, unbiased = _NO_ARG, dim
    args, kwargs = _reduce_args(dim, unbiased, correction, keepdim)
    std = input.std(*args, **kwargs)
    _, mean = var_mean(input, dim, unbiased, keepdim, correction=correction)
    return std, mean


def split_with_sizes(input, split_sizes, dim=0):  # noqa: A002  (torch's parameter name)
    """input.split(split_sizes, dim) with a list of sizes (torch raises if they do not sum to
    the dim's size). The pieces are views whose grad_fn is SplitBackward0 (torch:
    SplitWithSizesBackward0)."""
    if isinstance(split_sizes, int) or not hasattr(split_sizes, "__iter__"):
        raise TypeError("split_with_sizes(): argument 'split_sizes' must be a list of ints, "
                        f"not {type(split_sizes).__name__}")
    return input.split(list(split_sizes), dim)


def unsafe_split(input, split_size, dim=0):  # noqa: A002
    """split, without torch's view-ness guarantee (the same views here)."""
    return input.split(split_size, dim)


def unsafe_split_with_sizes(input, split_sizes, dim=0):  # noqa: A002
    return split_with_sizes(input, split_sizes, dim)


def unsafe_chunk(input, chunks, dim=0):  # noqa: A002
    """chunk, without torch's view-ness guarantee (the same views here)."""
    return input.chunk(chunks, dim)


def broadcast_shapes(*shapes):
    """The shape all `shapes` broadcast to (torch's rule; RuntimeError when they do not)."""
    out = []
    for shape in shapes:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        for i, size in enumerate(reversed(shape)):
            if i == len(out):
                out.append(size)
            elif out[i] == 1 or size == out[i]:
                out[i] = size
            elif size != 1:
                raise RuntimeError("Shape mismatch: objects cannot be broadcast to a single "
                                   f"shape (sizes {size} and {out[i]} at dim -{i + 1})")
    return _size(reversed(out))


def _size(values):
    from mutagrad._types import Size
    return Size(list(values))


def broadcast_tensors(*tensors):
    """Views of `tensors` expanded to their common shape (ExpandBackward0), as torch."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t.expand(shape) for t in tensors)


def _swapdims_(self, dim0, dim1):
    """transpose_(dim0, dim1): an in-place view op (one bump, TransposeBackward1 as torch)."""
    return self.transpose_(dim0, dim1)


def _is_view(self):
    """Whether this tensor is a view of another (its _base is set), as torch's Tensor._is_view;
    detach() gives a new tensor that is not a view."""
    return self._base is not None


_PROFILES = {
    "default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
    "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
    "full": dict(precision=4, threshold=float("inf"), edgeitems=3, linewidth=80),
}
_INT64_MAX = 2 ** 63 - 1


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """torch.set_printoptions: how repr/str show tensors, process-wide. profile ("default",
    "short", "full") sets precision, threshold, edgeitems and linewidth first; each other
    argument that is not None then overrides its option. sci_mode is always set: True or
    False forces scientific notation on or off, None lets the values choose (torch's rule)."""
    options = _C._get_printoptions()
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: unknown profile {profile!r}; expected "
                             "'default', 'short' or 'full'")
        options.update(_PROFILES[profile])
    for name, value in (("precision", precision), ("threshold", threshold),
                        ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            options[name] = value
    for name in ("precision", "edgeitems", "linewidth"):
        if not isinstance(options[name], int) or options[name] < (1 if name == "linewidth" else 0):
            raise ValueError(f"set_printoptions: {name} must be a non-negative int (linewidth "
                             f"at least 1), got {options[name]!r}")
    if options["threshold"] < 0:
        raise ValueError(f"set_printoptions: threshold must be >= 0, got {options['threshold']!r}")
    threshold = options["threshold"]
    if threshold == float("inf") or threshold > _INT64_MAX:
        threshold = _INT64_MAX
    _C._set_printoptions(int(options["precision"]), int(threshold), int(options["edgeitems"]),
                         int(options["linewidth"]), None if sci_mode is None else bool(sci_mode))


def install():
    t = _Tensor
    t.split_with_sizes = split_with_sizes
    t.unsafe_split = unsafe_split
    t.unsafe_split_with_sizes = unsafe_split_with_sizes
    t.unsafe_chunk = unsafe_chunk
    t.swapdims_ = _swapdims_
    t.swapaxes_ = _swapdims_
    t._is_view = _is_view
