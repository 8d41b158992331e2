"""mutagrad.nn: the functional losses and activations (``mutagrad.nn.functional``) and the
parameter initialisers (``mutagrad.nn.init``) with torch's names, signatures and defaults.

    import mutagrad.nn.functional as F
    loss = F.cross_entropy(logits, labels, label_smoothing=0.1)
"""

from mutagrad.nn import functional, init  # noqa: F401
from mutagrad.nn import utils  # noqa: F401  (clip_grad_norm_, clip_grad_value_)
from mutagrad.nn import parallel  # noqa: F401  (DistributedDataParallel; docs/distributed.md)
