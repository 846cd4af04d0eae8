"""The goals each benchmark is judged against, as data (from the issues that asked for them).

Rows are matched by regular expressions on their `impl` and `case` names, so a goal
needs no cooperation from the benchmark beyond naming: our implementation's impl
name starts with `gpu_tensor` (or `ours`), peers are named after their library
(`numpy`, `cupy`, `cupy.fuse`, `torch`, `torch.compile`). A goal with no matching
rows reports "no data" and says which rows it looked for; it never guesses.

Kinds:
- pct_ceiling: our GB/s / the same-run ceiling, worst (lowest) case >= target.
- speedup: peer seconds / our seconds on the same case, worst (lowest) >= target.
- slowdown: our seconds / peer seconds on the same case, worst (highest) <= target.
- field_max / field_min: an extra column of our rows (e.g. fragmentation) <= / >= target.
- field_ratio_max: that column of ours / the peer's on the same case, worst (highest) <= target.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Goal", "GOALS", "OURS"]

OURS = r"^(gpu_tensor|gt|ours)\b"


@dataclass(frozen=True)
class Goal:
    bench: str
    text: str
    kind: str  # pct_ceiling | speedup | slowdown | field_max | field_min | field_ratio_max
    target: float
    ours: str = OURS  # regex on impl (case-insensitive)
    peer: tuple[str, ...] = ()  # regexes on impl, tried in order: the first that matches wins
    cases: str | None = None  # regex on case; None = every case
    exclude: str | None = None  # regex on case to leave out
    fields: tuple[str, ...] = ()  # field_max / field_min: extra columns, first present wins
    device: str | None = None  # 'cuda' / 'cpu': judged only on results from that device
    min_bytes: int = 0  # rows below this many bytes are left out


_TRANSPOSE = r"transpos|\.T\b|\bT\b|0, ?2, ?1|\(1, ?0\)|swap"
_INNER = r"inner-contiguous|attention|bshd|0, ?2, ?1, ?3"
_GENERAL_4D = r"4d|nchw|nhwc|general|permut"
_64MiB = 64 << 20
_COPY_OURS = r"^gpu_tensor$"  # not the emulated rows a CPU run records

# fmt: off
GOALS: tuple[Goal, ...] = (
    # issue 2: dispatch
    # (cpu rows are in every run, GPU runs included; tiny = a one- or two-digit element count)
    Goal("dispatch", "cpu: ≤ 2× numpy per tiny op", "slowdown", 2.0,
         ours=r"^gpu_tensor( \(cpu\))?$", peer=(r"^numpy\b",), cases=r"\[\d{1,2}\]"),
    Goal("dispatch", "cuda: ≤ 1.2× raw cupy per op", "slowdown", 1.2,
         ours=r"^gpu_tensor \(cuda\)$", peer=(r"raw.*cupy|cupy.*raw", r"^cupy\b"), device="cuda"),
    # issue 3: allocator
    Goal("allocator", "warm alloc+free ≤ 1.5× cupy's pool", "slowdown", 1.5,
         ours=r"^gpu_tensor( allocator)?$", peer=(r"cupy.*pool|memorypool|mempool", r"^cupy\b"),
         cases=r"warm|alloc|free", device="cuda"),
    Goal("allocator", "zero driver calls when warm", "field_max", 0.0,
         fields=("driver_calls", "raw_allocs", "cuda_malloc_calls"), cases=r"warm"),
    Goal("allocator", "fragmentation ≤ 1.10 on the transformer trace", "field_max", 1.10,
         fields=("fragmentation", "reserved_over_allocated"), cases=r"transformer"),
    Goal("allocator", "fragmentation no worse than torch's", "field_ratio_max", 1.0,
         ours=r"^gpu_tensor( allocator)?$", peer=(r"^torch$",), fields=("fragmentation",),
         device="cuda"),
    # issue 4: copy
    Goal("copy", "2D/3D transposes ≥ 90% of the D2D ceiling", "pct_ceiling", 0.90,
         ours=_COPY_OURS, cases=_TRANSPOSE, exclude=r"cast", device="cuda"),
    Goal("copy", "contiguous-inner permutes ≥ 90% of ceiling", "pct_ceiling", 0.90,
         ours=_COPY_OURS, cases=_INNER, device="cuda"),
    Goal("copy", "general 4D permutes ≥ 80% of ceiling", "pct_ceiling", 0.80,
         ours=_COPY_OURS, cases=_GENERAL_4D, device="cuda"),
    Goal("copy", "transposes ≥ 1.5× cupy.ascontiguousarray", "speedup", 1.5,
         ours=_COPY_OURS, peer=(r"^cupy\b",), cases=_TRANSPOSE, device="cuda"),
    Goal("copy", "never slower than cupy (any case)", "speedup", 1.0,
         ours=_COPY_OURS, peer=(r"^cupy\b",), device="cuda"),
    # issue 5: transfer
    Goal("transfer", "pinned ≥ 90% of the same-run peak", "speedup", 0.90,
         ours=OURS + r".*pinned", peer=(r"raw.*pinned|peak",), device="cuda"),
    Goal("transfer", "pageable staged ≥ 80% of pinned at ≥ 64 MiB", "speedup", 0.80,
         ours=OURS + r".*(pageable|staged)", peer=(OURS + r".*pinned",), min_bytes=_64MiB,
         device="cuda"),
    Goal("transfer", "pageable staged ≥ 2× cupy.asarray at ≥ 64 MiB", "speedup", 2.0,
         ours=OURS + r".*(pageable|staged)", peer=(r"^cupy\b",), min_bytes=_64MiB, device="cuda"),
    Goal("transfer", "≥ 90% of copy time hidden (overlap)", "field_min", 0.90,
         fields=("hidden_fraction", "hidden", "overlap_hidden"), device="cuda"),
    Goal("transfer", "pinned-pool host bytes ≤ 1.25× requested", "field_max", 1.25,
         fields=("host_overhead", "pool_overhead", "reserved_over_requested")),
    # issue 6: fused
    Goal("fused", "contiguous chains ≥ 85% of the D2D ceiling", "pct_ceiling", 0.85,
         ours=OURS + r"(?!.*unfused)", exclude=r"transpos|strided|\.T\b", device="cuda"),
    Goal("fused", "≥ 3× unfused cupy on 5-op chains", "speedup", 3.0,
         ours=OURS + r"(?!.*unfused)", peer=(r"^cupy\b.*unfused", r"^cupy$"), cases=r"gelu|norm|5",
         device="cuda"),
    Goal("fused", "never slower than cupy.fuse", "speedup", 1.0,
         ours=OURS + r"(?!.*unfused)", peer=(r"cupy[._ ]?fuse",), device="cuda"),
    Goal("fused", "≥ 0.9× torch.compile", "speedup", 0.9,
         ours=OURS + r"(?!.*unfused)", peer=(r"torch[._ ]?compile",), device="cuda"),
    # issue 15: optimizer step
    Goal("optim", "fused Adam step ≥ 80% of the D2D ceiling", "pct_ceiling", 0.80,
         ours=r"^gpu_tensor fused$", cases=r"^Adam step", device="cuda"),
    Goal("optim", "≤ 1 kernel launch per parameter tensor", "field_max", 1.0,
         ours=r"^gpu_tensor fused$", fields=("per_tensor",), cases=r"^launches"),
    # issue 30: CI-speed training (torch CPU in the same run, one thread each)
    Goal("train", "gt cpu ≤ 1.5× torch CPU per training step and single op", "slowdown", 1.5,
         ours=r"^gpu_tensor \(cpu\)$", peer=(r"^torch$",)),
    Goal("train", "gt emulated cuda ≤ 2× torch CPU per training step", "slowdown", 2.0,
         ours=r"^gpu_tensor \(emulated cuda\)$", peer=(r"^torch$",), exclude=r"^x\.|^Adam"),
    # issue 29: CUDA graphs
    Goal("graphs", "one graph launch per replayed step", "field_max", 1.0,
         ours=r"^gpu_tensor graphed$", fields=("graph_launches",), cases=r"^per step"),
    Goal("graphs", "≤ 10 gpu_tensor Python calls per replay", "field_max", 10.0,
         ours=r"^gpu_tensor graphed$", fields=("python_calls",), cases=r"^per step"),
    Goal("graphs", "graphed width-256 step ≥ 5× our eager step", "speedup", 5.0,
         ours=r"^gpu_tensor graphed$", peer=(r"^gpu_tensor eager$",), cases=r"width 256,",
         device="cuda"),
    Goal("graphs", "graphed width-256 step faster than torch's graphed step", "speedup", 1.0,
         ours=r"^gpu_tensor graphed$", peer=(r"^torch graphed$",), cases=r"width 256,",
         device="cuda"),
    # issue 23: the cuda hot path (bench_host_cost: the real CudaBackend, the simulator as a
    # null device on a CPU machine; host time per op on a GPU)
    Goal("host_cost", "≤ 20 gpu_tensor Python calls per warm cuda op", "field_max", 20.0,
         fields=("calls",)),
    Goal("host_cost", "one launch per warm elementwise op", "field_max", 1.0,
         fields=("launches",), device="cpu"),
    Goal("host_cost", "≤ 3 µs own host time per warm cuda op (no GPU)", "field_max", 3.0,
         fields=("own_us",), device="cpu"),
    Goal("host_cost", "cuda: host time per op ≤ 1.2× cupy's own", "slowdown", 1.2,
         ours=r"^gpu_tensor \(cuda\)$", peer=(r"^cupy\b",), device="cuda"),
)
# fmt: on
