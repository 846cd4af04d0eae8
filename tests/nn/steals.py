"""A spy on the engine's accumulate: which leaves kept their gradient without a copy."""

from __future__ import annotations

from gpu_tensor.autograd import engine


def record_steals(monkeypatch) -> dict:
    """{id(leaf): steal flag} of every accumulate the engine makes from now on."""
    steals = {}
    real = engine.accumulate

    def spy(t, g, steal=False):
        steals[id(t)] = steal
        real(t, g, steal=steal)

    monkeypatch.setattr(engine, "accumulate", spy)
    return steals
