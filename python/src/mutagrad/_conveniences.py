"""Conveniences that torch scripts expect, written in Python over the bindings (torch 1.13).

    import mutagrad as torch
    print(f"loss {loss:.4f}")                 # __format__ of a 0-d tensor formats its item()
    w.data -= lr * w.grad                     # .data's setter (see _set_data for its limits)
    z = x.new_zeros(2, 3)                     # new_*: x's dtype and device by default
    rows, cols = torch.where(mask)            # where(cond) is cond.nonzero(as_tuple=True)
    x.sum(axis=0, keepdims=True)              # NumPy's names, where torch accepts them

Nothing here holds a semantic of its own: every value comes from an op of mutagrad._C (a
view, a reduction, masked_select, a factory).
``install()`` puts the methods on mutagrad.Tensor; the module functions are imported by
mutagrad/__init__.py.
"""

import builtins
import functools
import math
import numbers
import sys
import warnings
import weakref

from mutagrad import _C

_Tensor = _C.Tensor
_DTYPES = {"float32": _C.float32, "float64": _C.float64, "float16": _C.float16,
           "bfloat16": _C.bfloat16, "uint8": _C.uint8, "int8": _C.int8, "int16": _C.int16,
           "int32": _C.int32, "int64": _C.int64, "bool": _C.bool}
_PYTHON_TYPES = {builtins.float: "float64", builtins.int: "int64", builtins.bool: "bool"}


def _dtype_name(dtype):
    """'float32', ... for a mutagrad dtype; TypeError for anything else."""
    if isinstance(dtype, _C.dtype):
        return str(dtype).rsplit(".", 1)[-1]
    raise TypeError(f"expected a mutagrad dtype (mutagrad.float32, ...), got {dtype!r}")


def _as_dtype(dtype, fn):
    """A mutagrad dtype, or one of torch's Python-type spellings (float, int, bool)."""
    if isinstance(dtype, _C.dtype):
        return dtype
    if isinstance(dtype, type) and dtype in _PYTHON_TYPES:
        return _DTYPES[_PYTHON_TYPES[dtype]]
    raise TypeError(f"{fn}(): argument must be a mutagrad dtype (mutagrad.float32, ...), not "
                    f"{type(dtype).__name__}")


# ---- Python protocols ------------------------------------------------------------------------

def _format(self, format_spec):
    """As torch: a 0-d tensor formats its item() (f"{loss:.4f}"); any other tensor goes to
    object.__format__, so only an empty spec works (it gives str(x))."""
    if self.dim() == 0:
        return self.item().__format__(format_spec)
    return object.__format__(self, format_spec)


_cpp_bool = _Tensor.__bool__


def _bool(self):
    """bool(x) of a one-element tensor; torch's RuntimeError for more or no elements."""
    n = self.numel()
    if n == 1:
        return _cpp_bool(self)
    which = "more than one value" if n > 1 else "no values"
    raise RuntimeError(f"Boolean value of Tensor with {which} is ambiguous (the tensor has {n} "
                       "elements); reduce it to one element first, or compare one element")


_cpp_int, _cpp_float = _Tensor.__int__, _Tensor.__float__


def _one_element(self, fn):
    if self.numel() != 1:
        raise ValueError(f"only one element tensors can be converted to Python scalars ({fn}() "
                         f"of a tensor with {self.numel()} elements)")


def _int(self):
    """int(x) of a one-element tensor (truncated); ValueError otherwise, as torch."""
    _one_element(self, "int")
    return _cpp_int(self)


def _float(self):
    """float(x) of a one-element tensor; ValueError otherwise, as torch."""
    _one_element(self, "float")
    return _cpp_float(self)


def _contains(self, element):
    """``element in x``: whether any element of x equals element (a number, or a tensor
    broadcast against x), as torch."""
    if isinstance(element, (_Tensor, numbers.Number)):
        return ((self == element).sum() > 0).item()
    raise RuntimeError("Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                       f"{type(element)}.")


# ---- .data's setter --------------------------------------------------------------------------

_cpp_data = _Tensor.__dict__["data"].fget
# id(issued data tensor) -> (weakref to it, weakref to the tensor it was read from). An entry
# leaves when its data tensor dies; nothing here keeps a tensor alive.
_issued = {}


def _get_data(self):
    """x.data: a tensor sharing x's storage, detached, with its own version counter."""
    data = _cpp_data(self)
    key = id(data)
    _issued[key] = (weakref.ref(data, lambda _, key=key, issued=_issued: issued.pop(key, None)),
                    weakref.ref(self))
    return data


def _same_view(a, b):
    return (a.shape == b.shape and a.stride() == b.stride()
            and a.storage_offset() == b.storage_offset() and a.dtype == b.dtype
            and a.device == b.device)


def _set_data(self, value):
    """``x.data = value``: x takes value's storage, sizes and dtype, keeping x's identity,
    autograd state and version counter (Tensor::set_data in C++, as torch). ``x.data op= ...``
    (x.data -= lr * g) assigns back the tensor x.data returned after writing through x's
    storage, which changes nothing."""
    if not isinstance(value, _Tensor):
        raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
    if value is self:
        return
    entry = _issued.get(id(value))
    if entry is not None and entry[0]() is value and entry[1]() is self and _same_view(value, self):
        return
    # Any other tensor: x takes value's storage, shape and dtype (Tensor::set_data in C++).
    self._set_data(value)


# ---- dtypes: type(), finfo, iinfo, promotion ----------------------------------------------

_LEGACY_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
                 "bfloat16": "BFloat16Tensor", "uint8": "ByteTensor", "int8": "CharTensor",
                 "int16": "ShortTensor", "int32": "IntTensor", "int64": "LongTensor",
                 "bool": "BoolTensor"}
_LEGACY_DTYPES = {v: k for k, v in _LEGACY_NAMES.items()}
# Legacy type names of dtypes mutagrad lacks: a TypeError that says so, not "invalid type".
_LEGACY_MISSING = {"ComplexFloatTensor": "complex64", "ComplexDoubleTensor": "complex128"}


def _legacy_type_name(t):
    prefix = "mutagrad.cuda." if t.is_cuda else "mutagrad."
    return prefix + _LEGACY_NAMES[_dtype_name(t.dtype)]


def _parse_legacy_type(name):
    """'torch.FloatTensor', 'mutagrad.cuda.LongTensor', ... as (dtype, device)."""
    if name in ("torch.Tensor", "mutagrad.Tensor"):  # the default tensor type
        return get_default_dtype(), "cpu"
    for lib in ("torch.", "mutagrad."):
        if name.startswith(lib):
            rest = name[len(lib):]
            device = None
            if rest.startswith("cuda."):
                device, rest = "cuda", rest[len("cuda."):]
            if rest in _LEGACY_DTYPES:
                return _DTYPES[_LEGACY_DTYPES[rest]], device or "cpu"
            if rest in _LEGACY_MISSING:
                raise TypeError(f"{name}: mutagrad has no {_LEGACY_MISSING[rest]} dtype")
    raise ValueError(f"invalid type: {name!r}")


def _type(self, dtype=None, non_blocking=False, **kwargs):
    """x.type(): the legacy type name, 'mutagrad.FloatTensor' (torch says 'torch.FloatTensor';
    mutagrad names its dtypes mutagrad.float32, ...). x.type(dtype) / x.type('torch.DoubleTensor')
    (or 'mutagrad.DoubleTensor', 'torch.cuda.FloatTensor'): x converted, x itself when nothing
    changes, as torch."""
    if kwargs:
        raise TypeError(f"type() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if dtype is None:
        return _legacy_type_name(self)
    if isinstance(dtype, str):
        dtype, device = _parse_legacy_type(dtype)
        return self.to(device, dtype, non_blocking=non_blocking)
    if isinstance(dtype, _C.dtype):
        return self.to(dtype, non_blocking=non_blocking)
    if isinstance(dtype, type):  # torch accepts its tensor classes here; mutagrad has none
        raise ValueError(f"invalid type: {dtype.__name__!r}")
    raise TypeError(f"type(): dtype must be a type, str, or dtype object, not "
                    f"{type(dtype).__name__}")


class finfo:
    """finfo(dtype=mutagrad.float32): the limits of a floating dtype, as torch.finfo: bits, eps,
    max, min, tiny (= smallest_normal), resolution and dtype (its name, a str)."""

    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")

    # bits, mantissa bits (with the hidden one), minimum normal exponent, maximum exponent.
    _FORMATS = {"float32": (32, 24, -126, 127), "float64": (64, 53, -1022, 1023),
                "float16": (16, 11, -14, 15), "bfloat16": (16, 8, -126, 127)}

    def __init__(self, type=None):  # noqa: A002  (torch's parameter name)
        name = _dtype_name(get_default_dtype() if type is None else _as_dtype(type, "finfo"))
        if name not in self._FORMATS:
            raise TypeError("mutagrad.finfo() requires a floating point input type. Use "
                            "mutagrad.iinfo to handle 'mutagrad.finfo'")
        bits, digits, emin, emax = self._FORMATS[name]
        set_ = object.__setattr__
        set_(self, "bits", bits)
        set_(self, "eps", math.ldexp(1.0, 1 - digits))
        set_(self, "max", math.ldexp(2.0 - math.ldexp(1.0, 1 - digits), emax))
        set_(self, "min", -self.max)
        set_(self, "tiny", math.ldexp(1.0, emin))
        set_(self, "smallest_normal", self.tiny)
        # As NumPy and torch: 10 ** -floor(-log10(eps)).
        set_(self, "resolution", 10.0 ** -math.floor(-math.log10(self.eps)))
        set_(self, "dtype", name)

    def __setattr__(self, name, value):
        raise AttributeError(f"finfo.{name} is read-only")

    def __eq__(self, other):
        return isinstance(other, finfo) and self.dtype == other.dtype

    def __hash__(self):
        return hash(("finfo", self.dtype))

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")

    __str__ = __repr__


class iinfo:
    """iinfo(dtype): the limits of an integer dtype, as torch.iinfo: bits, max, min, dtype (its
    name). bool raises TypeError, as torch."""

    __slots__ = ("bits", "max", "min", "dtype")

    _BITS = {"uint8": 8, "int8": 8, "int16": 16, "int32": 32, "int64": 64}

    def __init__(self, type):  # noqa: A002  (torch's parameter name)
        name = _dtype_name(_as_dtype(type, "iinfo"))
        if name == "bool":
            raise TypeError("mutagrad.bool is not supported by mutagrad.iinfo")
        if name not in self._BITS:
            raise TypeError("mutagrad.iinfo() requires an integer input type. Use "
                            "mutagrad.finfo to handle 'mutagrad.iinfo'")
        bits = self._BITS[name]
        unsigned = name == "uint8"
        object.__setattr__(self, "bits", bits)
        object.__setattr__(self, "max", 2 ** bits - 1 if unsigned else 2 ** (bits - 1) - 1)
        object.__setattr__(self, "min", 0 if unsigned else -2 ** (bits - 1))
        object.__setattr__(self, "dtype", name)

    def __setattr__(self, name, value):
        raise AttributeError(f"iinfo.{name} is read-only")

    def __eq__(self, other):
        return isinstance(other, iinfo) and self.dtype == other.dtype

    def __hash__(self):
        return hash(("iinfo", self.dtype))

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"

    __str__ = __repr__


def get_default_dtype():
    """The dtype of floating factories and of Python floats (float32 unless set)."""
    return _C._get_default_dtype()


def set_default_dtype(d):
    """Sets the default floating dtype (float32, float64, float16 or bfloat16): floating
    factories without a dtype, tensors of Python floats, integer true division and the
    float-only ops of integers produce it, as torch's."""
    if not isinstance(d, _C.dtype):
        raise TypeError("invalid dtype object: only floating-point types are supported as the "
                        "default type")
    name = _dtype_name(d)
    if name not in finfo._FORMATS:
        raise TypeError("only floating-point types are supported as the default type")
    _C._set_default_dtype(d)


_promotions = {}


def promote_types(type1, type2):
    """The dtype an op of a type1 tensor and a type2 tensor computes in: read from the module's
    own promotion (an add of two one-element tensors), once per pair."""
    a, b = _as_dtype(type1, "promote_types"), _as_dtype(type2, "promote_types")
    key = (_dtype_name(a), _dtype_name(b))
    if key not in _promotions:
        _promotions[key] = _probe(_C.zeros(1, dtype=a), _C.zeros(1, dtype=b)).dtype
    return _promotions[key]


def _probe(a, b):
    """a + b under no_grad: the dtype the module's arithmetic computes in (bool + bool is bool,
    as torch)."""
    prev = _C.is_grad_enabled()
    _C.set_grad_enabled(False)
    try:
        return a + b
    finally:
        _C.set_grad_enabled(prev)


def _stand_in(x, fn):
    """What result_type needs of an operand: a tensor of x's dtype and dimensionality (0-d
    tensors rank below sized ones), or a Python number of x's kind (numbers rank lowest)."""
    if isinstance(x, _Tensor):
        return _C.zeros(() if x.dim() == 0 else (1,), dtype=x.dtype)
    if isinstance(x, builtins.bool):
        return False
    if isinstance(x, numbers.Integral):
        return 0
    if isinstance(x, numbers.Real):
        return 0.0
    raise TypeError(f"{fn}(): arguments must be Tensors or numbers, got {type(x).__name__}")


def result_type(tensor1, tensor2):
    """The dtype an arithmetic op of the two operands (tensors or numbers) computes in, read from
    the module's own promotion, as torch.result_type."""
    a, b = _stand_in(tensor1, "result_type"), _stand_in(tensor2, "result_type")
    if not isinstance(a, _Tensor) and not isinstance(b, _Tensor):
        # Two numbers: each as the 0-d tensor tensor() makes of it (bool, int64, float32).
        a = _C.tensor(a)
    if not isinstance(a, _Tensor):
        a, b = b, a
    return _probe(a, b).dtype


def can_cast(from_, to):
    """Whether an in-place op may write a from_ result into a to tensor, as torch.can_cast: no
    floating -> integral or bool, no integral -> bool. Read from the module's in-place add."""
    a, b = _as_dtype(from_, "can_cast"), _as_dtype(to, "can_cast")
    key = ("cast", _dtype_name(a), _dtype_name(b))
    if key not in _promotions:
        target = _C.zeros(1, dtype=b)
        try:
            target.add_(_C.zeros(1, dtype=a))
            _promotions[key] = True
        except RuntimeError:
            _promotions[key] = False
    return _promotions[key]


# ---- views: mT, mH, H, T, movedim, swapaxes --------------------------------------------------

def _mT(self):
    """The transpose of the last two dims (a view); a 0-d tensor is returned as is (torch
    1.13); a 1-d tensor raises."""
    if self.dim() == 0:
        return self
    if self.dim() < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. "
                           f"Got {self.dim()}-D tensor.")
    return self.transpose(-2, -1)


def _mH(self):
    """The conjugate transpose of the last two dims: mT, mutagrad having no complex dtype."""
    if self.dim() == 1:
        raise RuntimeError("tensor.mH is only supported on matrices or batches of matrices. "
                           "Got 1-D tensor.")
    return _mT(self)


def _H(self):
    """The conjugate transpose of a matrix (0-d: the tensor itself)."""
    if self.dim() == 0:
        return self
    if self.dim() != 2:
        hint = " For batches of matrices, consider using tensor.mH" if self.dim() > 2 else ""
        raise RuntimeError("tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{self.dim()}-D tensor.{hint}")
    return self.transpose(0, 1)


_cpp_T = _Tensor.__dict__["T"].fget
_warned_T = False


def _T(self):
    """The dims reversed (a permute view). As torch 1.13, on a tensor that is neither 0-d nor
    2-d this is deprecated: a UserWarning, once per process."""
    global _warned_T
    if self.dim() not in (0, 2) and not _warned_T:
        _warned_T = True
        warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse their "
                      "shape is deprecated and it will throw an error in a future release. "
                      "Consider `x.mT` to transpose batches of matrices or `x.permute(*range("
                      "x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor.",
                      UserWarning, stacklevel=2)
    return _cpp_T(self)


def _wrap_dim(d, ndim, fn):
    """d in [-ndim, ndim) (a 0-d tensor counts as 1-d), wrapped to [0, ndim); IndexError
    otherwise, with torch's text."""
    if isinstance(d, builtins.bool) or not isinstance(d, numbers.Integral):
        if isinstance(d, _Tensor):
            d = d.__index__()
        else:
            raise TypeError(f"{fn}(): dims must be ints, got {type(d).__name__}")
    d = builtins.int(d)
    n = builtins.max(ndim, 1)
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {d})")
    return d + n if d < 0 else d


def _dims(arg, fn, name):
    if isinstance(arg, (tuple, list)):
        return list(arg)
    if isinstance(arg, (numbers.Integral, _Tensor)) and not isinstance(arg, builtins.bool):
        return [arg]
    raise TypeError(f"{fn}(): argument '{name}' must be an int or a tuple of ints, not "
                    f"{type(arg).__name__}")


def movedim(input, source, destination):  # noqa: A002  (torch's parameter name)
    """The dims in source moved to the positions in destination (ints or sequences of ints),
    the others kept in order: a permute view, as torch.movedim."""
    src, dst = _dims(source, "movedim", "source"), _dims(destination, "movedim", "destination")
    if isinstance(source, (tuple, list)) != isinstance(destination, (tuple, list)):
        raise TypeError("movedim(): source and destination must both be ints or both be tuples "
                        f"of ints, got {type(source).__name__} and {type(destination).__name__}")
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) "
                           f"should contain the same number of dims as destination ({dst} dims)")
    ndim = input.dim()
    src = [_wrap_dim(d, ndim, "movedim") for d in src]
    dst = [_wrap_dim(d, ndim, "movedim") for d in dst]
    for dims, which in ((src, "source"), (dst, "destination")):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{which}` ({dims})")
    if ndim == 0:
        return input.view(())
    order = [None] * ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(ndim) if d not in set(src))
    order = [next(rest) if o is None else o for o in order]
    return input.permute(order)


moveaxis = movedim


def swapaxes(input, axis0, axis1):  # noqa: A002  (torch's parameter names)
    """transpose(axis0, axis1), NumPy's name."""
    return input.transpose(axis0, axis1)


def swapdims(input, dim0, dim1):  # noqa: A002  (torch's parameter names)
    """transpose(dim0, dim1)."""
    return input.transpose(dim0, dim1)


# ---- nonzero and where(cond) -----------------------------------------------------------------

def nonzero(input, *, as_tuple=False):  # noqa: A002  (torch's parameter name)
    """The coordinates of the nonzero elements of input, in row-major order: an int64
    [count, ndim] tensor, or with as_tuple=True one int64 [count] tensor per dim (a 0-d input
    counts as 1-d there), as torch. Each coordinate is masked_select of an arange along its
    dim, so the result never requires grad."""
    mask = input if input.dtype == _C.bool else input != 0
    ndim = input.dim()
    if ndim == 0:
        if as_tuple:
            return (_C.arange(1, device=input.device).masked_select(mask.reshape(1)),)
        return _C.zeros((builtins.int(mask.item()), 0), dtype=_C.int64, device=input.device)
    mask = mask.detach()
    coords = []
    for d, size in enumerate(input.shape):
        shape = [1] * ndim
        shape[d] = size
        along = _C.arange(size, device=input.device).view(shape).expand(input.shape)
        coords.append(along.masked_select(mask))
    if as_tuple:
        return tuple(coords)
    return _C.stack(coords, dim=1)


_cpp_where = _C.where
_NO_ARG = object()


def where(condition, input=_NO_ARG, other=_NO_ARG):  # noqa: A002  (torch's parameter names)
    """where(cond, x, y): x where cond, else y; x and y tensors or Python numbers (two numbers
    make a tensor of their result type, as torch 1.13). where(cond): cond.nonzero(as_tuple=True)."""
    if input is _NO_ARG and other is _NO_ARG:
        if not isinstance(condition, _Tensor):
            raise TypeError(f"where(): argument 'condition' must be Tensor, not "
                            f"{type(condition).__name__}")
        return nonzero(condition, as_tuple=True)
    if input is _NO_ARG or other is _NO_ARG:
        raise TypeError("where() takes (condition) or (condition, input, other); got "
                        f"{'input' if other is _NO_ARG else 'other'} alone")
    number_x, number_y = _is_number(input), _is_number(other)
    if (isinstance(condition, _Tensor) and (number_x or number_y)
            and (number_x or isinstance(input, _Tensor))
            and (number_y or isinstance(other, _Tensor))):
        # The bindings' where(Tensor, Scalar) computes in the tensor's dtype; torch in the
        # result type of the branches. Where those differ (an integer tensor and a float, a
        # bool tensor and a number; two numbers), the number becomes a 0-d tensor of the result
        # type, which then wins the promotion.
        dtype = result_type(input, other)
        tensor_dtype = None if number_x and number_y else (other if number_x else input).dtype
        if dtype != tensor_dtype:
            device = condition.device if number_x and number_y else (
                other.device if number_x else input.device)
            if number_x:
                input = _C.tensor(input, dtype=dtype, device=device)
            if number_y:
                other = _C.tensor(other, dtype=dtype, device=device)
    return _cpp_where(condition, input, other)


def _is_number(x):
    return isinstance(x, numbers.Number) and not isinstance(x, _Tensor)


def _nonzero_method(self, *, as_tuple=False):
    return nonzero(self, as_tuple=as_tuple)


# ---- factories: as_tensor, new_* -------------------------------------------------------------

def as_tensor(data, dtype=None, device=None):
    """data as a tensor, sharing memory where it can, as torch.as_tensor: a mutagrad tensor of
    the same dtype and device is returned itself (else converted with to(), which is
    differentiable); a NumPy array on the CPU shares its memory (from_numpy) unless a dtype
    conversion is asked for; anything else is copied by tensor()."""
    if isinstance(data, _Tensor):
        return data.to(device=device, dtype=dtype)
    if _is_ndarray(data):
        out = _C.from_numpy(data)
        if dtype is None and device is None:
            return out
        return out.to(device=device, dtype=dtype)
    return _C.tensor(data, dtype=dtype, device=device)


def _is_ndarray(x):
    # Never imports NumPy (optional: Note [NumPy is optional] in python/convert.cc); an array
    # exists only once NumPy is imported.
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, np.ndarray)


def _size_args(fn, args, size):
    """new_zeros(2, 3), new_zeros((2, 3)), new_zeros(size=(2, 3)): the sizes as one argument."""
    if size is not None:
        if args:
            raise TypeError(f"{fn}() got multiple values for argument 'size'")
        return (size,)
    if not args:
        raise TypeError(f'{fn}() missing 1 required positional arguments: "size"')
    return args


def _new_options(self, dtype, device):
    return (self.dtype if dtype is None else dtype), (self.device if device is None else device)


def _new_factory(name):
    make = getattr(_C, name[len("new_"):])

    def method(self, *args, size=None, dtype=None, device=None, requires_grad=False):
        dtype, device = _new_options(self, dtype, device)
        return make(*_size_args(name, args, size), dtype=dtype, device=device,
                    requires_grad=requires_grad)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = (f"x.{name}(*size, dtype=None, device=None, requires_grad=False): "
                      f"mutagrad.{name[len('new_'):]}(*size) with x's dtype and device unless "
                      "given.")
    return method


def _new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    """x.new_full(size, fill_value, ...): full(size, fill_value) with x's dtype and device
    unless given."""
    dtype, device = _new_options(self, dtype, device)
    if isinstance(size, numbers.Integral) and not isinstance(size, _Tensor):
        raise TypeError("new_full(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{type(size).__name__}")
    return _C.full(size, fill_value, dtype=dtype, device=device, requires_grad=requires_grad)


def _new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    """x.new_tensor(data, ...): a copy of data (lists, numbers, arrays, tensors: detached) with
    x's dtype and device unless given."""
    dtype, device = _new_options(self, dtype, device)
    if isinstance(data, _Tensor):
        out = data.detach().to(device=device, dtype=dtype, copy=True)
    else:
        out = _C.tensor(data, dtype=dtype, device=device)
    return out.requires_grad_(True) if requires_grad else out


# ---- NumPy's argument names: axis=, keepdims= -------------------------------------------------

_NUMPY_NAMES = (("axis", "dim"), ("keepdims", "keepdim"))


def _numpy_names(fn, name):
    """fn, also accepting NumPy's axis= for dim= and keepdims= for keepdim=, as torch's argument
    parser does. A TypeError of the renamed call says which names were read as which."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if "axis" not in kwargs and "keepdims" not in kwargs:
            return fn(*args, **kwargs)
        renamed = []
        for numpy_name, torch_name in _NUMPY_NAMES:
            if numpy_name in kwargs:
                if torch_name in kwargs:
                    raise TypeError(f"{name}() got both '{torch_name}' and its NumPy alias "
                                    f"'{numpy_name}'")
                value = kwargs.pop(numpy_name)
                kwargs[torch_name] = value
                renamed.append(f"'{numpy_name}' as '{torch_name}' ({numpy_name}={value!r})")
        try:
            return fn(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{e}\n(NumPy's names, read as torch's: {', '.join(renamed)})") \
                from None

    return wrapper


# Tensor methods and module functions with a dim argument that torch 1.13 also accepts as axis
# (split, flatten, transpose and diagonal have other parameter names; torch refuses axis there).
# The in-place forms (index_add_, scatter_, ...) are left alone: a Python wrapper would be the
# innermost frame when they run, and so the call site a stale-tensor error names
# (python/call_site.cc); accepting axis= there needs the bindings.
_DIM_METHODS = (
    "sum", "mean", "prod", "max", "min", "argmax", "argmin", "squeeze", "unsqueeze", "select",
    "narrow", "unbind", "chunk", "size", "stride", "index_select", "index_add", "index_copy",
    "index_fill", "gather", "scatter", "scatter_add", "scatter_reduce")
# The module functions of _DIM_FUNCTIONS with NumPy's names too; mutagrad/__init__.py exports
# them as sum, mean, ... (named numpy_* here so that this file keeps Python's sum, max, min).
numpy_sum = _numpy_names(_C.sum, "sum")
numpy_mean = _numpy_names(_C.mean, "mean")
numpy_prod = _numpy_names(_C.prod, "prod")
numpy_max = _numpy_names(_C.max, "max")
numpy_min = _numpy_names(_C.min, "min")
numpy_argmax = _numpy_names(_C.argmax, "argmax")
numpy_argmin = _numpy_names(_C.argmin, "argmin")
numpy_cat = _numpy_names(_C.cat, "cat")
numpy_stack = _numpy_names(_C.stack, "stack")
numpy_unbind = _numpy_names(_C.unbind, "unbind")
numpy_chunk = _numpy_names(_C.chunk, "chunk")


def is_floating_point(input):  # noqa: A002  (torch's parameter name)
    """Whether input's dtype is a floating one."""
    if not isinstance(input, _Tensor):
        raise TypeError("is_floating_point(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return input.is_floating_point()


def install():
    """Puts the methods and properties above on mutagrad.Tensor (once)."""
    t = _Tensor
    if getattr(t, "_conveniences_installed", False):
        return
    t.__format__ = _format
    t.__bool__ = _bool
    t.__contains__ = _contains
    t.__int__ = _int
    t.__float__ = _float
    t.data = property(_get_data, _set_data, doc=_set_data.__doc__)
    t.type = _type
    t.mT = property(_mT, doc=_mT.__doc__)
    t.mH = property(_mH, doc=_mH.__doc__)
    t.H = property(_H, doc=_H.__doc__)
    t.T = property(_T, doc=_T.__doc__)
    t.ndimension = lambda self: self.dim()
    t.nelement = lambda self: self.numel()
    t.movedim = movedim
    t.moveaxis = moveaxis
    t.swapaxes = swapaxes
    t.swapdims = swapdims
    t.nonzero = _nonzero_method
    for name in ("new_zeros", "new_ones", "new_empty"):
        setattr(t, name, _new_factory(name))
    t.new_full = _new_full
    t.new_tensor = _new_tensor
    for name in _DIM_METHODS:
        setattr(t, name, _numpy_names(getattr(t, name), name))
    t._conveniences_installed = True
