"""On the real CUDA backend (run over the simulated CuPy, which counts launches) the
recurrent gates and the attention softmax run as generated fused kernels: one launch per
fused function, where the same expression op by op launches one kernel per op."""

import pytest

import gpu_tensor as gt
from gpu_tensor import device as dv
from gpu_tensor.nn.functional import attention as A
from gpu_tensor.nn.functional import recurrent as R
from gpu_tensor.testing import requires_real_cuda


def _launches(fn):
    from gpu_tensor.testing import sim

    fn()  # warm: compiles and allocator growth stay out of the count
    sim.reset_counters()
    fn()
    return sim.counters()["kernel_launches"]


@requires_real_cuda
def test_lstm_gates_are_one_launch_per_output():
    if not dv.cuda_is_simulated():
        pytest.skip("counts launches through the simulated CuPy")
    i, f, g, o, c = (gt.randn(4, 8, device="cuda") for _ in range(5))
    fused = _launches(lambda: R.lstm_hidden(o, R.lstm_cell_state(i, f, g, c)))
    by_op = _launches(lambda: o.sigmoid() * (f.sigmoid() * c + i.sigmoid() * g.tanh()).tanh())
    assert fused == 2 and by_op >= 7, (fused, by_op)
    h = gt.randn(4, 8, device="cuda")
    assert _launches(lambda: R.gru_hidden(i, f, g, o, c, h, h)) == 1


@requires_real_cuda
def test_attention_softmax_fuses_its_elementwise_work():
    if not dv.cuda_is_simulated():
        pytest.skip("counts launches through the simulated CuPy")
    scores = gt.randn(2, 4, 5, 6, device="cuda")
    bias = gt.randn(5, 6, device="cuda")

    def by_op():
        x = scores * 0.5 + bias
        e = (x - x.amax(-1, keepdim=True)).exp()
        return e / e.sum(-1, keepdim=True)

    fused = _launches(lambda: A.attention_softmax(scores, bias, 0.5))
    by_op_count = _launches(by_op)
    # scale + mask, exp(x - max) and the divide: three elementwise kernels (the row max and
    # sum are reductions), against one per op (mul, add, sub, exp, div) unfused
    assert fused == 3 and by_op_count >= 5, (fused, by_op_count)
