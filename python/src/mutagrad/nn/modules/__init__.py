"""The modules of mutagrad.nn, one file per family as torch.nn.modules."""

from mutagrad.nn.modules.module import Module  # noqa: F401
from mutagrad.nn.modules.linear import Identity, Linear, Bilinear  # noqa: F401
from mutagrad.nn.modules.activation import (  # noqa: F401
    ReLU, LeakyReLU, ELU, GELU, SiLU, Softplus, Tanh, Sigmoid, Softmax, LogSoftmax)
from mutagrad.nn.modules.normalization import LayerNorm, GroupNorm  # noqa: F401
from mutagrad.nn.modules.conv import (  # noqa: F401
    Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d)
from mutagrad.nn.modules.batchnorm import BatchNorm1d, BatchNorm2d  # noqa: F401
from mutagrad.nn.modules.dropout import Dropout, Dropout2d  # noqa: F401
from mutagrad.nn.modules.sparse import Embedding  # noqa: F401
from mutagrad.nn.modules.container import Sequential, ModuleList, ModuleDict  # noqa: F401
from mutagrad.nn.modules.flatten import Flatten, Unflatten  # noqa: F401
from mutagrad.nn.modules.loss import (  # noqa: F401
    CrossEntropyLoss, NLLLoss, MSELoss, L1Loss, SmoothL1Loss, HuberLoss, BCELoss,
    BCEWithLogitsLoss, KLDivLoss)
from mutagrad.nn.modules.pooling import (  # noqa: F401
    MaxPool1d, MaxPool2d, AvgPool1d, AvgPool2d, AdaptiveAvgPool1d, AdaptiveAvgPool2d,
    AdaptiveMaxPool2d, Unfold, Fold)
