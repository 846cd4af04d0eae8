"""The issue-28 layers against torch (skipped without it): each layer built in both
libraries with torch's parameters copied over, then forward outputs, input gradients and
parameter gradients compared, and the reprs compared."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import gpu_tensor as gt  # noqa: E402

RNG = np.random.default_rng(28)


def _arr(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _np(t):
    return t.detach().numpy()


def _copy_params(g, t):
    gp, tp = dict(g.named_parameters()), dict(t.named_parameters())
    assert list(gp) == list(tp)
    for name, p in gp.items():
        assert tuple(p.shape) == tuple(tp[name].shape), name
        with gt.no_grad():
            p.copy_(gt.tensor(_np(tp[name])))


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in _flat(o)]
    return [] if out is None else [out]


def compare(
    make_g, make_t, *inputs, kwargs=None, atol=1e-5, grad_atol=1e-4, train=True, constant=()
):
    """Build, copy parameters, run forward and backward of sum(out**2) in both. Float32
    inputs require grad unless their position is in `constant`."""
    kwargs = kwargs or {}
    g, t = make_g(), make_t()
    assert repr(g) == repr(t)
    _copy_params(g, t)
    g.train(train)
    t.train(train)
    need = [a.dtype == np.float32 and k not in constant for k, a in enumerate(inputs)]
    gx = [gt.tensor(a, requires_grad=r) for a, r in zip(inputs, need, strict=True)]
    tx = [torch.tensor(a, requires_grad=r) for a, r in zip(inputs, need, strict=True)]
    gk = {k: gt.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    tk = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    gouts, touts = _flat(g(*gx, **gk)), _flat(t(*tx, **tk))
    assert len(gouts) == len(touts)
    for a, b in zip(gouts, touts, strict=True):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(_np(a), _np(b), atol=atol, rtol=atol)
    sum(((o * o).sum() for o in gouts), gt.tensor(0.0)).backward()
    sum(((o * o).sum() for o in touts), torch.tensor(0.0)).backward()
    for a, b in zip(gx, tx, strict=True):
        if b.grad is not None:
            np.testing.assert_allclose(
                a.grad.numpy(), b.grad.numpy(), atol=grad_atol, rtol=grad_atol
            )
    for (name, p), q in zip(g.named_parameters(), t.parameters(), strict=True):
        if q.grad is not None:
            np.testing.assert_allclose(
                p.grad.numpy(), q.grad.numpy(), atol=grad_atol, rtol=grad_atol, err_msg=name
            )
    return g, t


def _compare_module(make, shape, **tolerances):
    """compare() for a module written as its constructor call, e.g. "Conv2d(3, 4, 3)", on one
    random float32 input of `shape`."""
    compare(
        lambda: eval("gt.nn." + make),
        lambda: eval("torch.nn." + make),
        _arr(*shape),
        atol=1e-5,
        **tolerances,
    )


# -- recurrent ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "cls,kw",
    [
        ("LSTM", dict(num_layers=2, bidirectional=True, batch_first=True)),
        ("LSTM", dict(proj_size=3)),
        ("GRU", dict(num_layers=2, bidirectional=True)),
        ("GRU", dict(bias=False, batch_first=True)),
        ("RNN", dict(nonlinearity="relu", num_layers=2)),
        ("RNN", dict(bidirectional=True)),
    ],
)
def test_recurrent_layers(cls, kw):
    compare(
        lambda: getattr(gt.nn, cls)(5, 7, **kw),
        lambda: getattr(torch.nn, cls)(5, 7, **kw),
        _arr(4, 6, 5),
    )


def test_recurrent_with_initial_state_and_unbatched():
    h0, c0 = _arr(2, 3, 7), _arr(2, 3, 7)
    compare(lambda: gt.nn.GRU(5, 7, 2), lambda: torch.nn.GRU(5, 7, 2), _arr(4, 3, 5), h0)
    g, t = gt.nn.LSTM(5, 7), torch.nn.LSTM(5, 7)
    _copy_params(g, t)
    go, (gh, gc) = g(gt.tensor(_arr(4, 5)))
    to, (th, tc) = t(torch.tensor(_arr(4, 5)))
    assert tuple(go.shape) == tuple(to.shape) and tuple(gh.shape) == tuple(th.shape)
    gx, tx = _arr(4, 3, 5), None
    tx = gx.copy()
    go, (gh, gc) = g(gt.tensor(gx), (gt.tensor(h0[:1]), gt.tensor(c0[:1])))
    to, (th, tc) = t(torch.tensor(tx), (torch.tensor(h0[:1]), torch.tensor(c0[:1])))
    np.testing.assert_allclose(_np(gc), _np(tc), atol=1e-5)


@pytest.mark.parametrize("cls", ["LSTMCell", "GRUCell", "RNNCell"])
def test_cells(cls):
    compare(lambda: getattr(gt.nn, cls)(5, 7), lambda: getattr(torch.nn, cls)(5, 7), _arr(3, 5))
    compare(
        lambda: getattr(gt.nn, cls)(5, 7, bias=False),
        lambda: getattr(torch.nn, cls)(5, 7, bias=False),
        _arr(5),
    )


# -- attention ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"is_causal": True},
        {"scale": 0.3},
        {"attn_mask": RNG.random((4, 5)) > 0.3},
        {"attn_mask": _arr(4, 5)},
        {
            "attn_mask": np.array(
                [[True] * 5, [False] * 5, [True] * 5, [False, True, True, True, True]]
            )
        },
    ],
)
def test_scaled_dot_product_attention(kw):
    q, k, v = _arr(2, 3, 4, 8), _arr(2, 3, 5, 8), _arr(2, 3, 5, 6)
    gi = [gt.tensor(a, requires_grad=True) for a in (q, k, v)]
    ti = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    gk = {a: gt.tensor(b) if isinstance(b, np.ndarray) else b for a, b in kw.items()}
    tk = {a: torch.tensor(b) if isinstance(b, np.ndarray) else b for a, b in kw.items()}
    go = gt.nn.functional.scaled_dot_product_attention(*gi, **gk)
    to = torch.nn.functional.scaled_dot_product_attention(*ti, **tk)
    np.testing.assert_allclose(_np(go), _np(to), atol=1e-5)
    (go * go).sum().backward()
    (to * to).sum().backward()
    for a, b in zip(gi, ti, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-4)


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(batch_first=True),
        dict(kdim=6, vdim=5),
        dict(add_bias_kv=True, add_zero_attn=True),
    ],
)
@pytest.mark.parametrize("extra", ["plain", "masks", "no_weights", "per_head"])
def test_multihead_attention(kw, extra):
    x, kx, vx = _arr(4, 3, 8), _arr(5, 3, kw.get("kdim", 8)), _arr(5, 3, kw.get("vdim", 8))
    if kw.get("batch_first"):
        x, kx, vx = (np.ascontiguousarray(a.transpose(1, 0, 2)) for a in (x, kx, vx))
    kpm = np.zeros((3, 5), bool)
    kpm[0, 4] = True
    am = RNG.random((4, 5)) > 0.8
    extra = {
        "plain": {},
        "masks": dict(key_padding_mask=kpm, attn_mask=am),
        "no_weights": dict(need_weights=False, attn_mask=am),
        "per_head": dict(average_attn_weights=False),
    }[extra]
    compare(
        lambda: gt.nn.MultiheadAttention(8, 2, **kw),
        lambda: torch.nn.MultiheadAttention(8, 2, **kw),
        x,
        kx,
        vx,
        kwargs=extra,
    )


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("train", [False, True])
def test_transformer_layers(norm_first, train):
    kw = dict(dim_feedforward=16, dropout=0.0, norm_first=norm_first)
    compare(
        lambda: gt.nn.TransformerEncoderLayer(8, 2, **kw),
        lambda: torch.nn.TransformerEncoderLayer(8, 2, **kw),
        _arr(4, 3, 8),
        train=train,
        atol=1e-4,
        grad_atol=1e-3,
    )
    compare(
        lambda: gt.nn.TransformerDecoderLayer(8, 2, **kw),
        lambda: torch.nn.TransformerDecoderLayer(8, 2, **kw),
        _arr(4, 3, 8),
        _arr(5, 3, 8),
        train=train,
        atol=1e-4,
        grad_atol=1e-3,
    )


def test_transformer_stacks():
    mask = np.triu(np.full((4, 4), -np.inf, np.float32), 1)
    compare(
        lambda: gt.nn.TransformerEncoder(
            gt.nn.TransformerEncoderLayer(8, 2, 16, 0.0), 2, gt.nn.LayerNorm(8)
        ),
        lambda: torch.nn.TransformerEncoder(
            torch.nn.TransformerEncoderLayer(8, 2, 16, 0.0),
            2,
            torch.nn.LayerNorm(8),
            enable_nested_tensor=False,
        ),
        _arr(4, 3, 8),
        kwargs=dict(mask=mask),
        atol=1e-4,
        grad_atol=1e-3,
    )
    compare(
        lambda: gt.nn.Transformer(8, 2, 1, 1, 16, 0.0, batch_first=True),
        lambda: torch.nn.Transformer(8, 2, 1, 1, 16, 0.0, batch_first=True),
        _arr(3, 5, 8),
        _arr(3, 4, 8),
        kwargs=dict(tgt_mask=mask),
        atol=1e-4,
        grad_atol=1e-3,
    )
    np.testing.assert_array_equal(
        gt.nn.Transformer.generate_square_subsequent_mask(3).numpy(),
        torch.nn.Transformer.generate_square_subsequent_mask(3).numpy(),
    )


# -- convolution, normalisation, resampling, padding ---------------------------------------
@pytest.mark.parametrize(
    "make,shape",
    [
        ("Conv1d(4, 6, 3)", (2, 4, 9)),
        ("Conv1d(4, 6, 3, stride=2, padding=2, dilation=2, groups=2, bias=False)", (2, 4, 9)),
        ("Conv1d(4, 6, 3, padding='same', padding_mode='reflect')", (4, 9)),
        ("Conv1d(4, 6, 4, padding=1, padding_mode='circular')", (2, 4, 9)),
        ("ConvTranspose2d(4, 6, 3)", (2, 4, 5, 5)),
        ("ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)", (2, 4, 5, 4)),
        (
            "ConvTranspose2d(4, 2, (3, 2), stride=(2, 1), padding=(2, 0), dilation=2, bias=False)",
            (4, 6, 5),
        ),
        ("ConvTranspose1d(4, 6, 3, stride=3, padding=1)", (2, 4, 5)),
        ("GroupNorm(2, 6)", (3, 6, 4, 2)),
        ("GroupNorm(3, 6, affine=False)", (3, 6, 5)),
        ("InstanceNorm2d(3)", (2, 3, 4, 5)),
        ("InstanceNorm2d(3, affine=True, track_running_stats=True)", (2, 3, 4, 5)),
        ("InstanceNorm1d(3, affine=True)", (3, 5)),
        ("RMSNorm(5)", (2, 3, 5)),
        ("RMSNorm([3, 5], eps=1e-3, elementwise_affine=False)", (2, 3, 5)),
        ("BatchNorm2d(3, bias=False)", (4, 3, 2, 2)),
        ("Upsample(scale_factor=2)", (2, 3, 4, 5)),
        ("Upsample(size=(7, 3), mode='nearest-exact')", (2, 3, 4, 5)),
        ("Upsample(scale_factor=1.7, mode='bilinear')", (2, 3, 4, 5)),
        ("Upsample(size=(7, 9), mode='bilinear', align_corners=True)", (2, 3, 4, 5)),
        ("Upsample(scale_factor=2.5, mode='linear')", (2, 3, 5)),
        ("UpsamplingBilinear2d(scale_factor=2)", (1, 2, 3, 3)),
        ("PixelShuffle(2)", (2, 8, 3, 4)),
        ("PixelUnshuffle(2)", (2, 2, 4, 6)),
        ("Unflatten(1, (2, 3))", (4, 6, 5)),
        ("ZeroPad2d((1, 2, 0, 3))", (2, 3, 4, 4)),
        ("ConstantPad1d(2, 3.5)", (2, 3, 4)),
        ("ConstantPad3d((1, 0, 2, 1, 0, 1), -1.0)", (1, 2, 3, 3, 3)),
        ("ReflectionPad1d((2, 1))", (2, 3, 4)),
        ("ReflectionPad2d(1)", (2, 3, 4, 4)),
        ("ReplicationPad2d((1, 2, 3, 0))", (3, 4, 4)),
        ("ReplicationPad3d(1)", (1, 2, 3, 3, 3)),
        ("CircularPad2d(1)", (2, 3, 4, 4)),
        ("Dropout2d(0.0)", (2, 3, 4, 4)),
    ],
)
def test_layer(make, shape):
    _compare_module(make, shape, grad_atol=2e-4)


def test_conv_transpose_output_size():
    g, t = gt.nn.ConvTranspose2d(2, 3, 3, stride=2), torch.nn.ConvTranspose2d(2, 3, 3, stride=2)
    _copy_params(g, t)
    x = _arr(1, 2, 4, 4)
    a = g(gt.tensor(x), output_size=[10, 9])
    b = t(torch.tensor(x), output_size=[10, 9])
    np.testing.assert_allclose(_np(a), _np(b), atol=1e-5)


def test_instance_norm_running_stats():
    g = gt.nn.InstanceNorm2d(3, track_running_stats=True)
    t = torch.nn.InstanceNorm2d(3, track_running_stats=True)
    x = _arr(2, 3, 4, 5)
    g(gt.tensor(x))
    t(torch.tensor(x))
    np.testing.assert_allclose(g.running_mean.numpy(), t.running_mean.numpy(), atol=1e-6)
    np.testing.assert_allclose(g.running_var.numpy(), t.running_var.numpy(), atol=1e-6)
    g.eval()
    t.eval()
    np.testing.assert_allclose(_np(g(gt.tensor(x))), _np(t(torch.tensor(x))), atol=1e-5)


# -- losses --------------------------------------------------------------------------------
def _sign(*shape):
    return np.where(RNG.random(shape) > 0.5, 1.0, -1.0).astype(np.float32)


@pytest.mark.parametrize(
    "make,inputs",
    [
        (
            "KLDivLoss(reduction='batchmean')",
            lambda: (
                np.log(RNG.dirichlet(np.ones(5), 4)).astype(np.float32),
                RNG.dirichlet(np.ones(5), 4).astype(np.float32),
            ),
        ),
        ("KLDivLoss(reduction='sum', log_target=True)", lambda: (_arr(4, 5), _arr(4, 5))),
        (
            "KLDivLoss(reduction='none')",
            lambda: (
                _arr(4, 5),
                np.where(RNG.random((4, 5)) > 0.3, RNG.random((4, 5)), 0).astype(np.float32),
            ),
        ),
        ("HuberLoss(delta=0.7)", lambda: (_arr(4, 5), _arr(4, 5))),
        ("HuberLoss(reduction='sum')", lambda: (_arr(4, 5), 3 * _arr(4, 5))),
        ("SmoothL1Loss(beta=0.5)", lambda: (_arr(4, 5), _arr(4, 5))),
        ("CosineEmbeddingLoss(margin=0.2)", lambda: (_arr(6, 5), _arr(6, 5), _sign(6))),
        ("MarginRankingLoss(margin=0.3, reduction='sum')", lambda: (_arr(6), _arr(6), _sign(6))),
        ("TripletMarginLoss()", lambda: (_arr(4, 5), _arr(4, 5), _arr(4, 5))),
        (
            "TripletMarginLoss(margin=0.5, p=1, swap=True, reduction='none')",
            lambda: (_arr(4, 5), _arr(4, 5), _arr(4, 5)),
        ),
        ("HingeEmbeddingLoss(margin=0.5)", lambda: (_arr(4, 5), _sign(4, 5))),
        ("SoftMarginLoss()", lambda: (_arr(4, 5), _sign(4, 5))),
        ("PoissonNLLLoss()", lambda: (_arr(4, 5), 3 * RNG.random((4, 5)).astype(np.float32))),
        (
            "PoissonNLLLoss(log_input=False, full=True)",
            lambda: (
                RNG.random((4, 5)).astype(np.float32) + 0.1,
                3 * RNG.random((4, 5)).astype(np.float32),
            ),
        ),
        (
            "GaussianNLLLoss(full=True)",
            lambda: (_arr(4, 5), _arr(4, 5), RNG.random((4, 5)).astype(np.float32) + 0.1),
        ),
        ("CosineSimilarity(dim=1)", lambda: (_arr(4, 5), _arr(4, 5))),
        ("PairwiseDistance(p=3)", lambda: (_arr(4, 5), _arr(4, 5))),
    ],
)
def test_loss(make, inputs):
    constant = (1,) if make.startswith("SoftMargin") else ()  # torch: target takes no grad
    compare(
        lambda: eval("gt.nn." + make),
        lambda: eval("torch.nn." + make),
        *inputs(),
        atol=1e-5,
        grad_atol=1e-4,
        constant=constant,
    )


# -- containers and lazy modules -----------------------------------------------------------
def test_parameter_containers_and_lazy_linear():
    gl = gt.nn.ParameterList([gt.nn.Parameter(gt.zeros(2, 3)), gt.zeros(4)])
    tl = torch.nn.ParameterList([torch.nn.Parameter(torch.zeros(2, 3)), torch.zeros(4)])
    assert repr(gl) == repr(tl).replace("torch.", "gpu_tensor.")
    assert [n for n, _ in gl.named_parameters()] == [n for n, _ in tl.named_parameters()]
    gd = gt.nn.ParameterDict({"a": gt.nn.Parameter(gt.zeros(2, 3)), "b": gt.zeros(4)})
    td = torch.nn.ParameterDict({"a": torch.nn.Parameter(torch.zeros(2, 3)), "b": torch.zeros(4)})
    assert repr(gd) == repr(td).replace("torch.", "gpu_tensor.")
    assert list(gd.state_dict()) == list(td.state_dict())
    g, t = gt.nn.LazyLinear(4), torch.nn.LazyLinear(4)
    assert repr(g) == repr(t) and repr(g.weight) == repr(t.weight)
    g(gt.zeros(2, 3))
    t(torch.zeros(2, 3))
    assert repr(g) == repr(t) and type(g).__name__ == type(t).__name__ == "Linear"
    assert tuple(g.weight.shape) == tuple(t.weight.shape) == (4, 3)


# -- node names ----------------------------------------------------------------------------
def _graph(fn):
    if fn is None:
        return None
    return (fn.name(), [_graph(f) for f, _ in fn.next_functions])


@pytest.mark.parametrize(
    "expr",
    [
        "F.mse_loss(a, b)",
        "F.cross_entropy(a, t)",
        "F.cross_entropy(a, p)",
        "F.binary_cross_entropy_with_logits(a, p)",
        "F.linear(a, w, bias)",
        "F.linear(a.unsqueeze(0), w, bias)",
        "F.nll_loss(F.log_softmax(a, 1), t)",
        "F.layer_norm(a, (3,), w[0], bias[:3])",
        "F.huber_loss(a, b)",
        "F.smooth_l1_loss(a, b)",
        "F.embedding(t, w)",
        "F.pad(a, (1, 2))",
        "F.leaky_relu(a) + F.elu(a) + F.softplus(a)",
    ],
)
def test_node_graphs_match_torch(expr):
    graphs = []
    for lib in (gt, torch):
        names = dict(
            F=lib.nn.functional,
            a=lib.tensor(_arr(4, 3), requires_grad=True),
            b=lib.tensor(_arr(4, 3)),
            t=lib.tensor([0, 1, 2, 0]),
            p=lib.tensor(RNG.random((4, 3)).astype(np.float32)),
            w=lib.tensor(_arr(5, 3), requires_grad=True),
            bias=lib.tensor(_arr(5), requires_grad=True),
        )
        graphs.append(_graph(eval(expr, names).grad_fn))
    assert graphs[0] == graphs[1]


# -- packed sequences ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "cls,kw,enforce_sorted",
    [
        ("LSTM", dict(num_layers=2, bidirectional=True), False),
        ("GRU", dict(batch_first=True), True),
        ("RNN", dict(bidirectional=True), False),
    ],
)
def test_packed_sequences(cls, kw, enforce_sorted):
    lengths = [5, 3, 2] if enforce_sorted else [2, 5, 3]
    x = _arr(5, 3, 4)
    if kw.get("batch_first"):
        x = np.ascontiguousarray(x.transpose(1, 0, 2))
    g, t = getattr(gt.nn, cls)(4, 6, **kw), getattr(torch.nn, cls)(4, 6, **kw)
    _copy_params(g, t)
    gx, tx = gt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    gp = gt.nn.utils.rnn.pack_padded_sequence(
        gx, lengths, kw.get("batch_first", False), enforce_sorted
    )
    tp = torch.nn.utils.rnn.pack_padded_sequence(
        tx, lengths, kw.get("batch_first", False), enforce_sorted
    )
    np.testing.assert_array_equal(_np(gp.data), _np(tp.data))
    assert gp.batch_sizes.tolist() == tp.batch_sizes.tolist()
    go, gh = g(gp)
    to, th = t(tp)
    np.testing.assert_allclose(_np(go.data), _np(to.data), atol=1e-5)
    for a, b in zip(_flat(gh), _flat(th), strict=True):
        np.testing.assert_allclose(_np(a), _np(b), atol=1e-5)
    gpad, glen = gt.nn.utils.rnn.pad_packed_sequence(go, batch_first=True)
    tpad, tlen = torch.nn.utils.rnn.pad_packed_sequence(to, batch_first=True)
    np.testing.assert_allclose(_np(gpad), _np(tpad), atol=1e-5)
    assert glen.tolist() == tlen.tolist()
    (gpad * gpad).sum().backward()
    (tpad * tpad).sum().backward()
    np.testing.assert_allclose(gx.grad.numpy(), tx.grad.numpy(), atol=1e-4)


def test_pad_sequence_and_clip_grad():
    seqs = [_arr(3, 2), _arr(5, 2), _arr(1, 2)]
    for kw in (dict(), dict(batch_first=True, padding_value=-1.0, padding_side="left")):
        a = gt.nn.utils.rnn.pad_sequence([gt.tensor(s) for s in seqs], **kw)
        b = torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in seqs], **kw)
        np.testing.assert_array_equal(_np(a), _np(b))
    g, t = gt.nn.Linear(3, 4), torch.nn.Linear(3, 4)
    _copy_params(g, t)
    x = _arr(5, 3) * 10
    (g(gt.tensor(x)) ** 2).sum().backward()
    (t(torch.tensor(x)) ** 2).sum().backward()
    for nt in (2.0, 1.0, float("inf")):
        gp = [p.grad.clone() for p in g.parameters()]
        n1 = gt.nn.utils.clip_grad_norm_(g.parameters(), 0.5, nt)
        n2 = torch.nn.utils.clip_grad_norm_(t.parameters(), 0.5, nt)
        np.testing.assert_allclose(float(n1), float(n2), rtol=1e-5)
        for p, q in zip(g.parameters(), t.parameters(), strict=True):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
        assert gp  # gradients were present to clip


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss(reduction, zero_infinity):
    steps, batch, classes = 9, 4, 5
    lp = _arr(steps, batch, classes)
    lp = lp - np.log(np.exp(lp).sum(-1, keepdims=True))
    targets = RNG.integers(1, classes, (batch, 4))
    targets[1, 1] = targets[1, 0]  # a repeated label needs a blank between
    il, tl = [9, 7, 2, 9], [4, 3, 2, 0]  # sample 2 cannot align (inf / zero_infinity)
    a, b = gt.tensor(lp, requires_grad=True), torch.tensor(lp, requires_grad=True)
    got = gt.nn.CTCLoss(reduction=reduction, zero_infinity=zero_infinity)(
        a, gt.tensor(targets), il, tl
    )
    want = torch.nn.CTCLoss(reduction=reduction, zero_infinity=zero_infinity)(
        b, torch.tensor(targets), il, tl
    )
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-5)
    if zero_infinity:
        got.sum().backward()
        want.sum().backward()
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-5)


@pytest.mark.parametrize(
    "make,shape",
    [
        ("CELU(0.7)", (3, 5)),
        ("SELU()", (3, 5)),
        ("GLU()", (3, 6)),
        ("GLU(dim=0)", (4, 3)),
        ("Hardshrink(0.3)", (3, 5)),
        ("Softshrink()", (3, 5)),
        ("Hardsigmoid()", (3, 5)),
        ("Hardswish()", (3, 5)),
        ("LogSigmoid()", (3, 5)),
        ("Mish()", (3, 5)),
        ("PReLU()", (3, 5)),
        ("PReLU(4)", (2, 4, 3)),
        ("RReLU()", (3, 5)),
        ("Softmin(dim=1)", (3, 5)),
        ("Softsign()", (3, 5)),
        ("Tanhshrink()", (3, 5)),
        ("Threshold(0.1, 20.0)", (3, 5)),
        ("Softmax2d()", (2, 3, 2, 2)),
        ("MaxPool1d(2)", (2, 3, 7)),
        ("MaxPool1d(3, stride=2, padding=1, ceil_mode=True)", (2, 3, 8)),
        ("AvgPool1d(3)", (2, 3, 7)),
        ("AvgPool1d(3, stride=2, padding=1)", (3, 8)),
        ("AdaptiveAvgPool1d(3)", (2, 3, 7)),
        ("AdaptiveMaxPool1d(4)", (2, 3, 7)),
        ("AdaptiveMaxPool2d((2, 3))", (2, 3, 5, 7)),
        ("BatchNorm3d(3)", (2, 3, 2, 2, 2)),
    ],
)
def test_more_layers(make, shape):
    # RReLU in eval uses the mean slope (training draws random slopes)
    _compare_module(make, shape, grad_atol=1e-4, train=not make.startswith("RReLU"))


def test_max_pool1d_indices_and_adaptive_max_indices():
    x = _arr(2, 3, 9)
    a = gt.nn.functional.max_pool1d(gt.tensor(x), 3, return_indices=True)
    b = torch.nn.functional.max_pool1d(torch.tensor(x), 3, return_indices=True)
    assert a[1].tolist() == b[1].tolist()
    y = _arr(2, 5, 7)
    a = gt.nn.functional.adaptive_max_pool2d(gt.tensor(y), (2, 3), return_indices=True)
    b = torch.nn.functional.adaptive_max_pool2d(torch.tensor(y), (2, 3), return_indices=True)
    assert a[1].tolist() == b[1].tolist()


# -- edge cases of the losses (ignored rows holding inf/NaN, no kept row) -----------------
_XI = np.random.default_rng(5).standard_normal((4, 5)).astype(np.float32)  # (RNG kept as is)
_XI[1, :] = np.inf
_XI[3, 2] = np.nan


@pytest.mark.parametrize("fn", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("target", [[1, -100, 4, -100], [-100] * 4])
def test_loss_ignored_rows_match_torch(fn, reduction, target):
    out = []
    for lib in (gt, torch):
        xv = _XI if target[0] != -100 else _XI[[0, 2]].repeat(2, 0)  # all ignored: finite
        x = lib.tensor(xv, requires_grad=True)
        loss = getattr(lib.nn.functional, fn)(x, lib.tensor(target), reduction=reduction)
        loss.backward(lib.ones_like(loss))
        out.append((_np(loss.detach()), _np(x.grad)))
    (gl, gg), (tl, tg) = out
    np.testing.assert_allclose(gl, tl, rtol=1e-6)
    assert (np.signbit(gl) == np.signbit(tl)).all()  # 'none': +0.0 in the ignored rows
    np.testing.assert_allclose(gg, tg, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("gdtype", ["float64", "float16"])
def test_linear_backward_with_a_gradient_of_another_dtype_matches_torch(gdtype):
    xv, wv, gv = _arr(4, 5), _arr(3, 5), _arr(4, 3)
    out = []
    for lib in (gt, torch):
        x, w = lib.tensor(xv, requires_grad=True), lib.tensor(wv, requires_grad=True)
        lib.nn.functional.linear(x, w).backward(lib.tensor(gv, dtype=getattr(lib, gdtype)))
        out.append((x.grad, w.grad))
    for a, b in zip(*out, strict=True):
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1] == "float32"
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize(("shape", "dim"), [((3, 0), 1), ((3, 0), -1), ((0, 3), 0), ((0,), 0)])
def test_softmax_of_an_empty_tensor_matches_torch(fn, shape, dim):
    out = []
    for lib in (gt, torch):
        x = lib.zeros(shape, requires_grad=True)
        y = getattr(lib.nn.functional, fn)(x, dim)
        y.backward(lib.ones_like(y))
        out.append((tuple(y.shape), str(y.dtype)[-7:], y.grad_fn.name(), tuple(x.grad.shape)))
    assert out[0] == out[1]


@pytest.mark.parametrize("tdtype", ["int64", "uint8", "int32", "float32"])
def test_nll_targets_and_create_graph_match_torch(tdtype):
    out = []
    for lib in (gt, torch):
        x = lib.tensor(_arr(4, 5).astype(np.float64), requires_grad=True)
        try:
            loss = lib.nn.functional.nll_loss(
                x, lib.tensor([1, 0, 2, 2], dtype=getattr(lib, tdtype))
            )
        except RuntimeError as e:
            out.append(str(e))
            continue
        (g,) = lib.autograd.grad(loss, x, create_graph=True)
        out.append((g.grad_fn.name(), [f is None for f, _ in g.grad_fn.next_functions]))
    assert out[0] == out[1]
