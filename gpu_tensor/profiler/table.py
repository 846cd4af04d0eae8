"""torch's profiler table, column for column: the same headers in the same order, widths
(the name column fits the longest key + 4, at most 55; the others 12; two spaces between),
number formats and footer, so a table read by eye or by a script compares with torch's.
The rules are torch 2.13's `_build_table` (torch/autograd/profiler_util.py); tests check
the output against torch's own on the same program.
"""

from __future__ import annotations

__all__ = ["build_table", "format_time", "format_memory", "format_share"]

_COLUMN = 12  # every column but the name, shapes and source ones
_GAP = 2


def format_time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _time(us, unit):
    if unit == "s":
        return f"{us / 1e6:.3f}s"
    if unit == "ms":
        return f"{us / 1e3:.3f}ms"
    if unit == "us":
        return f"{us:.3f}us"
    return format_time(us)


def format_share(part: float, total: float) -> str:
    if total == 0:
        return "NaN"
    return f"{part * 100.0 / total:.2f}%"


def format_memory(nbytes: int) -> str:
    for limit, unit in ((1 << 30, "GB"), (1 << 20, "MB"), (1 << 10, "KB")):
        if abs(nbytes) >= limit:
            return f"{nbytes / limit:.2f} {unit}"
    return f"{nbytes} B"


def _sort_key(name):
    for word in ("cuda", "xpu", "privateuse1"):
        name = name.replace(word, "device")
    return name


def _trim(path, width):
    if len(path) > width:
        path = path[len(path) - width :]
        if len(path) > 3:
            path = "..." + path[3:]
    return path


def build_table(
    events,
    sort_by=None,
    row_limit=100,
    max_src_column_width=75,
    max_name_column_width=55,
    max_shapes_column_width=80,
    header=None,
    top_level_events_only=False,
    time_unit=None,
):
    """`EventList.table` (events.py binds it there, with torch's signature): torch's summary
    table (same columns, widths and formats), then the list's notes."""
    notes = "".join(note + "\n" for note in events._notes)
    if not events:
        return notes
    profile_memory = events._profile_memory
    use_device = events[0].use_device
    has_device_time = any(e.self_device_time_total > 0 for e in events)
    has_device_mem = any(e.self_device_memory_usage > 0 for e in events)
    has_shapes = any(e.input_shapes is not None and len(e.input_shapes) > 0 for e in events)
    if sort_by is not None:
        attr = _sort_key(sort_by)
        events = sorted(events, key=lambda e: getattr(e, attr), reverse=True)
    name_width = max(len(e.key) for e in events) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    shapes_width = max(len(str(e.input_shapes)) for e in events) + 4
    if max_shapes_column_width is not None:
        shapes_width = min(shapes_width, max_shapes_column_width)
    stacks = [e.stack for e in events if e.stack is not None and len(e.stack) > 0]
    src_width = None
    if stacks:
        src_width = max(len(entry) for stack in stacks for entry in stack) + 4
        if max_src_column_width is not None:
            src_width = min(src_width, max_src_column_width)
    dev = use_device.upper() if use_device is not None else "None"

    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if has_device_time:
        headers += [f"Self {dev}", f"Self {dev} %", f"{dev} total", f"{dev} time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
        if use_device and has_device_mem:
            headers += [f"{dev} Mem", f"Self {dev} Mem"]
    headers.append("# of Calls")
    widths = [(name_width, ">")] + [(_COLUMN, ">")] * (len(headers) - 1)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append((shapes_width, ">"))
    if stacks:
        headers.append("Source Location")
        widths.append((src_width, "<"))
    row_format = "".join("{: " + align + str(w) + "}" + " " * _GAP for w, align in widths)
    separator = "".join("-" * w + " " * _GAP for w, _ in widths)
    line_length = sum(w + _GAP for w, _ in widths) - _GAP

    self_cpu_sum = sum(e.self_cpu_time_total for e in events)
    self_device_sum = sum(e.self_device_time_total for e in events if not e.is_user_annotation)
    out = []
    if header is not None:
        out += ["=" * line_length, header]
    if top_level_events_only:
        out += ["=" * line_length, "This report only display top-level ops statistics"]
    out += [separator, row_format.format(*headers), separator]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[: max_name_column_width - 3] + "..."
        row = [
            name,
            format_share(e.self_cpu_time_total, self_cpu_sum),
            _time(e.self_cpu_time_total, time_unit),
            format_share(e.cpu_time_total, self_cpu_sum) if not e.is_async else 0,
            _time(e.cpu_time_total, time_unit),
            _time(e.cpu_time, time_unit),
        ]
        if has_device_time:
            row += [
                _time(e.self_device_time_total, time_unit),
                format_share(e.self_device_time_total, self_device_sum),
                _time(e.device_time_total, time_unit),
                _time(e.device_time, time_unit),
            ]
        if profile_memory:
            row += [format_memory(e.cpu_memory_usage), format_memory(e.self_cpu_memory_usage)]
            if use_device and has_device_mem:
                row += [
                    format_memory(e.device_memory_usage),
                    format_memory(e.self_device_memory_usage),
                ]
        row.append(e.count)
        if has_shapes:
            row.append(str(e.input_shapes)[:shapes_width])
        if stacks:
            row.append(_trim(e.stack[0], src_width) if len(e.stack) > 0 else "")
        out.append(row_format.format(*row))
        if stacks:
            blank = [""] * (len(headers) - 1)
            for entry in e.stack[1:]:
                out.append(row_format.format(*(blank + [_trim(entry, src_width)])))
            out.append(row_format.format(*(blank + [""])))
    out.append(separator)
    out.append(f"Self CPU time total: {_time(self_cpu_sum, time_unit)}")
    if has_device_time:
        out.append(f"Self {dev} time total: {_time(self_device_sum, time_unit)}")
    return "".join(line + "\n" for line in out) + notes
