"""Loss modules over functional/loss_extra.py: KLDivLoss, HuberLoss, the margin and
embedding losses, PoissonNLLLoss and GaussianNLLLoss."""

from __future__ import annotations

from ..functional import loss_extra as L
from ..functional.ctc import ctc_loss
from ..module import Module
from .loss import _Loss

__all__ = [
    "KLDivLoss",
    "HuberLoss",
    "CosineEmbeddingLoss",
    "MarginRankingLoss",
    "TripletMarginLoss",
    "HingeEmbeddingLoss",
    "SoftMarginLoss",
    "PoissonNLLLoss",
    "GaussianNLLLoss",
    "CosineSimilarity",
    "PairwiseDistance",
    "CTCLoss",
]


class KLDivLoss(_Loss):
    def __init__(
        self, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False
    ):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return L.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class HuberLoss(_Loss):
    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target, weight=None):
        return L.huber_loss(
            input, target, reduction=self.reduction, delta=self.delta, weight=weight
        )


class _MarginLoss(_Loss):
    _default_margin = 0.0

    def __init__(self, margin=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = self._default_margin if margin is None else margin


class CosineEmbeddingLoss(_MarginLoss):
    def forward(self, input1, input2, target):
        return L.cosine_embedding_loss(
            input1, input2, target, self.margin, reduction=self.reduction
        )


class MarginRankingLoss(_MarginLoss):
    def forward(self, input1, input2, target):
        return L.margin_ranking_loss(input1, input2, target, self.margin, reduction=self.reduction)


class HingeEmbeddingLoss(_MarginLoss):
    _default_margin = 1.0

    def forward(self, input, target):
        return L.hinge_embedding_loss(input, target, self.margin, reduction=self.reduction)


class TripletMarginLoss(_Loss):
    def __init__(
        self,
        margin: float = 1.0,
        p: float = 2.0,
        eps: float = 1e-6,
        swap: bool = False,
        size_average=None,
        reduce=None,
        reduction: str = "mean",
    ):
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(
                f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead"
            )
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        return L.triplet_margin_loss(
            anchor,
            positive,
            negative,
            self.margin,
            self.p,
            self.eps,
            self.swap,
            reduction=self.reduction,
        )


class SoftMarginLoss(_Loss):
    def forward(self, input, target):
        return L.soft_margin_loss(input, target, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    def __init__(
        self,
        log_input: bool = True,
        full: bool = False,
        size_average=None,
        eps: float = 1e-8,
        reduce=None,
        reduction: str = "mean",
    ):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        return L.poisson_nll_loss(
            log_input, target, self.log_input, self.full, eps=self.eps, reduction=self.reduction
        )


class GaussianNLLLoss(_Loss):
    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
        super().__init__(reduction=reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        return L.gaussian_nll_loss(input, target, var, self.full, self.eps, self.reduction)


class CosineSimilarity(Module):
    def __init__(self, dim: int = 1, eps: float = 1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return L.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return L.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CTCLoss(_Loss):
    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        super().__init__(reduction=reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return ctc_loss(
            log_probs,
            targets,
            input_lengths,
            target_lengths,
            self.blank,
            self.reduction,
            self.zero_infinity,
        )
