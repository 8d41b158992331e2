"""PyTorch oracle for the indexing differential test (torch_differential_test.cc).

Generates seeded random index expressions, evaluates each with PyTorch 1.13, and writes one
case per block to the output file: the tensor, the index list, the value (for a set), and
what PyTorch gave (the result / the tensor after the write, or the error kind).

    /usr/bin/python3 tests/indexing/torch_oracle.py --seed 1 --count 3000 --out cases.txt

Where mutagrad deliberately differs from PyTorch 1.13 (docs/indexing.md), the oracle applies
our rule before asking torch, so every case has one expected outcome:
  * int32 index tensors are accepted (torch 1.13 rejects them): they are given to torch as int64;
  * a set with a lone bool is given to torch bare (x[True] = v), as C++'s {true} is torch's
    C++ set_item with {true}, a basic write;
  * a k-dim mask covers k dims (later PyTorch; 1.13 moved its dim pointer by one): torch is
    given the mask's k nonzero() columns instead (see torch_index());
  * on error, the strong guarantee is checked by the C++ side (torch may have written).

File format (whitespace separated tokens, one case per block):
  case <id> <get|set|put>
  x <dtype> <ndim> <base sizes...> <perm...>       x = arange(numel).view(base).permute(perm)
  indices <n>
    none | ellipsis | int <v> | bool <0|1> | slice <start|_> <stop|_> <step|_>
    | tensor <dtype> <ndim> <sizes...> <values...>
  accumulate <0|1>                                          (put only: x.index_put_)
  value scalar <int> | value tensor <dtype> <ndim> <sizes...> <values...>   (set, put)
  error <IndexError|ValueError|RuntimeError>
  | result <is_view 0|1> <ndim> <sizes...> <values...>      (get: x[indices])
  | after <values...>                                       (set, put: x after, row-major)
  end
"""

import argparse
import random
import sys

import torch

DTYPES = {"float64": torch.float64, "float32": torch.float32, "int64": torch.int64,
          "int32": torch.int32, "bool": torch.bool}
NAMES = {v: k for k, v in DTYPES.items()}


def fmt_values(t):
    return " ".join(str(int(v)) for v in t.reshape(-1).tolist())


def fmt_tensor(t):
    return "%s %d %s %s" % (NAMES[t.dtype], t.dim(), " ".join(str(s) for s in t.shape),
                             fmt_values(t))


class Gen:
    def __init__(self, rng):
        self.r = rng

    def sizes(self, ndim):
        return [self.r.choice([0, 1, 2, 3, 3, 4, 4, 5]) if self.r.random() < 0.08
                else self.r.randint(1, 4) for _ in range(ndim)]

    def make_x(self):
        ndim = self.r.choice([0, 1, 1, 2, 2, 2, 3, 3, 3, 4])
        base = self.sizes(ndim)
        perm = list(range(ndim))
        if self.r.random() < 0.3:
            self.r.shuffle(perm)
        dtype = self.r.choice(["float64", "float64", "float32", "int64", "int32", "bool"])
        numel = 1
        for s in base:
            numel *= s
        x = torch.arange(numel).to(DTYPES[dtype]).view(base).permute(perm)
        desc = "x %s %d %s %s" % (dtype, ndim, " ".join(map(str, base)), " ".join(map(str, perm)))
        return x, desc

    def index_tensor(self, size, bshape, dtype):
        # Mostly the common broadcast shape (or a broadcastable form of it), sometimes not.
        shape = list(bshape)
        if shape and self.r.random() < 0.25:
            shape = [1 if self.r.random() < 0.5 else s for s in shape]
        if shape and self.r.random() < 0.2:
            shape = shape[1:]
        if self.r.random() < 0.05:
            shape = [self.r.randint(0, 4)]
        lo, hi = (-size, size - 1) if size > 0 else (0, 0)
        n = 1
        for s in shape:
            n *= s
        vals = []
        for _ in range(n):
            if self.r.random() < 0.03 or size == 0:
                vals.append(self.r.choice([size, -size - 1, size + 2]))
            else:
                vals.append(self.r.randint(lo, hi))
        return torch.tensor(vals, dtype=DTYPES[dtype]).view(shape)

    def mask(self, sizes):
        shape = list(sizes)
        if self.r.random() < 0.08:
            shape = [s + 1 for s in shape] if shape else [2]
        p = self.r.random()
        return torch.rand(shape, generator=self.torch_gen) < p

    def index_list(self, x):
        # Mostly as many dim-consuming entries as x has dims (or fewer), plus a few that
        # consume none; sometimes one too many (an error case).
        ndim = x.dim()
        consuming = self.r.randint(0, ndim) + (1 if self.r.random() < 0.06 else 0)
        kinds = []
        for _ in range(consuming):
            kinds.append(self.r.choices(
                ["int", "slice", "tensor", "mask", "int0", "int32"],
                weights=[14, 18, 16, 6, 3, 3])[0])
        for _ in range(self.r.choice([0, 0, 0, 1, 1, 2])):
            kinds.insert(self.r.randint(0, len(kinds)),
                         self.r.choices(["none", "ellipsis", "bool", "bool0"],
                                        weights=[6, 6, 3, 2])[0])
        if kinds.count("ellipsis") > 1 and self.r.random() < 0.7:
            first = kinds.index("ellipsis")
            kinds = [k if k != "ellipsis" or i == first else "slice" for i, k in enumerate(kinds)]
        mask_dims = {}
        for i, k in enumerate(kinds):
            if k == "mask":
                mask_dims[i] = self.r.randint(0 if self.r.random() < 0.05 else 1, 2)
        specified = sum(1 for k in kinds if k in ("int", "slice", "tensor", "int0", "int32"))
        specified += sum(mask_dims.values())
        bshape = [self.r.randint(0, 3) if self.r.random() < 0.1 else self.r.randint(1, 3)
                  for _ in range(self.r.choice([1, 1, 1, 2]))]
        pos = 0
        out = []  # (python index, description)

        def size_at(p):
            return x.shape[p] if p < ndim else 3

        for i, k in enumerate(kinds):
            if k == "int":
                size = size_at(pos)
                if self.r.random() < 0.05 or size == 0:
                    v = self.r.choice([size, -size - 1, size + 3])
                else:
                    v = self.r.randint(-size, size - 1)
                out.append((v, "int %d" % v))
                pos += 1
            elif k == "int0":
                size = size_at(pos)
                v = self.r.randint(-size, size - 1) if size > 0 else 0
                t = torch.tensor(v)
                out.append((t, "tensor " + fmt_tensor(t)))
                pos += 1
            elif k == "slice":
                def bound():
                    return None if self.r.random() < 0.4 else self.r.randint(-6, 6)
                start, stop = bound(), bound()
                step = self.r.choice([None, None, 1, 2, 3])
                if self.r.random() < 0.02:
                    step = self.r.choice([0, -1])
                out.append((slice(start, stop, step), "slice %s %s %s" % tuple(
                    "_" if b is None else str(b) for b in (start, stop, step))))
                pos += 1
            elif k == "none":
                out.append((None, "none"))
            elif k == "ellipsis":
                out.append((Ellipsis, "ellipsis"))
                pos += max(0, ndim - specified)
            elif k == "bool":
                b = self.r.random() < 0.75
                out.append((b, "bool %d" % b))
            elif k == "bool0":
                t = torch.tensor(self.r.random() < 0.75)
                out.append((t, "tensor " + fmt_tensor(t)))
            elif k in ("tensor", "int32"):
                t = self.index_tensor(size_at(pos), bshape, "int64" if k == "tensor" else "int32")
                out.append((t.to(torch.int64), "tensor " + fmt_tensor(t)))
                pos += 1
            elif k == "mask":
                kd = mask_dims[i]
                want = [size_at(pos + j) for j in range(kd)]
                m = self.mask(want)
                # Whether the mask matches the dims it covers (a k-dim mask covers k dims).
                valid = pos + kd <= ndim and list(m.shape) == want
                out.append((m, "tensor " + fmt_tensor(m), (valid, want)))
                pos += kd
        return out

    def value(self, x, index):
        """A value for x[index] = value: a scalar or a tensor shaped like the result."""
        if self.r.random() < 0.3:
            v = self.r.randint(-50, 50)
            return v, "value scalar %d" % v
        try:
            shape = list(x[index].shape)
        except Exception:  # an error case: any shape
            shape = self.sizes(self.r.randint(0, 2))
        r = self.r.random()
        if r < 0.15 and shape:
            shape = shape[self.r.randint(0, len(shape)):]  # fewer (trailing) dims
        elif r < 0.3:
            shape = [1] * self.r.randint(1, 2) + shape  # leading ones
        elif r < 0.45 and shape:
            shape = [1 if self.r.random() < 0.5 else s for s in shape]
        elif r < 0.5:
            shape = self.sizes(self.r.randint(0, 3))  # most likely incompatible
        dtype = self.r.choice(["float64", "float32", "int64", "int32"])
        n = 1
        for s in shape:
            n *= s
        t = torch.tensor([self.r.randint(-50, 50) for _ in range(n)], dtype=DTYPES[dtype])
        t = t.view(shape)
        return t, "value tensor " + fmt_tensor(t)


def put_case(gen, x):
    """x.index_put_(indices, values, accumulate): a list of index tensors and masks only."""
    r = gen.r
    ndim = x.dim()
    k = r.randint(1, max(1, ndim)) if ndim > 0 else 1
    if r.random() < 0.05:
        k += 1  # too many
    bshape = [r.randint(0, 3) if r.random() < 0.1 else r.randint(1, 3)
              for _ in range(r.choice([1, 1, 2]))]
    pos = 0
    index, descs = [], []
    for _ in range(k):
        size = x.shape[pos] if pos < ndim else 3
        kind = r.choices(["tensor", "int32", "mask"], weights=[7, 1, 2])[0]
        if kind == "mask":
            kd = r.randint(1, 2)
            m = gen.mask([x.shape[pos + j] if pos + j < ndim else 2 for j in range(kd)])
            index.append(m)
            descs.append("tensor " + fmt_tensor(m))
            pos += kd
        else:
            t = gen.index_tensor(size, bshape, "int64" if kind == "tensor" else "int32")
            index.append(t.to(torch.int64))
            descs.append("tensor " + fmt_tensor(t))
            pos += 1
    accumulate = r.random() < 0.5
    value, vdesc = gen.value(x, tuple(index))
    if not isinstance(value, torch.Tensor):
        value = torch.tensor(value)
        vdesc = "value tensor " + fmt_tensor(value)
    if r.random() < 0.9:
        value = value.to(x.dtype)
        vdesc = "value tensor " + fmt_tensor(value)
    lines = ["indices %d" % len(index)] + descs + ["accumulate %d" % accumulate, vdesc]
    try:
        x.index_put_(tuple(index), value, accumulate=accumulate)
        lines.append("after " + fmt_values(x))
    except Exception as e:  # noqa: BLE001
        lines.append("error " + error_kind(e))
    return lines


def torch_index(entries):
    """The index tuple to give torch 1.13 for our semantics, and whether a mask is invalid.

    A k-dim mask covers k dims, which is what indexing with its k nonzero() columns does in
    torch 1.13 (whose own dim pointer moved by one dim per mask). An invalid mask is replaced
    by a valid all-false one: torch then shows whether an error of the slicing phase comes
    first; otherwise ours is the mask's IndexError.
    """
    index = []
    invalid = False
    for e in entries:
        if len(e) == 3 and e[0].dim() > 0:
            valid, want = e[2]
            if valid:
                index.extend(e[0].nonzero().unbind(1))
            else:
                invalid = True
                index.append(torch.zeros(want, dtype=torch.bool))
        else:
            index.append(e[0])
    return tuple(index), invalid


def error_kind(e, invalid_mask=False):
    if invalid_mask and not isinstance(e, ValueError):
        return "IndexError"  # the mask check comes before the value checks
    if isinstance(e, IndexError):
        return "IndexError"
    if isinstance(e, ValueError):
        return "ValueError"
    return "RuntimeError"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    gen = Gen(rng)
    gen.torch_gen = torch.Generator().manual_seed(args.seed)
    lines = []
    for case in range(args.count):
        kind = ("get", "set", "put")[case % 3]
        x, xdesc = gen.make_x()
        if kind == "put":
            while x.dtype == torch.bool:  # accumulate on bool is not compared
                x, xdesc = gen.make_x()
            lines.append("case %d %s" % (case, kind))
            lines.append(xdesc)
            lines.extend(put_case(gen, x))
            lines.append("end")
            continue
        entries = gen.index_list(x)
        index, invalid_mask = torch_index(entries)
        lines.append("case %d %s" % (case, kind))
        lines.append(xdesc)
        lines.append("indices %d" % len(entries))
        lines.extend(e[1] for e in entries)
        if kind == "get":
            try:
                r = x[index]
                if invalid_mask:
                    raise IndexError("the mask does not match the dims it covers")
                lines.append("result %d %d %s %s" % (int(r._is_view()), r.dim(),
                                                      " ".join(map(str, r.shape)), fmt_values(r)))
            except Exception as e:  # noqa: BLE001 - every error kind is an outcome
                lines.append("error " + error_kind(e, invalid_mask))
        else:
            value, vdesc = gen.value(x, index)
            # Mostly x's dtype; else torch's rule: a basic write (and a mask with one element)
            # converts, an advanced one refuses another dtype.
            if isinstance(value, torch.Tensor) and gen.r.random() < 0.8:
                value = value.to(x.dtype)
                vdesc = "value tensor " + fmt_tensor(value)
            lines.append(vdesc)
            # C++'s lone {true} / {false} is torch's bare x[True] / x[False], not (True,).
            if len(index) == 1 and isinstance(index[0], bool):
                index = index[0]
            try:
                x[index] = value
                if invalid_mask:
                    raise IndexError("the mask does not match the dims it covers")
                lines.append("after " + fmt_values(x))
            except Exception as e:  # noqa: BLE001
                lines.append("error " + error_kind(e, invalid_mask))
        lines.append("end")
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
