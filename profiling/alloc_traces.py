"""Generated allocation traces for bench_allocator's fragmentation replays.

Families the allocator's policy was not tuned on, each drawn from a seed (model shape,
batch sizes, sequence lengths, request mix all come from the seed):

- `training`: transformer training. A model shape is drawn (layers, width, heads,
  vocabulary, dtype); every step draws a batch size and a sequence length; forward keeps
  what backward needs (norms, qkv, attention scores or a fused-attention workspace,
  MLP), backward frees it in reverse while making gradients; optional gradient
  accumulation over micro-batches; grads and Adam state persist from the first step.
- `kv_inference`: generation with a KV cache that grows. Requests of drawn prompt and
  output lengths are batched; each decoding step concatenates one token onto every
  layer's K and V (a new, longer buffer; the old one freed, as `torch.cat` does);
  finished batches free their whole cache.
- `dataloader`: a training loop fed by a prefetching loader: a queue of device
  batches of drawn (variable) sizes is filled ahead and drained by steps whose
  temporaries scale with the batch.

A trace is a list of ops ("a", key, size, stream) / ("f", key, 0, 0).
"""

from __future__ import annotations

import itertools
import random

__all__ = ["Trace", "training", "kv_inference", "dataloader", "FAMILIES"]


class Trace:
    def __init__(self):
        self.ops, self._ids, self.sizes = [], itertools.count(), {}

    def alloc(self, size, stream=0):
        key = next(self._ids)
        self.ops.append(("a", key, max(1, int(size)), stream))
        self.sizes[key] = int(size)
        return key

    def free(self, key):
        self.ops.append(("f", key, 0, 0))


def training(seed: int, steps: int = 10):
    rng = random.Random(seed)
    layers = rng.choice([4, 6, 8, 12])
    hidden = rng.choice([512, 768, 1024, 1536, 2048])
    heads = hidden // 64
    vocab = rng.choice([8192, 32000, 50257])
    elem = rng.choice([2, 4])  # bf16 or fp32 activations
    fused_attention = rng.random() < 0.5
    micro = rng.choice([1, 1, 2, 4])  # micro-batches per optimizer step
    t = Trace()
    shapes = [
        hidden * 3 * hidden,
        hidden * hidden,
        4 * hidden * hidden,
        4 * hidden * hidden,
        hidden,
        hidden,
    ]
    params = [t.alloc(vocab * hidden * 4)] + [t.alloc(n * 4) for _ in range(layers) for n in shapes]
    state = None
    for _ in range(steps):
        grads = None
        for _m in range(micro):
            batch = rng.choice([1, 2, 4, 8, 16])
            seq = rng.randrange(128, 2049, 64)
            tokens = batch * seq
            x = t.alloc(tokens * hidden * elem)
            saved = []
            for _layer in range(layers):
                keep = [t.alloc(tokens * hidden * elem), t.alloc(tokens * 3 * hidden * elem)]
                if fused_attention:
                    work = t.alloc(batch * heads * seq * 4)  # log-sum-exp
                    keep.append(work)
                else:
                    scores = t.alloc(batch * heads * seq * seq * elem)
                    keep.append(t.alloc(batch * heads * seq * seq * elem))  # softmax
                    t.free(scores)
                keep += [
                    t.alloc(tokens * hidden * elem),
                    t.alloc(tokens * hidden * elem),
                    t.alloc(tokens * 4 * hidden * elem),
                    t.alloc(tokens * 4 * hidden * elem),
                ]
                keep.append(t.alloc(tokens * 8))  # norm statistics
                saved.append(keep)
            logits = t.alloc(tokens * vocab * elem)
            loss = t.alloc(4)
            g = t.alloc(tokens * vocab * elem)
            t.free(logits)
            t.free(loss)
            if grads is None:
                grads = [t.alloc(t.sizes[p]) for p in params]
            for keep in reversed(saved):
                for a in reversed(keep):
                    ga = t.alloc(t.sizes[a])
                    t.free(a)
                    t.free(g)
                    g = ga
                for _w in range(2):  # weight-gradient temporaries, added into grads
                    t.free(t.alloc(rng.choice(shapes) * 4))
            t.free(g)
            t.free(x)
        if state is None:  # Adam: exp_avg, exp_avg_sq, created at the first step
            state = [t.alloc(t.sizes[p]) for p in params for _ in range(2)]
        for p in params:
            t.free(t.alloc(t.sizes[p]))  # update temporary
        for gr in grads:
            t.free(gr)  # zero_grad(set_to_none=True)
    return t.ops


def kv_inference(seed: int, batches: int = 6):
    rng = random.Random(seed)
    layers = rng.choice([8, 16, 24])
    hidden = rng.choice([1024, 2048, 4096])
    elem = 2
    t = Trace()
    weights = [t.alloc(12 * hidden * hidden * elem) for _ in range(layers)]
    for _ in range(batches):
        batch = rng.choice([1, 2, 4, 8])
        prompt = rng.randrange(16, 1025, 16)
        new_tokens = rng.randrange(8, 129)
        kv = [[t.alloc(batch * prompt * hidden * elem) for _ in range(2)] for _ in range(layers)]
        length = prompt
        for _tok in range(new_tokens):
            length += 1
            x = t.alloc(batch * hidden * elem)
            for layer in kv:
                for i in range(2):  # torch.cat((past, new), dim=seq): a new buffer each token
                    grown = t.alloc(batch * length * hidden * elem)
                    t.free(layer[i])
                    layer[i] = grown
                tmp = t.alloc(batch * 4 * hidden * elem)
                t.free(tmp)
            logits = t.alloc(batch * 32000 * elem)
            t.free(logits)
            t.free(x)
        for layer in kv:
            for key in layer:
                t.free(key)
    for w in weights:
        t.free(w)
    return t.ops


def dataloader(seed: int, steps: int = 60):
    rng = random.Random(seed)
    depth = rng.choice([2, 3, 4])  # prefetch queue depth
    channels = rng.choice([3, 16])
    width = rng.choice([256, 512, 1024])
    t = Trace()
    model = [t.alloc(width * width * 4) for _ in range(rng.choice([4, 8]))]
    queue = []

    def load():
        batch = rng.choice([8, 16, 32, 64])
        side = rng.choice([128, 160, 192, 224, 256, 320])  # variable resolution
        images = t.alloc(batch * channels * side * side * 4)
        labels = t.alloc(batch * 8)
        return images, labels, batch * side * side // 64

    for _ in range(depth):
        queue.append(load())
    for _ in range(steps):
        images, labels, rows = queue.pop(0)
        queue.append(load())  # the loader refills while the step runs
        acts = [t.alloc(rows * width * 4) for _ in model]
        grads = [t.alloc(rows * width * 4) for _ in model]
        for a in reversed(acts):
            t.free(a)
        for g in grads:
            t.free(g)
        t.free(images)
        t.free(labels)
    for images, labels, _ in queue:
        t.free(images)
        t.free(labels)
    for w in model:
        t.free(w)
    return t.ops


FAMILIES = {"training": training, "kv_inference": kv_inference, "dataloader": dataloader}
