"""Every backward node has a tangent rule (issue 40: the class of "an op without forward AD").

The test reads the op sources (autograd/ops/*.cc, *.h), lists every backward node name they
define (a string literal such as "ExpBackward0"), and requires each to be either
- in NODES: a program that records that node (checked: its result's grad_fn has that name when
  the input requires grad) and whose forward-mode tangent, on a dual input, equals central
  differences (or is zero, as torch's, for the random ops); or
- in CPP_ONLY: ops not bound in Python, with the C++ test case that checks their tangents; or
- in NOT_OPS: nodes no op's result carries (documented below, each with the reason).
A new node in the sources that is in neither fails test_every_node_is_listed, and a node whose
op lost its tangent rule fails test_node_has_a_tangent (the op raises ForwardADNotImplementedError
naming itself, or gives no tangent, or a wrong one). There is no third list of ops without
forward AD: every op here has a rule (torch 1.13 has one for each of them too).
"""

import os
import re

import pytest

import mutagrad as mg
import mutagrad.autograd.forward_ad as mfw
import mutagrad.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OPS_DIR = os.path.join(HERE, "..", "..", "autograd", "ops")


def node_names_in_sources():
    names = set()
    for name in sorted(os.listdir(OPS_DIR)):
        if name.endswith((".cc", ".h")):
            with open(os.path.join(OPS_DIR, name)) as f:
                names.update(re.findall(r'"([A-Z][A-Za-z0-9]*Backward[0-9]*)"', f.read()))
    return names


def _idx(*v):
    return mg.tensor(list(v))


def _c(x):
    """A clone to write into (the node under test is the write's)."""
    return x.clone()


M = mg.tensor([[True, False, True, True], [False, False, True, False], [True, True, False, True]])

# Node -> fn(x), x a 3x4 float64 tensor in (0.1, 0.9), whose result's grad_fn is that node; or a
# tuple of such programs, the first recording the node, the others its in-place, out-of-place
# and through-a-view forms (checked for their tangents only).
NODES = {
    # Element-wise unary (Note [Element-wise tangents]).
    "AbsBackward0": lambda x: (x - 0.5).abs(),
    "CeilBackward0": lambda x: (x * 3).ceil(),
    "CosBackward0": lambda x: x.cos(),
    "DigammaBackward0": lambda x: x.digamma(),
    "ErfBackward0": lambda x: x.erf(),
    "ErfinvBackward0": lambda x: x.erfinv(),
    "Exp2Backward0": lambda x: x.exp2(),
    "ExpBackward0": lambda x: x.exp(),
    "Expm1Backward0": lambda x: x.expm1(),
    "FloorBackward0": lambda x: (x * 3).floor(),
    "FracBackward0": lambda x: (x * 3).frac(),
    "LgammaBackward0": lambda x: x.lgamma(),
    "Log10Backward0": lambda x: x.log10(),
    "Log1PBackward0": lambda x: x.log1p(),
    "Log2Backward0": lambda x: x.log2(),
    "LogBackward0": lambda x: x.log(),
    "NanToNumBackward0": lambda x: x.nan_to_num(),
    "NegBackward0": lambda x: x.neg(),
    "PolygammaBackward0": lambda x: mg.polygamma(1, x),
    "PolygammaBackward1": lambda x: _c(x).polygamma_(1),
    "ReciprocalBackward0": lambda x: x.reciprocal(),
    "ReluBackward0": lambda x: (x - 0.5).relu(),
    "RoundBackward0": lambda x: (x * 3).round(),
    "RoundBackward1": lambda x: (x * 3).round(decimals=1),
    "RsqrtBackward0": lambda x: x.rsqrt(),
    "SigmoidBackward0": lambda x: x.sigmoid(),
    "SignBackward0": lambda x: (x - 0.5).sign(),
    "SinBackward0": lambda x: x.sin(),
    "SqrtBackward0": lambda x: x.sqrt(),
    "TanBackward0": lambda x: x.tan(),
    "TanhBackward0": lambda x: x.tanh(),
    "TruncBackward0": lambda x: (x * 3).trunc(),
    "ClampBackward0": (lambda x: x.clamp(min=x.flip(0) * 0.9),
                       lambda x: _c(x).clamp_(min=x.flip(0) * 0.9, max=x.flip(1) + 0.1),
                       lambda x: _c(x).t().clamp_(max=x.t().flip(0) * 0.9)),
    "ClampBackward1": lambda x: x.clamp(0.3, 0.7),
    "ClampMaxBackward0": lambda x: x.clamp_max(0.5),
    "ClampMinBackward0": lambda x: x.clamp_min(0.5),
    # Binary.
    "AddBackward0": lambda x: x + x.flip(0),
    "AddBackward1": lambda x: x + 2.0,
    "SubBackward0": lambda x: x - x.flip(1),
    "SubBackward1": lambda x: x - 2.0,
    "RsubBackward1": lambda x: 2.0 - x,
    "MulBackward0": lambda x: x * x.flip(0),
    "MulBackward1": lambda x: x * 3.0,
    "DivBackward0": lambda x: x / x.flip(0),
    "DivBackward1": lambda x: x / 3.0,
    "DivBackward2": lambda x: x.div(x.flip(0) * 0.3, rounding_mode="floor"),
    "DivBackward3": lambda x: x.div(0.3, rounding_mode="trunc"),
    "PowBackward0": lambda x: x.pow(2.5),
    "PowBackward1": lambda x: x.pow(x.flip(0)),
    "PowBackward2": lambda x: mg.pow(2.5, x),
    "Atan2Backward0": lambda x: mg.atan2(x, x.flip(1)),
    "FmodBackward0": lambda x: (x * 3).fmod(0.7),
    "FmodBackward1": lambda x: (x * 3).fmod(x.flip(0) + 0.5),
    "RemainderBackward0": lambda x: (x * 3).remainder(0.7),
    "RemainderBackward1": lambda x: (x * 3).remainder(x.flip(0) + 0.5),
    "MaximumBackward0": lambda x: mg.maximum(x, x.flip(0)),
    "MinimumBackward0": lambda x: mg.minimum(x, x.flip(1)),
    "WhereBackward0": lambda x: mg.where(x > 0.5, x, x.flip(0)),
    "AddcdivBackward0": (lambda x: x.addcdiv(x.flip(0), x.flip(1) + 0.5, value=0.5),
                         lambda x: _c(x).addcdiv_(x.flip(0), x.flip(1) + 0.5, value=0.5),
                         lambda x: _c(x)[1:].addcdiv_(x[:2], x[1:] + 0.5, value=-2.0)),
    "AddcmulBackward0": (lambda x: x.addcmul(x.flip(0), x.flip(1), value=0.5),
                         lambda x: _c(x).addcmul_(x.flip(0), x.flip(1), value=0.5),
                         lambda x: _c(x).t().addcmul_(x.t(), x.t().exp())),
    "LerpBackward0": (lambda x: x.lerp(x.flip(0), 0.3),
                      lambda x: _c(x).lerp_(x.flip(0), 0.3),
                      lambda x: _c(x)[:, 1:].lerp_(x[:, :3].exp(), 0.7)),
    "LerpBackward1": (lambda x: x.lerp(x.flip(0), x.flip(1)),
                      lambda x: _c(x).lerp_(x.flip(0), x.flip(1)),
                      lambda x: _c(x)[1].lerp_(x[0], x[2].sigmoid())),
    # Reductions, scans, products.
    "SumBackward0": lambda x: x.sum(),
    "SumBackward1": lambda x: x.sum(1),
    "MeanBackward0": lambda x: x.mean(),
    "MeanBackward1": lambda x: x.mean(0),
    "ProdBackward0": lambda x: x.prod(),
    "ProdBackward1": lambda x: x.prod(1),
    "MaxBackward0": lambda x: x.max(1)[0],
    "MaxBackward1": lambda x: x.max(),
    "MinBackward0": lambda x: x.min(0)[0],
    "MinBackward1": lambda x: x.min(),
    "AmaxBackward0": lambda x: x.amax(1),
    "AminBackward0": lambda x: x.amin(0),
    "KthvalueBackward0": lambda x: x.kthvalue(2, 1)[0],
    "VarBackward0": lambda x: x.var(1),
    "StdBackward0": lambda x: x.std(),
    "NormBackward1": lambda x: x.norm(2, 1),
    "LogsumexpBackward0": lambda x: x.logsumexp(1),
    "CumsumBackward0": lambda x: x.cumsum(1),
    "CumprodBackward0": lambda x: x.cumprod(0),
    "MmBackward0": lambda x: x.mm(x.t()),
    "MvBackward0": lambda x: x.mv(x[0]),
    "BmmBackward0": lambda x: x.unsqueeze(0).bmm(x.t().unsqueeze(0)),
    "DotBackward0": lambda x: x[0].dot(x[1]),
    "MatmulBackward0": lambda x: x[0].matmul(x.t()),
    "AddmmBackward0": lambda x: mg.addmm(x[:, :3], x, x.t()),
    "TraceBackward0": lambda x: x.trace(),
    "LinalgCrossBackward0": lambda x: mg.cross(x[:, :3], x[:, 1:]),
    "CdistBackward0": lambda x: mg.cdist(x, x.flip(0) * 0.5),
    # Views (set_view_history: the same view of the tangent).
    "AliasBackward0": lambda x: x[...],
    "DiagonalBackward0": lambda x: x.diagonal(),
    "ExpandBackward0": lambda x: x[0].expand(2, 4),
    "PermuteBackward0": lambda x: x.permute(1, 0),
    "ReshapeAliasBackward0": lambda x: x.reshape(2, 6),
    "SelectBackward0": lambda x: x[1],
    "SliceBackward0": lambda x: x[1:],
    "SplitBackward0": lambda x: x.split(2, 1)[1],
    "SplitWithSizesBackward0": lambda x: x.split([1, 3], 1)[1],
    "SqueezeBackward0": lambda x: x.unsqueeze(0).squeeze(),
    "SqueezeBackward1": lambda x: x.unsqueeze(0).squeeze(0),
    "TBackward0": lambda x: x.t(),
    "TransposeBackward0": lambda x: x.transpose(0, 1),
    "UnbindBackward0": lambda x: x.unbind(0)[1],
    "UnfoldBackward0": lambda x: x.unfold(1, 2, 1),
    "UnsafeViewBackward0": lambda x: x.t().reshape(12),
    "UnsqueezeBackward0": lambda x: x.unsqueeze(1),
    "ViewBackward0": lambda x: x.view(4, 3),
    # In-place view ops (the tangent takes the same geometry change).
    "TBackward1": lambda x: _c(x).t_(),
    "TransposeBackward1": lambda x: _c(x).transpose_(0, 1),
    "UnsqueezeBackward1": lambda x: _c(x).unsqueeze_(0),
    "SqueezeBackward2": lambda x: _c(x).unsqueeze_(0).squeeze_(),
    "SqueezeBackward3": lambda x: _c(x).unsqueeze_(0).squeeze_(0),
    "AsStridedBackward1": lambda x: _c(x).as_strided_((2, 3), (1, 2), 1),
    # Copies and joins.
    "CloneBackward0": lambda x: x.clone(),
    "ToCopyBackward0": lambda x: x.to(mg.float32),
    "CatBackward0": lambda x: mg.cat([x, x * 2], 1),
    "StackBackward0": lambda x: mg.stack([x, x * 2]),
    "RepeatBackward0": lambda x: x.repeat(2, 1),
    "FlipBackward0": lambda x: x.flip(0),
    "RollBackward0": lambda x: x.roll(1, 1),
    "TrilBackward0": (lambda x: x.tril(), lambda x: _c(x).tril_(-1),
                      lambda x: _c(x).t().tril_()),
    "TriuBackward0": (lambda x: _c(x).triu_(1), lambda x: x.triu(), lambda x: _c(x)[1:].triu_()),
    "DiagBackward0": lambda x: x[0].diag(),
    "DiagEmbedBackward0": lambda x: mg.diag_embed(x),
    "SortBackward0": lambda x: x.sort(1)[0],
    "SortBackward1": lambda x: x.sort(1, stable=True)[0],
    "TopkBackward0": lambda x: x.topk(2, 1)[0],
    # Indexing and the write family.
    "IndexBackward0": lambda x: x[_idx(2, 0)],
    "IndexPutBackward0": lambda x: _c(x).index_put_((_idx(2, 0),), x[:2].flip(0), True),
    "IndexSelectBackward0": lambda x: x.index_select(1, _idx(3, 0, 3)),
    "GatherBackward0": lambda x: x.gather(1, mg.tensor([[0, 3], [1, 1], [2, 0]])),
    "TakeBackward0": lambda x: x.take(_idx(0, 11, 5)),
    "PutBackward0": (lambda x: _c(x).put_(_idx(1, 5, 1), x[0, :3].exp()),
                     lambda x: _c(x).t().put_(_idx(1, 5, 1), x[0, :3].exp(), accumulate=True),
                     lambda x: x.put(_idx(1, 5, 1), x[0, :3].exp()),
                     lambda x: mg.zeros(3, 4, dtype=mg.float64).put_(_idx(0, 11), x[1, :2])),
    "MaskedSelectBackward0": lambda x: x.masked_select(M),
    "MaskedScatterBackward0": (lambda x: _c(x).masked_scatter_(M, x.exp()),
                               lambda x: _c(x).t().masked_scatter_(M.t(), x.exp()),
                               lambda x: x.masked_scatter(M, x.flip(0))),
    "MaskedFillBackward0": (lambda x: _c(x).masked_fill_(M, 0.5),
                            # fill_diagonal_ (composite: a fill or a masked fill of a view).
                            lambda x: (x * 2).fill_diagonal_(0.5),
                            lambda x: (x * 2).reshape(6, 2).fill_diagonal_(0.5, wrap=True),
                            lambda x: (x * 2).reshape(2, 6).t().fill_diagonal_(0.5, wrap=True)),
    "MaskedFillBackward1": lambda x: _c(x).masked_fill_(M, x[0, 0] * 2),
    "FillBackward0": lambda x: _c(x).fill_(0.5),
    "FillBackward1": lambda x: _c(x).fill_(x[0, 1] * 2),
    "ZeroBackward0": lambda x: _c(x).zero_(),
    "IndexAddBackward0": lambda x: _c(x).index_add_(0, _idx(2, 0), x[:2] * 3, alpha=0.5),
    "IndexCopyBackward0": lambda x: _c(x).index_copy_(0, _idx(2, 0), x[:2].exp()),
    "IndexFillBackward0": lambda x: _c(x).index_fill_(1, _idx(1), 2.0),
    "IndexFillBackward1": lambda x: _c(x).index_fill_(1, _idx(1), x[0, 0] * 3),
    "ScatterBackward0": lambda x: _c(x).scatter_(0, mg.tensor([[1, 0, 2, 1]]), x[:1].exp()),
    "ScatterBackward1": lambda x: _c(x).scatter_(0, mg.tensor([[1, 0, 2, 1]]), 0.5),
    "ScatterAddBackward0": lambda x: _c(x).scatter_add_(0, mg.tensor([[1, 0, 1, 1]]), x[:1]),
    "ScatterReduceBackward0": lambda x: x.scatter_reduce(0, mg.tensor([[2, 0, 1, 1]]), x[:1] * 3,
                                                         "prod"),
    # Random ops: zero tangents (ZERO below).
    "BernoulliBackward0": lambda x: mg.bernoulli(x),
    "BernoulliBackward1": lambda x: _c(x).bernoulli_(x.detach() * 0.5),
    "BernoulliBackward2": lambda x: _c(x).bernoulli_(0.3),
    "ExponentialBackward0": lambda x: _c(x).exponential_(),
    "NormalBackward0": lambda x: _c(x).normal_(),
    "NormalBackward1": lambda x: mg.normal(x, 2.0),
    "NormalBackward2": lambda x: mg.normal(1.0, x),
    "NormalBackward3": lambda x: mg.normal(x, x.flip(0)),
    "RandomBackward0": lambda x: _c(x).random_(0, 5),
    "RandomBackward1": lambda x: _c(x).random_(7),
    "RandomBackward2": lambda x: _c(x).random_(),
    "UniformBackward0": lambda x: _c(x).uniform_(),
    # nn functional.
    "SoftmaxBackward0": lambda x: x.softmax(1),
    "LogSoftmaxBackward0": lambda x: x.log_softmax(0),
    "GeluBackward0": lambda x: F.gelu(x),
    "SiluBackward0": lambda x: F.silu(x),
    "EluBackward0": lambda x: F.elu(x - 0.5),
    "EluBackward1": lambda x: F.elu(_c(x) - 0.5, inplace=True),
    "LeakyReluBackward0": lambda x: F.leaky_relu(x - 0.5, 0.1),
    "LeakyReluBackward1": lambda x: F.leaky_relu(_c(x) - 0.5, 0.1, inplace=True),
    "SoftplusBackward0": lambda x: F.softplus(x, 2.0),
    "NativeLayerNormBackward0": lambda x: F.layer_norm(x, (4,)),
    "NativeGroupNormBackward0": lambda x: F.group_norm(x.reshape(1, 4, 3), 2),
    "NativeBatchNormBackward0": lambda x: F.batch_norm(x, None, None, training=True),
    "EmbeddingBackward0": lambda x: F.embedding(_idx(2, 0, 2), x),
    "ConstantPadNdBackward0": lambda x: F.pad(x, (1, 2)),
    "ReflectionPad1DBackward0": lambda x: F.pad(x, (2, 1), "reflect"),
    "ReflectionPad2DBackward0": lambda x: F.pad(x.unsqueeze(0), (1, 1, 1, 1), "reflect"),
    "ReflectionPad3DBackward0": lambda x: F.pad(x.reshape(1, 1, 1, 3, 4), (1, 1, 1, 1, 0, 0),
                                                "reflect"),
    "ReplicationPad1DBackward0": lambda x: F.pad(x, (2, 1), "replicate"),
    "ReplicationPad2DBackward0": lambda x: F.pad(x.unsqueeze(0), (1, 1, 1, 1), "replicate"),
    "ReplicationPad3DBackward0": lambda x: F.pad(x.reshape(1, 1, 1, 3, 4), (1, 1, 1, 1, 1, 1),
                                                 "replicate"),
    "MseLossBackward0": lambda x: F.mse_loss(x, x.flip(0)),
    "HuberLossBackward0": lambda x: F.huber_loss(x, x.flip(0), delta=0.2),
    "SmoothL1LossBackward0": lambda x: F.smooth_l1_loss(x, x.flip(0), beta=0.2),
    "BinaryCrossEntropyBackward0": lambda x: F.binary_cross_entropy(x, x.flip(0)),
    "BinaryCrossEntropyWithLogitsBackward0": lambda x: F.binary_cross_entropy_with_logits(
        x, x.flip(1)),
    "NllLossBackward0": lambda x: F.nll_loss(x.log(), _idx(3, 0, 1)),
    "NllLoss2DBackward0": lambda x: F.nll_loss(x.reshape(1, 3, 2, 2).log(),
                                               mg.tensor([[[0, 2], [1, 1]]])),
    "ConvolutionBackward0": lambda x: F.conv2d(x.reshape(1, 1, 3, 4), x[:2, :2].reshape(
        1, 1, 2, 2), padding=1),
    "MaxPool2DWithIndicesBackward0": lambda x: F.max_pool2d(x.reshape(1, 3, 4), 2),
    "AdaptiveMaxPool2DBackward0": lambda x: F.adaptive_max_pool2d(x.reshape(1, 3, 4), (2, 2)),
    "AvgPool2DBackward0": lambda x: F.avg_pool2d(x.reshape(1, 3, 4), 2, 1),
    "AdaptiveAvgPool2DBackward0": lambda x: F.adaptive_avg_pool2d(x.reshape(1, 3, 4), (2, 3)),
    "Im2ColBackward0": lambda x: F.unfold(x.reshape(1, 1, 3, 4), (2, 2)),
    "Col2ImBackward0": lambda x: F.fold(x, (3, 4), (3, 1)),
}

# Ops not bound in Python: the C++ test case of tests/autograd/forward_ad_ops_test.cc that checks
# each one's tangent (against central differences and the double vjp, on both devices).
CPP_ONLY = {
    "AsStridedBackward0": "ForwardAdOps.Views/as_strided",
    "AsStridedScatterBackward0": "ForwardAdOps.Views/as_strided_scatter",
}

# How Python shows a C++ node (python/bindings_print.cc: a number operand from Python records
# the Scalar overload's node, shown under torch's tensor-tensor name; fill_'s in-place names).
SHOWN = {
    "AddBackward1": "AddBackward0",
    "SubBackward1": "SubBackward0",
    "MulBackward1": "MulBackward0",
    "DivBackward1": "DivBackward0",
    "PowBackward2": "PowBackward1",
    "FillBackward0": "FillBackward2",
    "FillBackward1": "FillBackward3",
}

# Nodes no op result carries, with why.
NOT_OPS = {
    # The double backward of a convolution (recorded by the backward of ConvolutionBackward0
    # under create_graph): its tangents are checked by forward-over-reverse HVPs of a CNN in
    # conv_second_order_test.py.
    "ConvolutionBackwardBackward0",
    # The double backward of the poolings (recorded by their backward under create_graph): their
    # tangents are checked against torch's HVPs in
    # pooling_test.py::test_backward_nodes_and_their_tangents_match_torch.
    "MaxPool2DWithIndicesBackwardBackward0",
    "AdaptiveMaxPool2DBackwardBackward0",
    "AvgPool2DBackwardBackward0",
    "AdaptiveAvgPool2DBackwardBackward0",
}

# Random ops: torch treats samples as constants of their inputs, so the tangent is zero.
ZERO = {n for n in NODES if n.startswith(("Bernoulli", "Exponential", "Normal", "Random",
                                          "Uniform"))}


# Central-difference steps other than 1e-6: a float32 result needs a larger one (linear op).
EPS = {"ToCopyBackward0": 1e-2}


def test_every_node_is_listed():
    found = node_names_in_sources()
    assert len(found) > 150, sorted(found)  # the scan found the sources
    unlisted = sorted(found - set(NODES) - set(CPP_ONLY) - NOT_OPS)
    assert not unlisted, ("backward nodes without a tangent rule listed here: give each a "
                          "tangent formula and an entry in NODES", unlisted)
    stale = sorted((set(NODES) | set(CPP_ONLY) | NOT_OPS) - found)
    assert not stale, ("listed nodes that no source names any more", stale)


def _input():
    g = mg.Generator().manual_seed(3)
    return mg.rand(3, 4, dtype=mg.float64, generator=g) * 0.8 + 0.1


def _output(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def _programs():
    for node in sorted(NODES):
        fns = NODES[node] if isinstance(NODES[node], tuple) else (NODES[node],)
        for i in range(len(fns)):
            yield node, i


@pytest.mark.parametrize("node,i", list(_programs()))
def test_node_has_a_tangent(node, i):
    fns = NODES[node] if isinstance(NODES[node], tuple) else (NODES[node],)
    fn = fns[i]
    x = _input()
    v = mg.rand(3, 4, dtype=mg.float64, generator=mg.Generator().manual_seed(4)) - 0.5
    if i == 0:  # the program records the node it stands for
        leaf = x.clone().requires_grad_()
        assert _output(fn(leaf)).grad_fn.name() == SHOWN.get(node, node)
    # Its forward-mode tangent.
    with mfw.dual_level():
        mg.manual_seed(0)
        primal, tangent = mfw.unpack_dual(_output(fn(mfw.make_dual(x, v))))
    assert tangent is not None, f"{node}: a dual input gave no tangent"
    assert tangent.shape == primal.shape
    if node in ZERO:
        assert tangent.abs().max().item() == 0.0
        return
    eps = EPS.get(node, 1e-6)
    with mg.no_grad():
        mg.manual_seed(0)
        plus = _output(fn(x + v * eps)).double()
        mg.manual_seed(0)
        minus = _output(fn(x - v * eps)).double()
    numeric = (plus - minus) / (2 * eps)
    assert mg.allclose(tangent.double(), numeric, rtol=1e-4, atol=1e-5), (tangent, numeric)
