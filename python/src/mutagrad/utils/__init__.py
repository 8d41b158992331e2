"""mutagrad.utils: torch.utils's data loading (mutagrad.utils.data)."""

from mutagrad.utils import data  # noqa: F401
