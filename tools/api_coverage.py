"""Which common torch names mutagrad lacks (issue 35's goal: at most 3 % missing, none of the
in-place family).

    PYTHONPATH=bazel-bin/python/host_run /usr/bin/python3 tools/api_coverage.py [--check-torch]

TENSOR_NAMES and MODULE_NAMES are fixed lists of names a training or research script reaches
for (torch 1.13), written down once so the figure is comparable over time. Names that other
issues own are left out: nn.Module and layers, save/load, torch.autograd.forward_ad,
torch.func. --check-torch also asserts that every listed name exists in torch.
"""

import sys

# Tensor methods and attributes (152).
TENSOR_NAMES = """
abs abs_ add add_ addcdiv_ addcmul_ addmm all any argmax argmin backward bernoulli_ bmm bool
ceil chunk clamp clamp_ clip clip_ clone contiguous copy_ cos cpu cuda cumsum data_ptr detach
detach_ dim div div_ double eq exp exp_ expand expand_as exponential_ fill_ fill_diagonal_
flatten flip float gather ge gt index_add_ index_copy_ index_fill_ index_put_ index_select int
is_contiguous is_floating_point isnan item le log log_ log_softmax long lt masked_fill
masked_fill_ masked_scatter_ masked_select matmul max mean min mm mul mul_ ne neg new_full
new_ones new_tensor new_zeros nonzero norm normal_ numel numpy permute pow pow_ prod random_
reciprocal register_hook relu relu_ repeat requires_grad_ reshape retain_grad round scatter
scatter_ scatter_add_ select sigmoid sigmoid_ sin size softmax sort split sqrt sqrt_ square
squeeze squeeze_ std stride sub sub_ sum t t_ tanh tanh_ to tolist topk transpose transpose_
type type_as uniform_ unbind unique unsqueeze unsqueeze_ var view view_as where zero_ shape
dtype device grad grad_fn is_leaf requires_grad data ndim
""".split()

# Module-level names (104).
MODULE_NAMES = """
tensor zeros ones empty full arange linspace eye rand randn randint randperm rand_like
randn_like zeros_like ones_like full_like empty_like from_numpy as_tensor cat stack split chunk
reshape squeeze unsqueeze transpose permute flatten where gather index_select masked_select
nonzero sum mean max min argmax argmin std var prod cumsum norm abs exp log sqrt sin cos tanh
sigmoid relu softmax log_softmax clamp clip matmul mm bmm einsum dot outer allclose isclose
equal eq sort argsort topk unique manual_seed no_grad enable_grad set_grad_enabled
is_grad_enabled inference_mode is_tensor numel float32 float64 int64 int32 bool long dtype
device Size Tensor Generator get_default_dtype set_default_dtype set_printoptions bernoulli
multinomial normal meshgrid tril triu flip broadcast_tensors var_mean
""".split()


def missing(module):
    tensor = module.Tensor
    return ([n for n in TENSOR_NAMES if not hasattr(tensor, n)],
            [n for n in MODULE_NAMES if not hasattr(module, n)])


def report(module):
    """(fraction missing, missing Tensor names, missing module names)."""
    tensor_missing, module_missing = missing(module)
    total = len(TENSOR_NAMES) + len(MODULE_NAMES)
    return (len(tensor_missing) + len(module_missing)) / total, tensor_missing, module_missing


def main(argv):
    if "--check-torch" in argv:
        import torch
        tm, mm = missing(torch)
        assert not tm and not mm, f"not torch 1.13 names: {tm} {mm}"
    import mutagrad
    fraction, tm, mm = report(mutagrad)
    print(f"{len(TENSOR_NAMES)} Tensor names, {len(MODULE_NAMES)} module names: "
          f"{100 * fraction:.1f} % missing")
    print("Tensor:", " ".join(tm) or "-")
    print("module:", " ".join(mm) or "-")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
