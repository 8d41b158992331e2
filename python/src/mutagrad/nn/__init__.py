"""mutagrad.nn: modules and parameters (``nn.Module``, ``nn.Linear``, ``nn.Parameter``, ...),
the functional losses and activations (``mutagrad.nn.functional``) and the parameter
initialisers (``mutagrad.nn.init``) with torch's names, signatures and defaults. docs/nn.md says
what each module mutates and when.

    import mutagrad.nn as nn
    import mutagrad.nn.functional as F
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    loss = F.cross_entropy(model(x), labels, label_smoothing=0.1)
"""

from mutagrad.nn import functional, init  # noqa: F401
from mutagrad.nn.parameter import Parameter  # noqa: F401
from mutagrad.nn.modules import (  # noqa: F401
    Module, Identity, Linear, Bilinear, ReLU, LeakyReLU, ELU, GELU, SiLU, Softplus, Tanh,
    Sigmoid, Softmax, LogSoftmax, LayerNorm, GroupNorm, BatchNorm1d, BatchNorm2d, Dropout,
    Dropout2d, Embedding, Sequential, ModuleList, ModuleDict, Flatten, Unflatten,
    CrossEntropyLoss, NLLLoss, MSELoss, L1Loss, SmoothL1Loss, HuberLoss, BCELoss,
    BCEWithLogitsLoss, KLDivLoss)
from mutagrad.nn.modules import (  # noqa: F401
    Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d)
from mutagrad.nn.modules import (  # noqa: F401
    MaxPool1d, MaxPool2d, AvgPool1d, AvgPool2d, AdaptiveAvgPool1d, AdaptiveAvgPool2d,
    AdaptiveMaxPool2d, Unfold, Fold)
from mutagrad.nn import modules  # noqa: F401
from mutagrad.nn import utils  # noqa: F401  (clip_grad_*, parameters_to_vector, ...)
from mutagrad.nn import parallel  # noqa: F401  (DistributedDataParallel; docs/distributed.md)
