"""`gpu-tensor demo`: train a small classifier on the best device, fed by the serving
pre-processing pipeline.

Per batch: uint8 HWC images made in numpy -> a pinned host buffer -> async upload on a
side stream -> one fused kernel computing (x/255 - mean)/std while reading HWC and
writing CHW -> a small `nn` classifier (Flatten, Linear, ReLU, Linear) -> cross_entropy ->
backward -> one `optim.Adam` step (a fused kernel per parameter on cuda). Buffers are
double-buffered, so batch i+1 uploads while batch i trains. Then: a numpy check of the
first forward, the loss before and after, throughput, how much of the upload the pipeline
hid (against a serial run of the same steps; real GPU only), and the memory summary. With no GPU it runs on the emulated cuda device (host memory,
synchronous streams) and says so. Each stage is tried once first; a stage the runtime
cannot do yet is named rather than faked.
"""

from __future__ import annotations

import sys
import time
import traceback
from types import SimpleNamespace

import numpy as np
from tqdm import tqdm

from ._format import fmt_bytes

__all__ = ["demo_main", "StageUnavailable"]

MEAN = (0.485, 0.456, 0.406)  # ImageNet channel statistics: what serving pipelines use
STD = (0.229, 0.224, 0.225)
HIDDEN, CLASSES = 256, 10  # a small MLP head: enough matmul work to overlap with an upload
HOST_BATCHES = 4  # distinct batches generated up front; the loop cycles through them
CHECK_TOL = 1e-5  # float32 normalise vs numpy: a few ulps of values near 2
LR = 1e-3  # Adam's default: the loss falls within a few steps on the cycled batches


class StageUnavailable(Exception):
    """A pipeline stage the runtime cannot run yet (missing API or failing op)."""

    def __init__(self, stage: str, exc: BaseException):
        tb = traceback.extract_tb(exc.__traceback__)
        where = f" (raised at {tb[-1].filename}:{tb[-1].lineno})" if tb else ""
        super().__init__(f"stage '{stage}' is unavailable: {type(exc).__name__}: {exc}{where}")
        self.stage = stage


def _stage(name: str, fn, *args):
    try:
        return fn(*args)
    except Exception as exc:  # the first run of a stage: any failure means "not there yet"
        raise StageUnavailable(name, exc) from exc


def _pick_device() -> tuple[str, str]:
    """('cuda', description). With no GPU, the emulated cuda device is switched on."""
    from gpu_tensor import device as dev

    if dev.real_cuda_available():
        name = "GPU"
        try:
            from .live import query_gpus

            name = query_gpus()["gpus"][0]["name"]
        except Exception:  # a name is nice to have; NVML may be missing in a container
            pass
        return "cuda", f"cuda:0 ({name})"
    if not dev.cuda_available():
        # The emulated device is what GPU_TENSOR_FALLBACK=1 turns on; the demo asks for it
        # for its own process only, so `make demo` runs on a machine with no GPU.
        import os

        os.environ["GPU_TENSOR_FALLBACK"] = "1"
    return "cuda", "cuda:0 emulated on the CPU (no GPU found; GPU_TENSOR_FALLBACK=1)"


def _api():
    """The public names the demo uses, taken from the modules that define them (what
    `import gpu_tensor as gt` re-exports), so the demo does not depend on the re-export."""
    from gpu_tensor import creation, dtype, nn, optim
    from gpu_tensor.autograd import no_grad
    from gpu_tensor.fusion import fuse

    return SimpleNamespace(
        empty=creation.empty,
        tensor=creation.tensor,
        from_numpy=creation.from_numpy,
        uint8=dtype.uint8,
        float32=dtype.float32,
        fuse=fuse,
        nn=nn,
        optim=optim,
        no_grad=no_grad,
    )


class _Pipeline:
    def __init__(self, gt, batch: int, size: int, seed: int = 0):
        from gpu_tensor.cuda import streams

        self.gt = gt
        self.cuda = streams  # Stream, Event, stream(), current_stream(), synchronize()
        self.shape = (batch, size, size, 3)
        rng = np.random.default_rng(seed)
        self.host = [rng.integers(0, 256, self.shape, dtype=np.uint8) for _ in range(HOST_BATCHES)]
        self.labels_np = [rng.integers(0, CLASSES, batch) for _ in range(HOST_BATCHES)]
        feat = 3 * size * size
        self.w1_np = (rng.standard_normal((feat, HIDDEN)) / np.sqrt(feat)).astype(np.float32)
        self.w2_np = (rng.standard_normal((HIDDEN, CLASSES)) / np.sqrt(HIDDEN)).astype(np.float32)

    # Each setup_* / step method is one named stage.
    def setup_pinned(self):
        gt = self.gt
        self.pinned = [gt.empty(self.shape, dtype=gt.uint8, pin_memory=True) for _ in range(2)]
        if not all(p.is_pinned() for p in self.pinned):
            raise RuntimeError("gt.empty(..., pin_memory=True) returned unpinned memory")
        self.pinned_np = [p.numpy() for p in self.pinned]

    def setup_device(self):
        gt = self.gt
        self.main = self.cuda.current_stream()
        self.side = self.cuda.Stream()
        self.dev_in = [gt.empty(self.shape, dtype=gt.uint8, device="cuda") for _ in range(2)]
        self.uploaded = [self.cuda.Event() for _ in range(2)]
        self.consumed = [self.cuda.Event() for _ in range(2)]
        self.mean = gt.tensor(MEAN, dtype=gt.float32, device="cuda").view(1, 3, 1, 1)
        self.std = gt.tensor(STD, dtype=gt.float32, device="cuda").view(1, 3, 1, 1)
        self.labels = [gt.from_numpy(y).to("cuda") for y in self.labels_np]

    def setup_model(self):
        gt, nn = self.gt, self.gt.nn
        feat = self.w1_np.shape[0]
        self.model = nn.Sequential(
            nn.Flatten(), nn.Linear(feat, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, CLASSES)
        ).to("cuda")
        # the numpy reference's weights (Linear stores W transposed), zero biases
        self.model.load_state_dict(
            {
                "1.weight": gt.from_numpy(np.ascontiguousarray(self.w1_np.T)),
                "1.bias": gt.from_numpy(np.zeros(HIDDEN, np.float32)),
                "3.weight": gt.from_numpy(np.ascontiguousarray(self.w2_np.T)),
                "3.bias": gt.from_numpy(np.zeros(CLASSES, np.float32)),
            }
        )
        self.opt = gt.optim.Adam(self.model.parameters(), lr=LR)
        self.losses = []

    def setup_fuse(self):
        @self.gt.fuse
        def normalise(x, mean, std):
            return (x / 255 - mean) / std

        self.normalise = normalise

    def upload(self, i: int) -> None:
        k = i % 2
        self.uploaded[k].synchronize()  # the host may refill pinned[k] once its copy is done
        self.pinned_np[k][...] = self.host[i % HOST_BATCHES]
        with self.cuda.stream(self.side):
            self.side.wait_event(self.consumed[k])  # dev_in[k] is free once batch i-2 ran
            self.dev_in[k].copy_(self.pinned[k], non_blocking=True)
            self.uploaded[k].record(self.side)

    def normalise_step(self, i: int):
        k = i % 2
        self.main.wait_event(self.uploaded[k])
        return self.normalise(self.dev_in[k].permute(0, 3, 1, 2), self.mean, self.std)

    def forward(self, x, i: int):
        with self.gt.no_grad():
            logits = self.model(x)
        self.consumed[i % 2].record(self.main)
        return logits

    def device_is_cuda(self) -> bool:
        return next(self.model.parameters()).device.type == "cuda"

    def train_step(self, x, i: int):
        F = self.gt.nn.functional
        loss = F.cross_entropy(self.model(x), self.labels[i % HOST_BATCHES])
        self.consumed[i % 2].record(self.main)  # the batch buffer is read by now
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        self.losses.append(loss.detach())
        return loss

    def reference(self, i: int):
        img = self.host[i % HOST_BATCHES].astype(np.float32)
        x = ((img / 255 - np.float32(MEAN)) / np.float32(STD)).transpose(0, 3, 1, 2)
        logits = np.maximum(x.reshape(x.shape[0], -1) @ self.w1_np, 0) @ self.w2_np
        return x, logits


def _run(p: _Pipeline, steps: int, show: bool) -> float:
    """The timed training loop. Its progress bar (tqdm, on stderr) only when `show`: the
    caller passes False when stderr is not a terminal, so piped or logged output stays
    free of carriage returns."""
    bar = tqdm(
        total=steps,
        desc="  training",
        unit="batch",
        file=sys.stderr,
        disable=not show,
        leave=True,
        dynamic_ncols=True,
    )
    p.cuda.synchronize()
    start = time.perf_counter()
    p.upload(0)
    for i in range(steps):
        if i + 1 < steps:
            p.upload(i + 1)  # enqueued before batch i's compute: the copy overlaps it
        p.train_step(p.normalise_step(i), i)
        bar.update(1)
    p.cuda.synchronize()
    wall = time.perf_counter() - start
    bar.close()
    return wall


def _serial(p: _Pipeline, steps: int) -> tuple[float, float]:
    """Seconds per step of upload alone and of compute alone, each waited for."""
    sync = p.cuda.synchronize
    up = comp = 0.0
    for i in range(steps):
        sync()
        t0 = time.perf_counter()
        p.upload(i)
        sync()
        t1 = time.perf_counter()
        p.train_step(p.normalise_step(i), i)
        sync()
        up, comp = up + t1 - t0, comp + time.perf_counter() - t1
    return up / steps, comp / steps


def demo_main(
    batch_size: int = 32, image_size: int = 64, steps: int = 20, progress: bool = True, out=None
) -> int:
    """Run the demo; 0 on success, 1 when a stage is unavailable or the check fails."""
    from ._errors import CliError

    out = out or sys.stdout
    for name, value in (
        ("--batch-size", batch_size),
        ("--image-size", image_size),
        ("--steps", steps),
    ):
        if value < 1:
            raise CliError(f"{name} must be at least 1, got {value}")
    _, where = _pick_device()
    from gpu_tensor.backends import cuda_kind

    emulated = cuda_kind().synchronous
    shape = (batch_size, image_size, image_size, 3)
    batch_bytes = int(np.prod(shape))
    out.write(
        f"gpu-tensor demo on {where}\n"
        f"  {steps} batches of {batch_size} images {image_size}x{image_size}x3 uint8 "
        f"({fmt_bytes(batch_bytes)} per batch)\n"
        "  numpy -> pinned -> async upload (side stream) -> fused (x/255 - mean)/std, "
        f"HWC->CHW -> nn classifier {3 * image_size * image_size}->{HIDDEN}->{CLASSES}, "
        "cross_entropy, backward, optim.Adam\n"
    )
    try:
        gt = _stage("tensor API (creation, dtypes, gt.fuse)", _api)
        p = _Pipeline(gt, batch_size, image_size)
        _stage("pinned host buffers", p.setup_pinned)
        _stage("device buffers, streams, events", p.setup_device)
        _stage("gt.fuse", p.setup_fuse)
        _stage("async upload on a side stream", p.upload, 0)
        x = _stage("fused normalise (HWC->CHW)", p.normalise_step, 0)
        _stage("nn classifier and optim.Adam", p.setup_model)
        logits = _stage("classifier forward (nn.Linear, relu)", p.forward, x, 0)
        _stage("train step (cross_entropy, backward, Adam)", p.train_step, x, 0)
        p.setup_model()  # the timed run trains from the starting weights again
        p.cuda.synchronize()
        x_ref, logits_ref = p.reference(0)
        x_err = float(np.max(np.abs(x.cpu().numpy() - x_ref)))
        l_err = float(
            np.max(np.abs(logits.cpu().numpy() - logits_ref))
            / max(float(np.max(np.abs(logits_ref))), 1e-30)
        )
    except StageUnavailable as exc:
        out.write(f"  {exc}\n  the demo stops here rather than fake this stage.\n")
        return 1
    ok = x_err <= CHECK_TOL and l_err <= 1e-4  # matmul: float32 sums over ~10^4 terms
    out.write(
        f"  check vs numpy: normalise max abs error {x_err:.2e}, logits max rel error "
        f"{l_err:.2e} ({'ok' if ok else 'MISMATCH'})\n"
    )
    show = progress and sys.stderr.isatty()
    wall = _run(p, steps, show)
    per_step = wall / steps
    # one pass over the cycled batches: the mean loss of the first pass and of the last
    k = min(HOST_BATCHES, steps)
    losses = [float(v.item()) for v in p.losses]
    first, last = sum(losses[:k]) / k, sum(losses[-k:]) / k
    fused = "gt.fuse, one kernel per parameter on a GPU" if p.device_is_cuda() else "eager ops"
    out.write(
        f"  trained: mean loss {first:.3f} over the first {k} steps, {last:.3f} over the "
        f"last {k} (Adam lr={LR:g}; optimizer step: {fused})\n"
    )
    out.write(
        f"  throughput: {batch_size * steps / wall:,.0f} images/s, "
        f"{batch_bytes * steps / wall / 1e6:,.1f} MB/s uploaded, {per_step * 1e3:.2f} ms per batch\n"
    )
    if emulated:
        # Emulated streams run each call to completion, so nothing can overlap; a serial
        # reference run would only measure timer noise on a shared CPU.
        out.write("  overlap: none possible (streams are synchronous on the emulated device)\n")
    else:
        up, comp = _serial(p, steps)
        # The share of the shorter stage that the pipelined step saved against serial.
        shorter = min(up, comp)
        hidden = max(0.0, min(1.0, (up + comp - per_step) / shorter)) if shorter else 0.0
        out.write(
            f"  overlap: upload {up * 1e3:.2f} ms + compute {comp * 1e3:.2f} ms per batch one "
            f"after the other, {per_step * 1e3:.2f} ms pipelined: {100 * hidden:.0f}% of the "
            "shorter stage hidden\n"
        )
    out.write(_pinned_line() + "\n\n")
    from gpu_tensor.cuda import memory

    out.write(memory.memory_summary(abbreviated=True))
    return 0 if ok else 1


def _pinned_line() -> str:
    from gpu_tensor.memory.pinned import host_memory_stats

    s = host_memory_stats()
    return (
        f"  pinned host pool: {fmt_bytes(s['allocated_bytes.all.current'])} in use "
        f"(peak {fmt_bytes(s['allocated_bytes.all.peak'])}), "
        f"{fmt_bytes(s['reserved_bytes.all.current'])} held, "
        f"{s['num_host_alloc']} page-locking calls"
    )
