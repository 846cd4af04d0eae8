"""Fake mechanism for allocator tests: stream events completed by hand."""

from __future__ import annotations


class FakeEvent:
    """A recorded stream event that completes when a test says so (or on synchronize)."""

    def __init__(self, stream):
        self.done = False

    def query(self):
        return self.done

    def synchronize(self):
        self.done = True
