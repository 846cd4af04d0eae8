"""Grad-mode managers in every form real torch code uses them: bare decorators (`@no_grad`),
`inference_mode` and `is_inference_mode_enabled`. Expected values recorded from torch 2.13."""

import threading

import pytest

import gpu_tensor as gt


def _double(x):
    return x * 2


@pytest.mark.parametrize(
    "deco, records",
    [
        (gt.no_grad, False),
        (gt.no_grad(), False),
        (gt.enable_grad, True),
        (gt.enable_grad(), True),
        (gt.inference_mode, False),
        (gt.inference_mode(), False),
        (gt.inference_mode(mode=False), True),
    ],
)
def test_decorators_with_and_without_parentheses(deco, records):
    x = gt.ones(2, requires_grad=True)
    f = deco(_double)
    assert f.__name__ == "_double"
    assert f(x).requires_grad is records
    assert gt.is_grad_enabled() and not gt.is_inference_mode_enabled()  # restored


def test_inference_mode_sets_grad_mode_and_its_flag_and_restores_both():
    x = gt.ones(2, requires_grad=True)
    with gt.inference_mode():
        assert gt.is_inference_mode_enabled() and not gt.is_grad_enabled()
        assert not (x * 2).requires_grad
        with gt.inference_mode(False):  # torch's guard: grad mode on, flag off
            assert not gt.is_inference_mode_enabled() and gt.is_grad_enabled()
        assert gt.is_inference_mode_enabled() and not gt.is_grad_enabled()
    with gt.no_grad(), gt.inference_mode(False):
        assert gt.is_grad_enabled()
    assert gt.is_grad_enabled() and not gt.is_inference_mode_enabled()
    assert gt.autograd.inference_mode is gt.inference_mode


def test_the_inference_flag_is_per_thread():
    seen = []
    with gt.inference_mode():
        t = threading.Thread(target=lambda: seen.append(gt.is_inference_mode_enabled()))
        t.start()
        t.join()
    assert seen == [False]


def test_a_non_function_argument_is_refused_with_the_forms_that_work():
    with pytest.raises(TypeError, match=r"no_grad\(\) takes no arguments .*@no_grad"):
        gt.no_grad(3)


def test_parity_with_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, gt):
        x = lib.ones(2, requires_grad=True)
        got = [lib.no_grad(_double)(x).requires_grad, lib.inference_mode(_double)(x).requires_grad]
        with lib.inference_mode():
            got += [lib.is_inference_mode_enabled(), lib.is_grad_enabled()]
            with lib.inference_mode(False):
                got += [lib.is_inference_mode_enabled(), lib.is_grad_enabled()]
        if lib is torch:
            expected = got
        else:
            assert got == expected
