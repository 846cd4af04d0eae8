"""Training parity with torch (skipped without it): the same MLP and CNN, from the same
weights and batches, trained 20 steps with each optimizer on cpu and on cuda (fused steps);
losses and final weights agree within float32 tolerance."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import gpu_tensor as gt  # noqa: E402

STEPS = 20
OPTIMIZERS = {
    "SGD": dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3),
    "Adam": dict(lr=3e-3, amsgrad=True),
    "AdamW": dict(lr=3e-3, weight_decay=0.05),
    "RMSprop": dict(lr=1e-3, momentum=0.5, centered=True),
}


def _mlp(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Linear(12, 32), nn.GELU(), nn.LayerNorm(32), nn.Dropout(0.0), nn.Linear(32, 5)
    )


def _cnn(lib):
    nn = lib.nn
    # no bias before BatchNorm: its gradient is zero up to rounding, which Adam would
    # normalise into full-size steps of noise (in torch as well)
    return nn.Sequential(
        nn.Conv2d(3, 6, 3, padding=1, bias=False),
        nn.BatchNorm2d(6),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(6, 8, 3, stride=2, groups=2),
        nn.SiLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(8, 5),
    )


MODELS = {"mlp": (_mlp, (16, 12)), "cnn": (_cnn, (8, 3, 10, 10))}


def _train(lib, model, opt_name, device, batches, loss_kind):
    F = lib.nn.functional
    opt = getattr(lib.optim, opt_name)(model.parameters(), **OPTIMIZERS[opt_name])
    sched = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=STEPS)
    losses = []
    for x, y in batches:
        if lib is gt:
            x, y = gt.tensor(x, device=device), gt.tensor(y, device=device)
        else:
            x, y = torch.tensor(x), torch.tensor(y)
        opt.zero_grad()
        out = model(x)
        loss = (
            F.cross_entropy(out, y, label_smoothing=0.1)
            if loss_kind == "ce"
            else F.binary_cross_entropy_with_logits(out, F.one_hot(y, 5).float())
        )
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    return np.array(losses)


@pytest.mark.parametrize("opt_name", list(OPTIMIZERS))
@pytest.mark.parametrize("model_name", list(MODELS))
def test_training_matches_torch(device, model_name, opt_name):
    make, in_shape = MODELS[model_name]
    torch.manual_seed(0)
    ref = make(torch)
    ours = make(gt).to(device)
    ours.load_state_dict({k: gt.tensor(v.numpy()) for k, v in ref.state_dict().items()})
    rng = np.random.default_rng(1)
    batches = [
        (rng.standard_normal(in_shape).astype(np.float32), rng.integers(0, 5, in_shape[0]))
        for _ in range(STEPS)
    ]
    kind = "ce" if opt_name != "RMSprop" else "bce"
    got = _train(gt, ours, opt_name, device, batches, kind)
    want = _train(torch, ref, opt_name, device, batches, kind)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5)
    assert want[-1] < want[0]  # it trained
    theirs = ref.state_dict()
    for key, value in ours.state_dict().items():
        np.testing.assert_allclose(
            value.cpu().numpy(), theirs[key].numpy(), rtol=1e-3, atol=2e-5, err_msg=key
        )
