"""QConfig: which observers make a module's activation and weight qparams."""

from __future__ import annotations

from collections import namedtuple

from .observer import (
    MinMaxObserver,
    default_dynamic_quant_observer,
    default_per_channel_weight_observer,
    default_weight_observer,
)

__all__ = ["QConfig", "default_dynamic_qconfig", "per_channel_dynamic_qconfig", "default_qconfig"]


class QConfig(namedtuple("QConfig", ["activation", "weight"])):
    """(activation, weight) observer factories (classes or `Observer.with_args(...)`), not
    instances: each module gets its own observers."""

    __slots__ = ()

    def __new__(cls, activation, weight):
        from gpu_tensor.nn import Module

        if isinstance(activation, Module) or isinstance(weight, Module):
            raise ValueError(
                "QConfig received observer instance, please pass observer class "
                "instead. Use MyObserver.with_args(x=1) to override arguments to "
                "constructor if needed"
            )
        return super().__new__(cls, activation, weight)


default_dynamic_qconfig = QConfig(
    activation=default_dynamic_quant_observer, weight=default_weight_observer
)
per_channel_dynamic_qconfig = QConfig(
    activation=default_dynamic_quant_observer, weight=default_per_channel_weight_observer
)
default_qconfig = QConfig(
    activation=MinMaxObserver.with_args(reduce_range=True), weight=default_weight_observer
)
