"""The harness every profiling/bench_*.py uses: clocks, repeats, peers, ceilings, results.

    from profiling.harness import Suite
    suite = Suite("copy", argv)          # --quick, --out DIR, --budget S, --device auto|cpu
    t = suite.time(fn, sync="cuda")      # Timing(median, p10, p90, n, noisy, ...)
    suite.record("transpose 2D fp32", "gpu_tensor", seconds=t, nbytes=2 * n, ceiling="d2d")
    suite.finish()                       # JSON + markdown table

Clocks: sync="cuda" on a real GPU brackets `fn` with CUDA events on the current
stream and waits for the end event (device work inside the clock); everywhere
else, and always for sync="cpu", it is perf_counter around `fn` with no device
sync (host/enqueue time). `fn` must put its GPU work on the current stream.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time as _time
from pathlib import Path

from . import ceilings as _ceilings
from .machine import machine_info, probe_cupy_gpu, probe_torch, slug, utc_now
from .tables import COMPUTED, results_header, results_table
from .timing import NOISE_THRESHOLD, Timing

__all__ = ["Suite", "Timing", "NOISE_THRESHOLD", "RESULTS_DIR"]

RESULTS_DIR = Path(__file__).resolve().parent / "results"
QUICK_RESULTS_DIR = RESULTS_DIR / "tmp"  # quick runs are smoke tests: git-ignored, never committed
MIN_REPEATS = 3  # fewest samples a median is taken over, even when out of time
MAX_TIME_PER_CALL_S = {True: 2.0, False: 15.0}  # quick / full: cap on one time() call's repeats
CALIBRATE_TARGET_S = 200e-6  # number=None: calls per sample so a sample is >> clock resolution
SCHEMA_VERSION = 1


class Suite:
    """One benchmark run: parses argv, detects peers, times, records, writes results."""

    def __init__(
        self,
        name: str,
        argv: list[str] | None = None,
        description: str | None = None,
        add_arguments=None,
    ):
        """`add_arguments(parser)` may add a benchmark's own options; all parsed options are
        in `suite.args`."""
        if not re.fullmatch(r"[a-z0-9_]+", name or ""):
            raise ValueError(f"benchmark name {name!r}: use lowercase letters, digits and '_'")
        parser = argparse.ArgumentParser(prog=f"profiling.bench_{name}", description=description)
        parser.add_argument("--quick", action="store_true", help="small sizes (make bench, CI)")
        parser.add_argument("--out", type=Path, default=None, help="results folder")
        parser.add_argument(
            "--budget",
            type=float,
            default=None,
            help="seconds this benchmark may take; repeats shrink past it",
        )
        parser.add_argument(
            "--device",
            choices=("auto", "cpu"),
            default="auto",
            help="auto: cuda when cupy sees a GPU; cpu: ignore any GPU",
        )
        if add_arguments is not None:
            add_arguments(parser)
        args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
        self.args = args
        self.name = name
        self.quick: bool = args.quick
        self.budget_s: float | None = args.budget
        self.argv = list(sys.argv[1:] if argv is None else argv)
        self._t0 = _time.perf_counter()
        self.started_at = utc_now()
        self.rows: list[dict] = []
        self.warnings: list[str] = []
        self._ceilings: dict[str, dict | None] = {}
        self._budget_warned = False
        self._finished = False

        cupy_peer, self._cp = probe_cupy_gpu()
        if args.device == "cpu" and cupy_peer.available:
            cupy_peer = type(cupy_peer)("cupy", False, "--device cpu given", cupy_peer.version)
            self._cp = None
        self._peers = {"cupy_gpu": cupy_peer}
        self._torch = None
        self.device = "cuda" if self._cp is not None else "cpu"
        out = args.out or (QUICK_RESULTS_DIR if self.quick else RESULTS_DIR)
        self.out_dir = Path(out)
        self.path = self.out_dir / self._file_name()
        self._log(f"device {self.device}; cupy GPU: {cupy_peer.reason}")

    # -- peers -------------------------------------------------------------------------------
    @property
    def has_cupy_gpu(self) -> bool:
        return self._cp is not None

    @property
    def cupy(self):
        """The cupy module when a real GPU is there, else None."""
        return self._cp

    def _probe_torch(self) -> None:
        if "torch" not in self._peers:
            cpu, cuda, self._torch = probe_torch()
            self._peers["torch"], self._peers["torch_cuda"] = cpu, cuda
            self._log(f"torch: {cpu.reason}; torch cuda: {cuda.reason}")

    @property
    def has_torch(self) -> bool:
        self._probe_torch()
        return self._peers["torch"].available

    @property
    def has_torch_cuda(self) -> bool:
        self._probe_torch()
        return self._peers["torch_cuda"].available and self.device == "cuda"

    @property
    def torch(self):
        self._probe_torch()
        return self._torch

    def peer_reason(self, peer: str) -> str:
        """Why a peer ('cupy_gpu', 'torch', 'torch_cuda') is or is not usable: the skip text."""
        if peer.startswith("torch"):
            self._probe_torch()
        if peer not in self._peers:
            raise KeyError(f"unknown peer {peer!r}; known: {sorted(self._peers)}")
        return self._peers[peer].reason

    # -- sizes and budget --------------------------------------------------------------------
    def choose(self, full, quick):
        """`quick` under --quick, else `full`: keeps size tables in one line."""
        return quick if self.quick else full

    def time_left(self) -> float:
        if self.budget_s is None:
            return math.inf
        return self.budget_s - (_time.perf_counter() - self._t0)

    @property
    def over_budget(self) -> bool:
        return self.time_left() <= 0

    # -- clocks ------------------------------------------------------------------------------
    def sync(self) -> None:
        """Wait for all device work (a no-op on cpu)."""
        if self._cp is not None:
            self._cp.cuda.Device().synchronize()

    def time(
        self,
        fn,
        sync: str = "cuda",
        warmup: int = 3,
        repeat: int = 20,
        number: int | None = 1,
        max_time: float | None = None,
    ) -> Timing:
        """Seconds per call of `fn()`. Warm-up runs first (compiles, pool fill); then up to
        `repeat` samples, stopping early (after MIN_REPEATS) once `max_time` seconds are spent.
        number=None calibrates calls per sample for sub-millisecond host work."""
        if sync not in ("cuda", "cpu"):
            raise ValueError(f"sync must be 'cuda' or 'cpu', not {sync!r}")
        if repeat < 1 or warmup < 0:
            raise ValueError(f"need repeat >= 1 and warmup >= 0 (got {repeat}, {warmup})")
        limit = MAX_TIME_PER_CALL_S[self.quick] if max_time is None else max_time
        if self.over_budget:
            warmup, repeat, limit = min(warmup, 1), min(repeat, MIN_REPEATS), 0.0
            self._warn_budget()
        use_events = sync == "cuda" and self._cp is not None
        for _ in range(warmup):
            fn()
        # Even for host-clock timings, start (and end, below) with an empty device queue, so
        # work queued by the warm-up or by this timing never lands in another's clock.
        self.sync()
        if number is None:
            number = self._calibrate(fn, use_events)
        if number < 1:
            raise ValueError(f"number must be >= 1 (got {number})")
        samples, walls = [], []
        begin = _time.perf_counter()
        if use_events:
            cp = self._cp
            start, end = cp.cuda.Event(), cp.cuda.Event()
        for i in range(repeat):
            if use_events:
                stream = cp.cuda.get_current_stream()
                w0 = _time.perf_counter()
                start.record(stream)
                for _ in range(number):
                    fn()
                end.record(stream)
                end.synchronize()
                walls.append((_time.perf_counter() - w0) / number)
                samples.append(cp.cuda.get_elapsed_time(start, end) / 1e3 / number)
            else:
                t0 = _time.perf_counter()
                for _ in range(number):
                    fn()
                samples.append((_time.perf_counter() - t0) / number)
            if i + 1 >= MIN_REPEATS and _time.perf_counter() - begin > limit:
                break
        self.sync()
        clock = "cuda-event" if use_events else "perf_counter"
        return Timing.from_samples(samples, clock, number, walls or None)

    def _calibrate(self, fn, use_events: bool) -> int:
        number = 1
        while number < 1 << 20:
            t0 = _time.perf_counter()
            for _ in range(number):
                fn()
            if use_events:
                self.sync()
            if _time.perf_counter() - t0 >= CALIBRATE_TARGET_S:
                self.sync()
                return number
            number *= 2
        return number

    # -- ceilings ----------------------------------------------------------------------------
    def ceiling(self, kind: str) -> float | None:
        """GB/s of 'd2d' (read+write), 'h2d' / 'd2h' (bytes moved once), measured once per run
        on raw buffers (>= 1 GiB unless --quick). None without a GPU. 'host' (numpy copy,
        read+write) is measured on every machine."""
        if kind not in _ceilings.KINDS:
            raise ValueError(f"unknown ceiling {kind!r}; choose one of {_ceilings.KINDS}")
        if kind not in self._ceilings:
            if kind != "host" and self._cp is None:
                self._ceilings[kind] = None
            else:
                # Ceilings get their own time, outside any per-call cap a caller passed.
                rec = _ceilings.measure(kind, self.quick, self._ceiling_time, self._cp)
                self._ceilings[kind] = rec
                self._log(f"ceiling {kind}: {rec['gbps']:,.1f} GB/s ({rec['convention']})")
                if rec["timing"]["noisy"]:
                    self._warn(
                        f"ceiling {kind} is noisy (spread {rec['timing']['spread']:.0%}): "
                        "percentages of it are uncertain by as much"
                    )
                self._flush()
        rec = self._ceilings[kind]
        return None if rec is None else rec["gbps"]

    def _ceiling_time(self, fn, sync, warmup, repeat):
        return self.time(fn, sync=sync, warmup=warmup, repeat=repeat, max_time=math.inf)

    # -- results -----------------------------------------------------------------------------
    def record(
        self,
        case: str,
        impl: str,
        seconds=None,
        nbytes: int | None = None,
        ceiling=None,
        skipped: str | None = None,
        **extra,
    ) -> dict:
        """One row. `seconds`: a Timing or float (s per call). `nbytes`: bytes read + written
        (transfers: bytes moved) -> GB/s. `ceiling`: a kind ('d2d'...) or GB/s -> % of it.
        `skipped`: the reason this impl did not run. Extra keywords are kept as columns."""
        clash = set(extra) & COMPUTED
        if clash:
            raise ValueError(f"record(): {sorted(clash)} are computed by the harness; rename them")
        row: dict = {"case": str(case), "impl": str(impl)}
        if skipped is not None:
            row["skipped"] = str(skipped)
        elif isinstance(seconds, Timing):
            t = seconds
            row.update(
                seconds=t.median,
                p10=t.p10,
                p90=t.p90,
                n=t.n,
                noisy=t.noisy,
                spread=t.spread,
                clock=t.clock,
                number=t.number,
            )
            if t.wall_median is not None:
                row["wall_median"] = t.wall_median
            if t.noisy:
                self._warn(
                    f"{case} / {impl}: noisy, (p90-p10)/median = {t.spread:.0%} "
                    f"> {NOISE_THRESHOLD:.0%}; treat its median with care"
                )
        elif seconds is not None:
            row["seconds"] = float(seconds)
        if nbytes is not None and skipped is None:
            row["nbytes"] = int(nbytes)
            if row.get("seconds"):
                row["gbps"] = nbytes / row["seconds"] / 1e9
        if ceiling is not None and skipped is None:
            kind = ceiling if isinstance(ceiling, str) else None
            gbps = self.ceiling(kind) if kind else float(ceiling)
            if gbps:
                row["ceiling_gbps"], row["ceiling_kind"] = gbps, kind
                if row.get("gbps") is not None:
                    row["pct_of_ceiling"] = row["gbps"] / gbps
        row.update({k: _jsonable(v) for k, v in extra.items()})
        self.rows.append(row)
        self._flush()
        return row

    def skip(self, case: str, impl: str, reason: str, **extra) -> dict:
        return self.record(case, impl, skipped=reason, **extra)

    def record_vs(self, case: str, impl: str, t, peer: str | None = None, pt=None) -> dict:
        """Our row (Timing `t`) with `ratio` = our median / the peer's, when the peer's Timing
        `pt` is given; the peer's row (`peer`) is recorded first."""
        ratio = None
        if pt is not None:
            self.record(case, peer, seconds=pt)
            ratio = round(t.median / pt.median, 2)
        return self.record(case, impl, seconds=t, ratio=ratio)

    def result(self) -> dict:
        self._probe_torch()  # the record names every peer, used or not
        return {
            "schema": SCHEMA_VERSION,
            "benchmark": self.name,
            "device": self.device,
            "quick": self.quick,
            "complete": self._finished,
            "started_at": self.started_at.isoformat(timespec="seconds"),
            "elapsed_s": round(_time.perf_counter() - self._t0, 3),
            "argv": self.argv,
            "machine": self._machine(),
            "peers": {k: p.as_dict() for k, p in self._peers.items()},
            "ceilings": self._ceilings,
            "rows": self.rows,
            "warnings": self.warnings,
        }

    def finish(self) -> dict:
        """Write the JSON (profiling/results/, or --out) and print the markdown table."""
        self._finished = True
        result = self._flush()
        print(f"\n{results_header(result)}\n\n{results_table(result['rows'])}\n")
        for w in self.warnings:
            print(f"warning: {w}")
        print(f"results: {self.path}")
        return result

    # -- internals ---------------------------------------------------------------------------
    def _machine(self) -> dict:
        if not hasattr(self, "_machine_info"):
            self._machine_info = machine_info(self._cp, self._torch)
        return self._machine_info

    def _file_name(self) -> str:
        if self._cp is not None:
            dev = slug(_gpu_name(self._cp))
        else:
            dev = "cpu"
        return f"{self.name}-{self.started_at:%Y%m%dT%H%M%SZ}-{dev}.json"

    def _flush(self) -> dict:
        """Rewrite the results file after every row: a run killed by its time limit keeps
        what it measured ("complete": false)."""
        result = self.result()
        self.out_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(result, indent=1, default=str) + "\n")
        os.replace(tmp, self.path)
        return result

    def _log(self, msg: str) -> None:
        print(f"[{self.name}] {msg}", file=sys.stderr, flush=True)

    def _warn(self, msg: str) -> None:
        self.warnings.append(msg)
        self._log(f"warning: {msg}")

    def _warn_budget(self) -> None:
        if not self._budget_warned:
            self._budget_warned = True
            self._warn(
                f"time budget of {self.budget_s:.0f} s spent: later timings use "
                f"{MIN_REPEATS} repeats and 1 warm-up"
            )


def _gpu_name(cp) -> str:
    try:
        name = cp.cuda.runtime.getDeviceProperties(0)["name"]
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:
        return "gpu"


def _jsonable(value):
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return str(value)
