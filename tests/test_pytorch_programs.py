"""Realistic PyTorch programs, run with gpu_tensor bound as `torch`, statement by statement.

The programs below are our own, written in the style of the pytorch.org tutorials (tensor
basics, autograd, a hand-written training loop, a sparse recommender, ...). Each top-level
statement runs in two namespaces, one with `torch = gpu_tensor` and one with the real
torch (when installed); after it, every name it bound and everything it printed is
compared (values, dtypes, shapes, requires_grad; printed text with `gpu_tensor.` read as
`torch.`). Statements that draw random numbers are tagged `# random`: only their shapes and
dtypes are compared (the generators differ). The match rate is printed; the target is 99%.

Without torch (CI) the gpu_tensor side still runs every statement, and the programs' own
asserts (values a reader can check by hand) must hold.
"""

from __future__ import annotations

import ast
import contextlib
import io
import math
import re

import numpy as np
import pytest

import gpu_tensor

PROGRAMS = {}

PROGRAMS["tensor_basics"] = """
device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"  # environment
data = [[1, 2], [3, 4]]
x_data = torch.tensor(data)
print(x_data)
np_array = np.array(data)
x_np = torch.from_numpy(np_array)
x_ones = torch.ones_like(x_data)
x_rand = torch.rand_like(x_data, dtype=torch.float)  # random
shape = (2, 3)
zeros_tensor = torch.zeros(shape)
print(f"Zeros Tensor: \\n {zeros_tensor} \\n")
tensor = torch.arange(12.0).reshape(3, 4)
print(f"Shape of tensor: {tensor.shape}")
print(f"Datatype of tensor: {tensor.dtype}")
print(f"Device tensor is stored on: {tensor.device}")
tensor = tensor.to(device)
print(f"First row: {tensor[0]}")
print(f"First column: {tensor[:, 0]}")
print(f"Last column: {tensor[..., -1]}")
tensor[:, 1] = 0
t1 = torch.cat([tensor, tensor, tensor], dim=1)
y1 = tensor @ tensor.T
y2 = tensor.matmul(tensor.T)
y3 = torch.rand_like(y1)  # random
z1 = tensor * tensor
z2 = tensor.mul(tensor)
agg = tensor.sum()
agg_item = agg.item()
print(agg_item, type(agg_item))
tensor.add_(5)
t = torch.ones(5)
n = t.numpy()
t.add_(1)
assert n[0] == 2.0
stacked = torch.stack([t, t * 2])
means = stacked.mean(dim=1, keepdim=True)
is_t = torch.is_tensor(t) and t.layout == torch.strided
v = torch.linspace(0, 1, steps=5)
w = torch.where(v > 0.5, v, -v)
clamped = v.clamp(0.2, 0.8)
flat = stacked.flatten()
u = flat.unsqueeze(0).expand(3, -1).contiguous()
chunks = torch.chunk(u, 2, dim=1)
"""

PROGRAMS["autograd"] = """
x = torch.ones(5)
y = torch.zeros(3)
w = torch.linspace(-1, 1, 15).reshape(5, 3).requires_grad_()
b = torch.tensor([0.1, -0.2, 0.3], requires_grad=True)
z = torch.matmul(x, w) + b
loss = ((z - y) ** 2).mean()
print(f"Gradient function for z = {z.grad_fn}")
loss.backward()
print(w.grad)
print(b.grad)
with torch.no_grad():
    z_det = torch.matmul(x, w) + b
print(z_det.requires_grad)
z_d = z.detach()
inp = torch.eye(4, 5, requires_grad=True)
out = (inp + 1).pow(2).t()
out.backward(torch.ones_like(out), retain_graph=True)
print(f"First call\\n{inp.grad}")
out.backward(torch.ones_like(out))
print(f"Second call\\n{inp.grad}")
inp.grad.zero_()
a = torch.tensor([2.0, 3.0], requires_grad=True)
q = 3 * a ** 3 - a ** 2
(ga,) = torch.autograd.grad(q.sum(), a)
assert ga.tolist() == [32.0, 75.0]
s = torch.tensor([0.5, -0.25], requires_grad=True)
r = (s.asin() + s.erf() * s.sinh() + torch.atan2(s, s + 2)).sum()
r.backward()
g_special = s.grad
"""

PROGRAMS["linear_regression"] = """
x = torch.linspace(-math.pi, math.pi, 200, dtype=torch.float64)
y = torch.sin(x)
a = torch.tensor(0.1, dtype=torch.float64, requires_grad=True)
b = torch.tensor(0.2, dtype=torch.float64, requires_grad=True)
c = torch.tensor(-0.1, dtype=torch.float64, requires_grad=True)
d = torch.tensor(0.05, dtype=torch.float64, requires_grad=True)
learning_rate = 1e-6
for t in range(300):
    y_pred = a + b * x + c * x ** 2 + d * x ** 3
    loss = (y_pred - y).pow(2).sum()
    loss.backward()
    with torch.no_grad():
        a -= learning_rate * a.grad
        b -= learning_rate * b.grad
        c -= learning_rate * c.grad
        d -= learning_rate * d.grad
        a.grad = None
        b.grad = None
        c.grad = None
        d.grad = None
final_loss = loss.item()
print(f"Result: y = {a.item():.4f} + {b.item():.4f} x + {c.item():.4f} x^2 + {d.item():.4f} x^3")
assert final_loss < 100
"""

PROGRAMS["softmax_classifier"] = """
features = torch.tensor([[1.0, 2.0], [2.0, 1.0], [-1.0, -2.0], [-2.0, -1.0], [0.5, 1.5], [-1.5, -0.5]])
labels = torch.tensor([0, 0, 1, 1, 0, 1])
W = torch.zeros(2, 2, requires_grad=True)
bias = torch.zeros(2, requires_grad=True)
for step in range(100):
    logits = features @ W + bias
    log_probs = logits.log_softmax(dim=1)
    nll = -log_probs.gather(1, labels.unsqueeze(1)).mean()
    nll.backward()
    with torch.no_grad():
        W -= 0.5 * W.grad
        bias -= 0.5 * bias.grad
        W.grad.zero_()
        bias.grad.zero_()
probs = (features @ W + bias).softmax(dim=1)
pred = probs.argmax(dim=1)
accuracy = (pred == labels).float().mean().item()
assert accuracy == 1.0
top = probs.topk(1, dim=1)
order = probs[:, 0].sort(descending=True)
"""

PROGRAMS["ops_tour"] = """
m = torch.tensor([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]], dtype=torch.float64)
rhs = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
sol = torch.linalg.solve(m, rhs)
assert torch.allclose(m @ sol, rhs)
det = torch.det(m)
inv = torch.inverse(m)
q, r = torch.linalg.qr(m)
U, S, Vh = torch.linalg.svd(m)
rebuilt = U @ torch.diag(S) @ Vh
assert torch.allclose(rebuilt, m)
L = torch.linalg.cholesky(m)
tri = torch.triu(m, diagonal=1) + torch.tril(m, diagonal=-1)
eye_like = torch.eye(3, dtype=torch.float64)
values = torch.tensor([3, 1, 4, 1, 5, 9, 2, 6, 5, 3])
uniq, counts = torch.unique(values, return_counts=True)
srt = torch.sort(values)
arg = torch.argsort(values, descending=True, stable=True)
med = values.float().median()
q90 = values.float().quantile(0.9)
cums = values.cumsum(0)
rep = torch.repeat_interleave(torch.tensor([1, 2]), torch.tensor([2, 3]))
crossed = torch.cross(torch.tensor([[1.0, 0, 0]]), torch.tensor([[0.0, 1, 0]]), dim=1)
special = torch.erf(torch.tensor([0.0, 0.5, 1.0]))
inv_special = torch.erfinv(special)
logs = torch.log2(torch.tensor([1.0, 8.0])), torch.log10(torch.tensor([100.0])), torch.expm1(torch.tensor([1e-5]))
nan_fixed = torch.nan_to_num(torch.tensor([float("nan"), float("inf"), 1.0]), posinf=10.0)
close = torch.isclose(torch.tensor([1.0, 2.0]), torch.tensor([1.0 + 1e-9, 2.1]))
bmm = torch.baddbmm(torch.zeros(2, 2, 2), torch.ones(2, 2, 3), torch.ones(2, 3, 2), alpha=0.5)
added = torch.addmm(torch.ones(2, 2), torch.ones(2, 3), torch.ones(3, 2), beta=2)
h = torch.histc(torch.tensor([1.0, 2.0, 1.0, 4.0]), bins=4, min=0, max=4)
hyper = torch.tensor([0.3]).cosh() - torch.tensor([0.3]).sinh()
try:
    torch.zeros(2, 2, dtype=torch.float64).inverse()
    err = None
except RuntimeError:
    err = "RuntimeError"
"""

PROGRAMS["in_place_and_views"] = """
base = torch.arange(6.0)
view = base.view(2, 3)
view[0, 0] = 100.0
shares = base[0].item()
col = view[:, 1]
col.mul_(2)
seen = base.tolist()
x = torch.zeros(3, 4)
x.index_add_(0, torch.tensor([0, 2, 0]), torch.ones(3, 4))
x.masked_fill_(x > 1, -1.0)
x.unsqueeze_(0)
shape_after = x.shape
x.squeeze_(0)
x.t_()
is_contig = x.is_contiguous()
y = x.contiguous()
same_storage = x.storage().data_ptr() == y.storage().data_ptr()
z = torch.zeros(5)
z.index_copy_(0, torch.tensor([4, 0]), torch.tensor([1.0, 2.0]))
z.clamp_min_(0.5).sqrt_()
k = torch.ones(2, 2)
k.fill_diagonal_(3.0)
k.tanh_()
scattered = torch.zeros(4).masked_scatter(torch.tensor([True, False, True, False]), torch.tensor([7.0, 8.0]))
tril_inplace = torch.ones(3, 3).tril_()
clone = tril_inplace.clone()
clone[0, 0] = -5
untouched = tril_inplace[0, 0].item()
assert untouched == 1.0
"""

PROGRAMS["sparse_recommender"] = """
user_ids = torch.tensor([0, 0, 1, 2, 2, 2])
item_ids = torch.tensor([1, 3, 0, 1, 2, 3])
ratings = torch.tensor([5.0, 3.0, 4.0, 2.0, 1.0, 4.0])
R = torch.sparse_coo_tensor(torch.stack([user_ids, item_ids]), ratings, (3, 4))
print(R)
dense = R.to_dense()
print(dense)
nnz = R._nnz()
dup = torch.sparse_coo_tensor(torch.tensor([[0, 0], [1, 1]]), torch.tensor([1.0, 2.0]), (2, 2))
merged = dup.coalesce()
print(merged)
merged_values = merged.values()
merged_indices = merged.indices()
item_emb = torch.linspace(-1, 1, 8).reshape(4, 2).requires_grad_()
user_vec = torch.sparse.mm(R, item_emb)
score = user_vec.pow(2).sum()
score.backward()
emb_grad = item_emb.grad
doubled = (R * 2.0).to_dense()
summed = (R + R).to_dense()
total = torch.sparse.sum(R)
back = dense.to_sparse()
same = torch.equal(back.to_dense(), dense)
assert same
is_sp = R.is_sparse and not dense.is_sparse
"""

PROGRAMS["legacy_and_devices"] = """
v = torch.autograd.Variable(torch.ones(2), requires_grad=True)
out = (v * 4).sum()
out.backward()
legacy_grad = v.grad
ft = torch.FloatTensor(2, 3).zero_()
lt = torch.LongTensor([1, 2, 3])
checks = isinstance(ft, torch.FloatTensor), isinstance(lt, torch.FloatTensor), isinstance(lt, torch.LongTensor)
dt = torch.DoubleTensor([[1.0, 2.0]])
dev = torch.get_default_device()
with torch.device("cpu"):
    made = torch.zeros(2)
made_dev = made.device
count = torch.accelerator.device_count() >= 0
gen = torch.Generator().manual_seed(5)
state = gen.initial_seed()
torch.manual_seed(0)
noise = torch.empty(3, 2).normal_(0.0, 1.0)  # random
probs = torch.tensor([0.1, 0.0, 0.9])
picked = torch.multinomial(probs, 2)  # random
coin = torch.bernoulli(torch.full((4,), 0.5))  # random
uniform = torch.empty(4).uniform_(-1, 1)  # random
in_range = bool(((uniform >= -1) & (uniform < 1)).all())
"""


# -- the runner ------------------------------------------------------------------------------
def _bound_names(stmt):
    names = []
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.append(node.id)
    return list(dict.fromkeys(names))


def _statements(src):
    """(statement, its text, compare loosely?): `# random` and `# environment` lines (the
    accelerator found) are compared by type and shape only."""
    lines = src.strip("\n").splitlines()
    for stmt in ast.parse(src.strip("\n")).body:
        text = "\n".join(lines[stmt.lineno - 1 : stmt.end_lineno])
        yield stmt, text, text.rstrip().endswith(("# random", "# environment"))


def _printed(text, host_only_peer):
    """Printed text in torch's spelling. Object addresses differ between any two runs;
    when torch ran without an accelerator and ours found one (the emulated cuda of the
    tests), the device suffix of a repr is where the host run and ours part ways."""
    text = re.sub(r" at 0x[0-9a-f]+", " at 0x", text.replace("gpu_tensor.", "torch."))
    if host_only_peer:
        text = re.sub(r", device='cuda(:\d+)?'", "", text)
    return text


def _run(ns, stmt, text):
    """(printed text, exception class name or None)."""
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            exec(compile(ast.Module([stmt], []), "<program>", "exec"), ns)  # noqa: S102
    except Exception as exc:  # noqa: BLE001  (compared with the other side's outcome)
        return buf.getvalue(), type(exc).__name__
    return buf.getvalue(), None


def _namespace(torch):
    return {"torch": torch, "np": np, "math": math}


def _dtype_name(d):
    return str(d).rsplit(".", 1)[-1]


def _same(a, b, loose):
    """Does gpu_tensor's value `a` match torch's `b`? (loose: shapes and dtypes only)"""
    if type(b).__name__ == "Tensor" and type(b).__module__.startswith("torch"):
        if getattr(a, "is_sparse", False) != b.is_sparse:
            return False
        if b.is_sparse:
            a, b = a.to_dense(), b.to_dense()
        if not isinstance(a, gpu_tensor.Tensor):
            return False
        if tuple(a.shape) != tuple(b.shape) or _dtype_name(a.dtype) != _dtype_name(b.dtype):
            return False
        if a.requires_grad != b.requires_grad:
            return False
        if loose:
            return True
        return np.allclose(
            a.detach().cpu().numpy(), b.detach().cpu().numpy(), rtol=1e-4, atol=1e-5, equal_nan=True
        )
    if isinstance(b, (tuple, list)):
        return (
            isinstance(a, (tuple, list))
            and len(a) == len(b)
            and all(_same(x, y, loose) for x, y in zip(a, b, strict=True))
        )
    if type(b).__name__ in ("dtype", "device", "layout", "Size"):
        return str(a).replace("gpu_tensor.", "torch.") == str(b)
    if isinstance(b, (bool, int, float, complex, str, type(None))):
        if loose:
            return type(a) is type(b)
        if isinstance(b, float) and isinstance(a, float):
            return math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-8) or (a != a and b != b)
        return a == b and type(a) is type(b)
    return True  # objects with no torch counterpart to compare (generators, functions)


def _compare_program(torch, src):
    ours, theirs = _namespace(gpu_tensor), _namespace(torch)
    host_only = not torch.accelerator.is_available()
    results = []
    for stmt, text, loose in _statements(src):
        out_a, err_a = _run(ours, stmt, text)
        out_b, err_b = _run(theirs, stmt, text)
        ok = err_a == err_b
        if ok and not loose:
            ok = _printed(out_a, host_only) == _printed(out_b, False)
        if ok and err_a is None:
            for name in _bound_names(stmt):
                if name in theirs and not _same(ours.get(name), theirs[name], loose):
                    ok = False
        results.append((text, ok, err_a, err_b, out_a, out_b))
    return results


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_runs_with_gpu_tensor_as_torch(name):
    """Without torch: every statement runs and the programs' own asserts hold."""
    ns = _namespace(gpu_tensor)
    for stmt, text, _ in _statements(PROGRAMS[name]):
        _, err = _run(ns, stmt, text)
        assert err is None, f"{name}: {text!r} raised {err}"


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch's TypedStorage/sparse notices
def test_programs_match_torch():
    torch = pytest.importorskip("torch")
    total = matched = 0
    misses = []
    for name in sorted(PROGRAMS):
        for text, ok, err_a, err_b, out_a, out_b in _compare_program(torch, PROGRAMS[name]):
            total += 1
            matched += ok
            if not ok:
                misses.append(
                    f"{name}: {text!r} (ours: {err_a or out_a!r}, torch: {err_b or out_b!r})"
                )
    rate = matched / total
    print(
        f"\n{matched}/{total} statements match torch ({rate:.1%})"
        + "".join("\n  miss: " + m for m in misses)
    )
    assert rate >= 0.99, "\n".join(misses)
