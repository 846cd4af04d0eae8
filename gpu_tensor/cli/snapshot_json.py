"""A snapshot's JSON read incrementally, so the file's text is never in memory whole.

A snapshot is `{"segments": [...], "device_traces": [[...], ...], ...}` (or a bare segment
list). The outer object and the lists two levels deep are walked here a piece at a time;
each element (a segment, a trace event) is parsed by json's own C scanner from a buffer
of about one chunk. Peak memory is then the parsed snapshot plus a chunk, instead of the
parsed snapshot plus the whole text (a 200 MB file costs 200 MB less).
"""

from __future__ import annotations

import codecs
import json

from ._errors import SnapshotError

__all__ = ["read_json"]

CHUNK = 1 << 20  # bytes read at a time: large enough that json's scanner dominates
_WS = " \t\n\r"
_TOKEN_MARGIN = 1024  # longer than any JSON token but a string (numbers: 4300 digits at most)
_STREAMED_LIST_DEPTH = 2  # segments (depth 1), device_traces and each device's trace (2)


class _Reader:
    def __init__(self, f, decoder: json.JSONDecoder):
        self.f = f
        self.utf8 = codecs.getincrementaldecoder("utf-8")()
        self.decoder = decoder
        self.buf = ""
        self.pos = 0
        self.consumed = 0  # characters dropped from the front of buf so far
        self.eof = False

    def _more(self) -> bool:
        """Append the next chunk to the buffer; False at end of file."""
        if self.eof:
            return False
        data = self.f.read(CHUNK)
        try:
            text = self.utf8.decode(data, final=not data)
        except UnicodeDecodeError:
            raise SnapshotError(
                "not JSON text (not UTF-8); expected a snapshot .json or .pickle"
            ) from None
        self.eof = not data
        self.consumed += self.pos
        self.buf = self.buf[self.pos :] + text
        self.pos = 0
        return True

    def _where(self) -> str:
        return f"at character {self.consumed + self.pos}"

    def peek(self) -> str:
        """The next non-blank character ('' at end of file), not consumed."""
        while True:
            buf, pos = self.buf, self.pos
            while pos < len(buf) and buf[pos] in _WS:
                pos += 1
            self.pos = pos
            if pos < len(buf):
                return buf[pos]
            if not self._more() or self.eof and self.pos >= len(self.buf):
                return ""

    def expect(self, chars: str) -> str:
        c = self.peek()
        if c == "":
            raise SnapshotError(f"truncated JSON (was the file cut short?) {self._where()}")
        if c not in chars:
            raise SnapshotError(
                f"invalid JSON {self._where()}: expected one of {chars!r}, found {c!r}"
            )
        self.pos += 1
        return c

    def scalar_or_element(self):
        """One complete JSON value from the buffer, reading more while it is cut short."""
        while True:
            self.peek()
            try:
                obj, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                # near the buffer's end the value may just be cut by the chunk boundary
                # ("tru" of "true"): read on; a real error fails again further from the end
                unterminated = exc.msg.startswith("Unterminated string")
                if not self.eof and (unterminated or exc.pos >= len(self.buf) - _TOKEN_MARGIN):
                    self._more()
                    continue
                if unterminated or exc.pos >= len(self.buf.rstrip()):
                    raise SnapshotError(
                        f"truncated JSON (was the file cut short?) {self._where()}: {exc.msg}"
                    ) from None
                self.pos = exc.pos
                raise SnapshotError(f"invalid JSON {self._where()}: {exc.msg}") from None
            if end >= len(self.buf) and not self.eof and self._more():
                continue  # a number may go on in the next chunk ("12" of "1234")
            self.pos = end
            return obj

    def value(self, depth: int):
        c = self.peek()
        if c == "{" and depth == 0:
            self.pos += 1
            out = {}
            if self.peek() == "}":
                self.pos += 1
                return out
            while True:
                if self.peek() != '"':
                    self.expect('"')
                key = self.scalar_or_element()
                self.expect(":")
                out[key] = self.value(depth + 1)
                if self.expect(",}") == "}":
                    return self.decoder.object_hook(out)
        if c == "[" and depth <= _STREAMED_LIST_DEPTH:
            self.pos += 1
            out = []
            if self.peek() == "]":
                self.pos += 1
                return out
            while True:
                out.append(self.value(depth + 1))
                if self.expect(",]") == "]":
                    return out
        if c == "":
            raise SnapshotError(f"truncated JSON (was the file cut short?) {self._where()}")
        return self.scalar_or_element()


def read_json(f, decoder: json.JSONDecoder):
    """The JSON document in binary file `f`, parsed with `decoder` (its object_hook and
    parse_constant apply); SnapshotError naming the position of a problem."""
    r = _Reader(f, decoder)
    try:
        obj = r.value(0)
    except RecursionError:
        raise SnapshotError("JSON nested too deeply to be a memory snapshot") from None
    except ValueError as exc:  # e.g. an integer of over 4300 digits
        raise SnapshotError(f"a value in the JSON cannot be read: {exc}") from None
    if r.peek() != "":
        raise SnapshotError(f"invalid JSON {r._where()}: extra data after the snapshot")
    return obj
