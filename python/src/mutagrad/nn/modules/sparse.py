"""Embedding (torch.nn's): a lookup table of num_embeddings rows.

What it mutates (docs/nn.md): with max_norm, forward first renormalises, in place, the rows it
looks up whose norm exceeds max_norm (one tracked write of the weight, as torch's
embedding_renorm_): a graph that saved the weight before (e.g. a tied output projection's
matmul) is then refused at backward. The row at
padding_idx is zeroed at construction and gets no gradient.
"""

import mutagrad
from mutagrad.nn import functional as F
from mutagrad.nn import init
from mutagrad.nn.modules.module import Module
from mutagrad.nn.parameter import Parameter

__all__ = ["Embedding"]


class EmbeddingArgumentError(ValueError, AssertionError):
    """A bad Embedding argument: a ValueError, and an AssertionError as torch raises."""


class Embedding(Module):
    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 device=None, dtype=None):
        super().__init__()
        if sparse:
            raise NotImplementedError("Embedding(sparse=True): mutagrad has no sparse "
                                      "gradients; use sparse=False")
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise EmbeddingArgumentError(
                    f"Padding_idx must be within num_embeddings: got padding_idx={padding_idx} "
                    f"for num_embeddings={num_embeddings}; pass one in [{-num_embeddings}, "
                    f"{num_embeddings - 1}] or None")
            if padding_idx < 0:
                padding_idx = num_embeddings + padding_idx
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            self.weight = Parameter(mutagrad.empty(num_embeddings, embedding_dim, device=device,
                                                   dtype=dtype))
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise EmbeddingArgumentError(
                    "Shape of weight does not match num_embeddings and embedding_dim: got "
                    f"{list(_weight.shape)}, expected {[num_embeddings, embedding_dim]}")
            self.weight = Parameter(_weight)

    def reset_parameters(self):
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self):
        if self.padding_idx is not None:
            with mutagrad.no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None,
                        norm_type=2.0, scale_grad_by_freq=False, sparse=False):
        if embeddings.dim() != 2:
            raise ValueError("Embeddings parameter is expected to be 2-dimensional, got "
                             f"{embeddings.dim()} dimensions")
        rows, cols = embeddings.shape
        embedding = cls(rows, cols, _weight=embeddings, padding_idx=padding_idx,
                        max_norm=max_norm, norm_type=norm_type,
                        scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)
        embedding.weight.requires_grad = not freeze
        return embedding
