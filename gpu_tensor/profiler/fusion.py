"""The fusion report: chains of elementwise ops that `@gt.fuse` would run as one kernel.

Among the ops that run one after another under the same parent, op B extends op A's chain
when B reads the tensor A just produced and nothing else in the window reads it (its only
use is the next op: fusing loses nothing). Each such chain of n ops costs n launches and
writes and reads back n - 1 intermediates that one fused kernel keeps in registers: the
report gives the launches and the bytes of memory traffic (2 x the intermediates) saved.
Identical chains (same ops, shape and dtype, e.g. once per training step) are one row.
"""

from __future__ import annotations

from .recorder import aten_name
from .table import format_memory

__all__ = ["chains", "fusion_table"]

_LOOKAHEAD = 64  # ops scanned for other readers of an intermediate (ids are reused later)


def _groups(ops):
    groups = {}
    for op in ops:
        groups.setdefault(id(op.parent), []).append(op)
    return groups.values()


def _used_once(group, i):
    """Does group[i]'s output have exactly one reader, group[i + 1]?"""
    out = group[i].out
    readers = 0
    for op in group[i + 1 : i + 1 + _LOOKAHEAD]:
        if op.ins and out in op.ins:
            readers += op.ins.count(out)
        if op.out == out:  # the id now names a new tensor
            break
    return readers == 1


def chains(session):
    """[{ops, count, shape, dtype, launches_saved, bytes_saved, site}], biggest saving first."""
    found = {}
    for group in _groups(session.ops):
        i = 0
        while i < len(group):
            chain = [group[i]]
            while True:
                a = chain[-1]
                j = i + len(chain)
                if j >= len(group) or a.ins is None or a.out_desc is None:
                    break
                b = group[j]
                if b.ins is None or a.out not in b.ins or not _used_once(group, j - 1):
                    break
                chain.append(b)
            if len(chain) > 1:
                names = tuple(aten_name(op.name) for op in chain)
                shape, dtype = chain[-1].out_desc or (None, None)
                key = (names, shape, dtype)
                row = found.get(key)
                if row is None:
                    site = chain[0].stack[0] if chain[0].stack else ""
                    row = found[key] = {
                        "ops": list(names),
                        "count": 0,
                        "shape": shape,
                        "dtype": dtype,
                        "launches_saved": 0,
                        "bytes_saved": 0,
                        "site": site,
                    }
                row["count"] += 1
                row["launches_saved"] += len(chain) - 1
                row["bytes_saved"] += 2 * sum(op.out_bytes for op in chain[:-1])
            i += len(chain)
    return sorted(found.values(), key=lambda r: r["bytes_saved"], reverse=True)


def fusion_table(rows, row_limit=10):
    if not rows:
        return ""
    lines = [
        "Fusion candidates: elementwise chains whose intermediates are read once "
        "(@gt.fuse would run each as one kernel)"
    ]
    head = (
        f"{'Ops':<60}  {'Calls':>6}  {'Shape':>18}  {'Dtype':>9}  {'Launches saved':>14}  "
        f"{'Traffic saved':>13}"
    )
    lines += ["-" * len(head), head, "-" * len(head)]
    for r in rows[:row_limit]:
        ops = " -> ".join(n.replace("aten::", "") for n in r["ops"])
        if len(ops) > 60:
            ops = ops[:57] + "..."
        lines.append(
            f"{ops:<60}  {r['count']:>6}  {str(list(r['shape'] or [])):>18}  "
            f"{str(r['dtype']):>9}  {r['launches_saved']:>14}  "
            f"{format_memory(r['bytes_saved']):>13}"
        )
        if r["site"]:
            lines.append(f"    at {r['site']}")
    lines.append("-" * len(head))
    return "\n".join(lines) + "\n"
