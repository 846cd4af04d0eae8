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


def source_books(a) -> dict:
    """What a HostRawSource under allocator `a` should report as outstanding: each plain
    segment's bytes, and per reservation the bytes of its runs plus the old addresses of its
    restitched pages (memory/expandable.py), which stay mapped until a shrink."""
    books = {s.ptr: s.size for s in a._segments.values() if not s.expandable}
    for res in a._ranges:
        books[res.base] = sum(s.size for s in a._segments.values() if s.reservation is res) + sum(
            res.aliases.values()
        )
    return books
