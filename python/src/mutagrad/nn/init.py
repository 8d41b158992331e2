"""mutagrad.nn.init: torch.nn.init's initialisers. Each is one in-place write (one version bump,
recorded with the caller's line) under no_grad, drawing from mutagrad's default generator
(seeded by mutagrad.manual_seed); the numbers differ from torch's, the distributions match.

    w = mutagrad.empty(128, 64, requires_grad=True)
    mutagrad.nn.init.kaiming_uniform_(w, a=math.sqrt(5))
"""

from mutagrad._C._nn import (  # noqa: F401  (re-exported API)
    uniform_,
    normal_,
    zeros_,
    ones_,
    kaiming_uniform_,
    xavier_uniform_,
    calculate_gain,
    _calculate_fan_in_and_fan_out,
)
