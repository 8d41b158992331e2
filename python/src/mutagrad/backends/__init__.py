"""mutagrad.backends: settings of the backends, with torch.backends' names (cpu only)."""

from mutagrad.backends import cpu  # noqa: F401
