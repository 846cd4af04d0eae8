"""The hostile-input catalogue: each case is a call written against a torch-like module `m`
on device `d`, and the exception class torch raises for it (None: torch returns a value,
and so must we, with torch's values). tests/test_bad_inputs.py runs it on every device and
against torch where installed; profiling/bad_input_verdicts.py counts the verdicts."""

from __future__ import annotations

import numpy as np

NAN, INF = float("nan"), float("inf")


class Case:
    """`fn(m, d)` calls module `m` (gpu_tensor or torch) on device `d`; `expect` is the
    class torch raises (None: it returns); `no_torch`: torch cannot run it as written."""

    __slots__ = ("name", "fn", "expect", "no_torch")

    def __init__(self, name, fn, expect, no_torch=False):
        self.name, self.fn, self.expect, self.no_torch = name, fn, expect, no_torch


CASES: list[Case] = []


def add(name, expect, fn, no_torch=False):
    CASES.append(Case(name, fn, expect, no_torch))


def _self_ref():
    lst = []
    lst.append(lst)
    return lst


def _deep(n):
    x = [1.0]
    for _ in range(n):
        x = [x]
    return x


def t23(m, d, dtype=None):
    return m.arange(6, device=d, dtype=dtype).reshape(2, 3)


def f23(m, d):
    return m.arange(6, device=d, dtype=m.float32).reshape(2, 3)


# -- tensor(): data and dtype ---------------------------------------------------------
add("tensor_nan_int64", RuntimeError, lambda m, d: m.tensor(NAN, dtype=m.int64, device=d))
add("tensor_inf_int32", RuntimeError, lambda m, d: m.tensor(INF, dtype=m.int32, device=d))
add(
    "tensor_list_nan_int64",
    RuntimeError,
    lambda m, d: m.tensor([1.0, NAN], dtype=m.int64, device=d),
)
add("tensor_int_overflow", ValueError, lambda m, d: m.tensor(2**63, device=d))
add("tensor_int_underflow", ValueError, lambda m, d: m.tensor(-(2**64), device=d))
add("tensor_int_overflow_int8", ValueError, lambda m, d: m.tensor(2**70, dtype=m.int8, device=d))
add("tensor_none", RuntimeError, lambda m, d: m.tensor(None, device=d))
add("tensor_list_none", RuntimeError, lambda m, d: m.tensor([1, None], device=d))
add("tensor_str", TypeError, lambda m, d: m.tensor("abc", device=d))
add("tensor_list_str_first", ValueError, lambda m, d: m.tensor(["a", 1], device=d))
add("tensor_list_str_later", TypeError, lambda m, d: m.tensor([1, "a"], device=d))
add("tensor_ragged", ValueError, lambda m, d: m.tensor([[1, 2], [3]], device=d))
add("tensor_ragged_scalar", TypeError, lambda m, d: m.tensor([[1], 2], device=d))
add("tensor_self_ref", ValueError, lambda m, d: m.tensor(_self_ref(), device=d))
add("tensor_deep_5000", ValueError, lambda m, d: m.tensor(_deep(5000), device=d))
add("tensor_ok_deep_40", None, lambda m, d: m.tensor(_deep(40), device=d))
add("tensor_dict", RuntimeError, lambda m, d: m.tensor({1: 2}, device=d))
add("tensor_object", RuntimeError, lambda m, d: m.tensor(object(), device=d))
add("tensor_bad_dtype_str", TypeError, lambda m, d: m.tensor([1], dtype="foo", device=d))
add("tensor_bad_dtype_obj", TypeError, lambda m, d: m.tensor([1], dtype=3, device=d))
add("tensor_bad_device", RuntimeError, lambda m, d: m.tensor([1], device="tpu"))
add("tensor_bad_device_index", RuntimeError, lambda m, d: m.tensor([1], device="cpu:x"))
add("tensor_bad_device_type", TypeError, lambda m, d: m.tensor([1], device=3.5))
add("tensor_ok_nested_tuple", None, lambda m, d: m.tensor(((1, 2), (3, 4)), device=d))
add("tensor_ok_float_to_int", None, lambda m, d: m.tensor([1.7, -2.7], dtype=m.int64, device=d))
add("tensor_ok_bool_mix", None, lambda m, d: m.tensor([True, 2, 3.5], device=d))
add("tensor_ok_np_scalars", None, lambda m, d: m.tensor([np.float64(1.5), np.int32(2)], device=d))
add("tensor_ok_empty", None, lambda m, d: m.tensor([], device=d))
add("tensor_ok_nested_empty", None, lambda m, d: m.tensor([[], []], device=d))
add("tensor_ok_complex", None, lambda m, d: m.tensor([1 + 2j], device=d))
add("tensor_ok_big_int_float", None, lambda m, d: m.tensor(2**70 * 1.0, device=d))
add("tensor_ok_int_to_float32", None, lambda m, d: m.tensor(2**63, dtype=m.float32, device=d))
add(
    "tensor_ok_masked",
    None,
    lambda m, d: m.tensor(np.ma.masked_array([1.0, 2.0], mask=[1, 0]), device=d),
)
add("tensor_float32_overflow_is_inf", None, lambda m, d: m.tensor(1e40, dtype=m.float32, device=d))

# -- sizes ----------------------------------------------------------------------------
for _fn in ("ones", "zeros", "empty", "rand", "randn"):
    add(f"{_fn}_float_size", TypeError, lambda m, d, f=_fn: getattr(m, f)((2.5,), device=d))
    add(f"{_fn}_str_size", TypeError, lambda m, d, f=_fn: getattr(m, f)("3", device=d))
    add(f"{_fn}_negative", RuntimeError, lambda m, d, f=_fn: getattr(m, f)(2, -3, device=d))
    add(f"{_fn}_none", TypeError, lambda m, d, f=_fn: getattr(m, f)(None, device=d))
    add(f"{_fn}_nested", TypeError, lambda m, d, f=_fn: getattr(m, f)([2, [3]], device=d))
    add(f"{_fn}_ok_np_int", None, lambda m, d, f=_fn: getattr(m, f)(np.int64(3), device=d).shape)
    add(f"{_fn}_ok_list", None, lambda m, d, f=_fn: getattr(m, f)([2, 3], device=d).shape)
add("ones_bool_size", TypeError, lambda m, d: m.ones(True, device=d))
add("ones_bool_in_tuple", None, lambda m, d: m.ones((2, False), device=d))
add("ones_np_float", TypeError, lambda m, d: m.ones(np.float64(2.7), device=d))
add("ones_np_float_tuple", TypeError, lambda m, d: m.ones((np.float32(2.0), 2), device=d))
add("ones_float_second", TypeError, lambda m, d: m.ones(2, 3.0, device=d))
add("ones_complex", TypeError, lambda m, d: m.ones(2j, device=d))
add("ones_size_tensor_float", TypeError, lambda m, d: m.ones(m.tensor(2.5), device=d))
add("ones_ok_size_tensor_int", None, lambda m, d: m.ones(m.tensor(3), device=d).shape)
add("ones_ok_zero", None, lambda m, d: m.ones(0, 3, device=d).shape)
add("ones_ok_empty_tuple", None, lambda m, d: m.ones((), device=d).shape)
add("ones_ok_np_bool_is_int", None, lambda m, d: m.ones(np.int8(2), device=d).shape)
add("empty_huge_cpu", RuntimeError, lambda m, d: m.empty(2**62, dtype=m.uint8), True)
add("ones_huge_product", RuntimeError, lambda m, d: m.ones(2**40, 2**40, device=d))
add("empty_overflow_int", TypeError, lambda m, d: m.empty(2**64, device=d))
add("full_float_size", TypeError, lambda m, d: m.full((2.5,), 1.0, device=d))
add("full_str_value", TypeError, lambda m, d: m.full((2,), "a", device=d))
add("full_none_value", TypeError, lambda m, d: m.full((2,), None, device=d))
add("full_overflow_f32", RuntimeError, lambda m, d: m.full((2,), 1e40, dtype=m.float32, device=d))
add("full_overflow_f16", RuntimeError, lambda m, d: m.full((2,), 1e5, dtype=m.float16, device=d))
add("full_nan_int", RuntimeError, lambda m, d: m.full((2,), NAN, dtype=m.int64, device=d))
add("full_overflow_uint8", RuntimeError, lambda m, d: m.full((2,), 300, dtype=m.uint8, device=d))
add("full_overflow_int8_neg", RuntimeError, lambda m, d: m.full((2,), -129, dtype=m.int8, device=d))
add("full_ok_inf_f32", None, lambda m, d: m.full((2,), INF, dtype=m.float32, device=d))
add("full_ok_nan_f32", None, lambda m, d: m.full((2,), NAN, device=d).isnan())
add("full_ok_trunc", None, lambda m, d: m.full((2,), 2.7, dtype=m.int64, device=d))
add("full_ok_bool", None, lambda m, d: m.full((2,), True, device=d))
add("full_ok_int_default", None, lambda m, d: m.full((2,), 3, device=d))
add("empty_strided_len", RuntimeError, lambda m, d: m.empty_strided((2, 3), (1,), device=d))
add("empty_strided_float", TypeError, lambda m, d: m.empty_strided((2.5,), (1,), device=d))

# -- ranges ---------------------------------------------------------------------------
add("arange_bool", NotImplementedError, lambda m, d: m.arange(5, dtype=m.bool, device=d))
add("arange_step0", RuntimeError, lambda m, d: m.arange(0, 10, 0, device=d))
add("arange_wrong_sign", RuntimeError, lambda m, d: m.arange(10, 0, device=d))
add("arange_inf", RuntimeError, lambda m, d: m.arange(INF, device=d))
add("arange_nan", RuntimeError, lambda m, d: m.arange(NAN, device=d))
add("arange_str", TypeError, lambda m, d: m.arange("3", device=d))
add("arange_none", TypeError, lambda m, d: m.arange(None, device=d))
add("arange_huge", RuntimeError, lambda m, d: m.arange(0, 1e300, 1e-300, device=d))
add("arange_ok_float", None, lambda m, d: m.arange(0, 1, 0.25, device=d))
add("arange_ok_neg", None, lambda m, d: m.arange(5, 0, -2, device=d))
add("arange_ok_uint8", None, lambda m, d: m.arange(5, dtype=m.uint8, device=d))
add("arange_ok_np", None, lambda m, d: m.arange(np.int64(4), device=d))
add("arange_ok_bool_arg", None, lambda m, d: m.arange(True, device=d))
add("linspace_float_steps", TypeError, lambda m, d: m.linspace(0, 1, 2.5, device=d))
add("linspace_str_steps", TypeError, lambda m, d: m.linspace(0, 1, "3", device=d))
add("linspace_neg_steps", RuntimeError, lambda m, d: m.linspace(0, 1, -1, device=d))
add("linspace_none_steps", TypeError, lambda m, d: m.linspace(0, 1, None, device=d))
add("linspace_str_start", TypeError, lambda m, d: m.linspace("0", 1, 3, device=d))
add("linspace_ok", None, lambda m, d: m.linspace(0, 1, 5, device=d))
add("linspace_ok_one", None, lambda m, d: m.linspace(0, 1, 1, device=d))
add("linspace_ok_int", None, lambda m, d: m.linspace(0, 10, 4, dtype=m.int64, device=d))
add("eye_neg", RuntimeError, lambda m, d: m.eye(-1, device=d))
add("eye_float", TypeError, lambda m, d: m.eye(2.5, device=d))
add("eye_str", TypeError, lambda m, d: m.eye("2", device=d))
add("eye_neg_m", RuntimeError, lambda m, d: m.eye(2, -1, device=d))
add("eye_ok", None, lambda m, d: m.eye(2, 3, device=d))
add("randperm_neg", RuntimeError, lambda m, d: m.randperm(-1, device=d))
add("randperm_float", TypeError, lambda m, d: m.randperm(2.5, device=d))
add("randperm_ok_zero", None, lambda m, d: m.randperm(0, device=d))
add("randint_low_high", RuntimeError, lambda m, d: m.randint(5, 2, (3,), device=d))
add("randint_no_size", TypeError, lambda m, d: m.randint(0, 5, device=d))
add("randint_int_size", TypeError, lambda m, d: m.randint(0, 5, 3, device=d))
add("randint_float_size", TypeError, lambda m, d: m.randint(0, 5, (2.5,), device=d))
add("randint_ok", None, lambda m, d: m.randint(0, 5, (3,), device=d).shape)
add("rand_int_dtype", NotImplementedError, lambda m, d: m.rand(2, dtype=m.int64, device=d))
add("randn_int_dtype", NotImplementedError, lambda m, d: m.randn(2, dtype=m.int32, device=d))

# -- *_like, from_numpy, interop ------------------------------------------------------
for _fn in ("zeros_like", "ones_like", "empty_like", "rand_like", "randn_like"):
    add(f"{_fn}_list", TypeError, lambda m, d, f=_fn: getattr(m, f)([1, 2]))
    add(f"{_fn}_ndarray", TypeError, lambda m, d, f=_fn: getattr(m, f)(np.zeros(2)))
add("full_like_list", TypeError, lambda m, d: m.full_like([1, 2], 3))
add("full_like_str", TypeError, lambda m, d: m.full_like(m.ones(2, device=d), "a"))
add(
    "rand_like_int",
    NotImplementedError,
    lambda m, d: m.rand_like(m.ones(2, dtype=m.int64, device=d)),
)
add("from_numpy_list", TypeError, lambda m, d: m.from_numpy([1, 2]))
add("from_numpy_str", TypeError, lambda m, d: m.from_numpy(np.array(["a"])))
add("from_numpy_object", TypeError, lambda m, d: m.from_numpy(np.array([1, None])))
add("from_numpy_negative_stride", ValueError, lambda m, d: m.from_numpy(np.arange(4)[::-1]))
add(
    "from_numpy_ok_masked",
    None,
    lambda m, d: m.from_numpy(np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0])).sum(),
)
add("from_numpy_ok_uint16", None, lambda m, d: m.from_numpy(np.array([1, 65535], np.uint16)))
add("from_numpy_ok_uint32", None, lambda m, d: m.from_numpy(np.array([1, 2**32 - 1], np.uint32)))
add("from_numpy_ok_uint64", None, lambda m, d: m.from_numpy(np.array([1, 2**63], np.uint64)))
add("from_numpy_ok_0d", None, lambda m, d: m.from_numpy(np.array(3.5)))
add(
    "tensor_ok_uint16_array",
    None,  # cpu: the CUDA backend refuses uint16 (see test_bad_inputs)
    lambda m, d: m.tensor(np.array([7], np.uint16), device="cpu"),
)
add("as_tensor_str", TypeError, lambda m, d: m.as_tensor("abc"))
add("as_tensor_ok_list", None, lambda m, d: m.as_tensor([1, 2], device=d))
add("from_dlpack_int", RuntimeError, lambda m, d: m.from_dlpack(3))
add("from_dlpack_ok_capsule", None, lambda m, d: m.from_dlpack(np.arange(3.0).__dlpack__()))

# -- views and shape ops ---------------------------------------------------------------
add("view_float_arg", TypeError, lambda m, d: f23(m, d).view(3, 2.0))
add("view_float_arg_issue", TypeError, lambda m, d: m.zeros(12, device=d).view(3, 4.0))
add("view_str", TypeError, lambda m, d: f23(m, d).view("6"))
add("view_none", TypeError, lambda m, d: f23(m, d).view(2, None))
add("view_bool", TypeError, lambda m, d: f23(m, d).view(True, 6))
add("view_two_infer", RuntimeError, lambda m, d: f23(m, d).view(-1, -1))
add("view_bad_numel", RuntimeError, lambda m, d: f23(m, d).view(5))
add("view_neg2", RuntimeError, lambda m, d: f23(m, d).view(-2, 3))
add("view_noncontig", RuntimeError, lambda m, d: f23(m, d).t().view(6))
add("view_ok_infer", None, lambda m, d: f23(m, d).view(-1, 2))
add("view_ok_np_int", None, lambda m, d: f23(m, d).view(np.int64(3), 2))
add("reshape_str", TypeError, lambda m, d: m.zeros(12, device=d).reshape("3", 4))
add("reshape_float", TypeError, lambda m, d: f23(m, d).reshape(1.5, 4))
add("reshape_bad_numel", RuntimeError, lambda m, d: f23(m, d).reshape(4, 2))
add("reshape_neg", RuntimeError, lambda m, d: f23(m, d).reshape(-3, 2))
add("reshape_ok_tuple", None, lambda m, d: f23(m, d).reshape((3, 2)))
add("expand_fewer", RuntimeError, lambda m, d: f23(m, d).expand(3))
add("expand_bad", RuntimeError, lambda m, d: f23(m, d).expand(3, 5))
add("expand_float", TypeError, lambda m, d: f23(m, d)[:1].expand(2.5, 3))
add("expand_neg", RuntimeError, lambda m, d: f23(m, d)[:1].expand(-2, 3))
add("expand_ok_minus1", None, lambda m, d: f23(m, d)[:1].expand(4, -1))
add("transpose_oob", IndexError, lambda m, d: f23(m, d).transpose(0, 5))
add("transpose_float", TypeError, lambda m, d: f23(m, d).transpose(0.5, 1))
add("permute_short", RuntimeError, lambda m, d: f23(m, d).permute(0))
add("permute_repeat", RuntimeError, lambda m, d: f23(m, d).permute(0, 0))
add("permute_float", TypeError, lambda m, d: f23(m, d).permute(0, 1.5))
add("permute_oob", IndexError, lambda m, d: f23(m, d).permute(0, 2))
add("squeeze_oob", IndexError, lambda m, d: f23(m, d).squeeze(5))
add("unsqueeze_oob", IndexError, lambda m, d: f23(m, d).unsqueeze(5))
add("unsqueeze_float", TypeError, lambda m, d: f23(m, d).unsqueeze(1.5))
add("narrow_oob", IndexError, lambda m, d: f23(m, d).narrow(5, 0, 1))
add("narrow_too_long", RuntimeError, lambda m, d: f23(m, d).narrow(1, 2, 5))
add("narrow_neg_len", RuntimeError, lambda m, d: f23(m, d).narrow(1, 0, -1))
add("select_oob", IndexError, lambda m, d: f23(m, d).select(0, 10))
add("select_dim_oob", IndexError, lambda m, d: f23(m, d).select(3, 0))
add("flatten_order", RuntimeError, lambda m, d: f23(m, d).flatten(1, 0))
add("unfold_step0", RuntimeError, lambda m, d: m.arange(6.0, device=d).unfold(0, 2, 0))
add("unfold_too_big", RuntimeError, lambda m, d: m.arange(6.0, device=d).unfold(0, 9, 1))
add("as_strided_neg", RuntimeError, lambda m, d: m.arange(6.0, device=d).as_strided((2,), (-1,)))
add("as_strided_len", RuntimeError, lambda m, d: m.arange(6.0, device=d).as_strided((2, 2), (1,)))
add("diagonal_same_dim", RuntimeError, lambda m, d: f23(m, d).diagonal(0, 0, 0))
add("tensor_split_zero", RuntimeError, lambda m, d: f23(m, d).tensor_split(0))
add("chunk_zero", RuntimeError, lambda m, d: f23(m, d).chunk(0))
add("split_zero", RuntimeError, lambda m, d: f23(m, d).split(0))
add("split_sizes_sum", RuntimeError, lambda m, d: f23(m, d).split([1, 1], dim=1))
add("movedim_oob", IndexError, lambda m, d: f23(m, d).movedim(0, 5))
add("repeat_fewer", RuntimeError, lambda m, d: f23(m, d).repeat(2))
add("repeat_neg", RuntimeError, lambda m, d: f23(m, d).repeat(2, -1))
add("flip_repeat", RuntimeError, lambda m, d: f23(m, d).flip((0, 0)))
add("roll_shifts_dims", RuntimeError, lambda m, d: f23(m, d).roll((1, 2), (0,)))
add("diagonal_ok_fill", None, lambda m, d: _fill_diag(m, d))
add("diagonal_ok_setitem", None, lambda m, d: _set_diag(m, d))
add("diagonal_ok_offset_write", None, lambda m, d: _diag_offset(m, d))


def _fill_diag(m, d):
    x = m.ones(3, 3, device=d)
    x.diagonal().fill_(0)
    return x


def _set_diag(m, d):
    x = m.ones(3, 3, device=d)
    x.diagonal()[0] = 5
    return x


def _diag_offset(m, d):
    x = m.zeros(3, 4, device=d)
    x.diagonal(1).add_(2)
    return x


# -- indexing ---------------------------------------------------------------------------
add("index_oob", IndexError, lambda m, d: f23(m, d)[10])
add("index_float", IndexError, lambda m, d: f23(m, d)[1.5])
add("index_str", TypeError, lambda m, d: f23(m, d)["a"])
add("index_list_oob", IndexError, lambda m, d: f23(m, d)[[0, 5]])
add("index_too_many", IndexError, lambda m, d: f23(m, d)[0, 0, 0])
add("index_neg_step", ValueError, lambda m, d: f23(m, d)[::-1])
add("index_zero_step", ValueError, lambda m, d: f23(m, d)[::0])
add(
    "index_bool_mask_shape",
    IndexError,
    lambda m, d: f23(m, d)[m.tensor([True, False, True], device=d)],
)
add("index_float_tensor", IndexError, lambda m, d: f23(m, d)[m.tensor([0.0], device=d)])
add("index_two_ellipsis", None, lambda m, d: f23(m, d)[..., ...])
add(
    "index_broadcast_mismatch",
    IndexError,
    lambda m, d: f23(m, d)[m.tensor([0, 1], device=d), m.tensor([0, 1, 2], device=d)],
)
add("setitem_shape", RuntimeError, lambda m, d: f23(m, d).__setitem__(0, m.ones(4, device=d)))
add("setitem_str", TypeError, lambda m, d: f23(m, d).__setitem__(0, "a"))
add("index_ok_none", None, lambda m, d: f23(m, d)[None, :, None].shape)
add("index_ok_neg", None, lambda m, d: f23(m, d)[-1])
add("index_ok_np_int", None, lambda m, d: f23(m, d)[np.int64(1)])

# -- joins ------------------------------------------------------------------------------
add("cat_empty", ValueError, lambda m, d: m.cat([]))
add("cat_shape", RuntimeError, lambda m, d: m.cat([m.ones(2, 3, device=d), m.ones(2, 2, device=d)]))
add("cat_dim_oob", IndexError, lambda m, d: m.cat([m.ones(2, device=d)], dim=5))
add("cat_tensor_arg", TypeError, lambda m, d: m.cat(m.ones(2, device=d)))
add("cat_ndim", RuntimeError, lambda m, d: m.cat([m.ones(2, 2, device=d), m.ones(2, device=d)]))
add("stack_shape", RuntimeError, lambda m, d: m.stack([m.ones(2, device=d), m.ones(3, device=d)]))
add("stack_empty", RuntimeError, lambda m, d: m.stack([]))
add(
    "cat_ok_promote",
    None,
    lambda m, d: m.cat([m.ones(2, device=d), m.ones(2, dtype=m.int64, device=d)]),
)

# -- arithmetic -------------------------------------------------------------------------
add("add_shape", RuntimeError, lambda m, d: m.ones(2, 3, device=d) + m.ones(4, device=d))
add("add_str", TypeError, lambda m, d: m.ones(2, device=d) + "x")
add("add_none", TypeError, lambda m, d: m.ones(2, device=d) + None)
add("mul_object", TypeError, lambda m, d: m.ones(2, device=d) * object())
add("sub_bool", RuntimeError, lambda m, d: m.tensor([True], device=d) - m.tensor([False], device=d))
add("neg_bool", RuntimeError, lambda m, d: -m.tensor([True], device=d))
add("invert_float", TypeError, lambda m, d: ~m.ones(2, device=d))
add("and_float", NotImplementedError, lambda m, d: m.ones(2, device=d) & m.ones(2, device=d))
add(
    "floordiv_int_zero",
    RuntimeError,
    lambda m, d: m.tensor([1, 2], device=d) // m.tensor([0, 1], device=d),
    True,
)
add(
    "remainder_int_zero",
    RuntimeError,
    lambda m, d: m.tensor([1, 2], device=d) % m.tensor([0, 1], device=d),
    True,
)
add("add_inplace_cast", RuntimeError, lambda m, d: m.ones(2, dtype=m.int64, device=d).add_(1.5))
add(
    "mul_inplace_broadcast",
    RuntimeError,
    lambda m, d: m.ones(2, device=d).mul_(m.ones(3, 2, device=d)),
)
add("matmul_shape", RuntimeError, lambda m, d: m.ones(2, 3, device=d) @ m.ones(2, 3, device=d))
add("matmul_0d", RuntimeError, lambda m, d: m.tensor(1.0, device=d) @ m.ones(2, device=d))
add("mm_1d", RuntimeError, lambda m, d: m.mm(m.ones(2, device=d), m.ones(2, device=d)))
add(
    "matmul_dtype",
    RuntimeError,
    lambda m, d: m.ones(2, 2, device=d) @ m.ones(2, 2, dtype=m.float64, device=d),
)
add("einsum_bad_eq", RuntimeError, lambda m, d: m.einsum("ij,jk", m.ones(2, 3, device=d)))
add(
    "einsum_shape",
    RuntimeError,
    lambda m, d: m.einsum("ij,jk->ik", m.ones(2, 3, device=d), m.ones(4, 2, device=d)),
)
add("einsum_bad_char", RuntimeError, lambda m, d: m.einsum("i1->i", m.ones(2, 3, device=d)))
add("uint8_add_300_wraps", None, lambda m, d: m.tensor([1, 250], dtype=m.uint8, device=d) + 300)
add("int8_mul_1000_wraps", None, lambda m, d: m.tensor([1, 3], dtype=m.int8, device=d) * 1000)
add("uint8_sub_wraps", None, lambda m, d: m.tensor([1], dtype=m.uint8, device=d) - 2)
add("int16_add_big_wraps", None, lambda m, d: m.tensor([1], dtype=m.int16, device=d) + 70000)
add("int64_add_overflow_scalar", OverflowError, lambda m, d: m.tensor([1], device=d) + 2**64)
add("uint8_iadd_wraps", None, lambda m, d: m.tensor([200], dtype=m.uint8, device=d).add_(100))
add(
    "int8_fill_overflow",
    RuntimeError,
    lambda m, d: m.tensor([1], dtype=m.int8, device=d).fill_(1000),
)
add("ok_int_div_zero", None, lambda m, d: m.tensor([1, 0], device=d) / 0)
add("ok_float_floordiv_zero", None, lambda m, d: m.tensor([1.0], device=d) // 0)
add("ok_pow_neg_float", None, lambda m, d: m.tensor([-8.0], device=d) ** 0.5)
add("int_pow_neg", RuntimeError, lambda m, d: m.tensor([2], device=d) ** -1)
add("ok_sqrt_int", None, lambda m, d: m.tensor([4], device=d).sqrt())
add("ok_log_zero", None, lambda m, d: m.tensor([0.0], device=d).log())

# -- fill_ / copy_ ----------------------------------------------------------------------
add("fill_overflow_f32", RuntimeError, lambda m, d: m.ones(2, device=d).fill_(1e40))
add("fill_overflow_f16", RuntimeError, lambda m, d: m.ones(2, dtype=m.float16, device=d).fill_(7e4))
add("fill_nan_int", RuntimeError, lambda m, d: m.ones(2, dtype=m.int64, device=d).fill_(NAN))
add("fill_str", TypeError, lambda m, d: m.ones(2, device=d).fill_("a"))
add("fill_none", TypeError, lambda m, d: m.ones(2, device=d).fill_(None))
add("fill_tensor_1d", RuntimeError, lambda m, d: m.ones(2, device=d).fill_(m.ones(2, device=d)))
add("fill_ok_inf", None, lambda m, d: m.ones(2, device=d).fill_(INF))
add("copy_shape", RuntimeError, lambda m, d: m.ones(2, device=d).copy_(m.ones(3, device=d)))
add("copy_list", TypeError, lambda m, d: m.ones(2, device=d).copy_([1, 2]))
add("copy_ok_broadcast", None, lambda m, d: m.ones(2, 2, device=d).copy_(m.zeros(2, device=d)))

# -- reductions ---------------------------------------------------------------------------
add("sum_dim_oob", IndexError, lambda m, d: f23(m, d).sum(5))
add("sum_dim_float", TypeError, lambda m, d: f23(m, d).sum(1.5))
add("sum_dim_str", TypeError, lambda m, d: f23(m, d).sum("a"))
add("sum_dim_repeat", RuntimeError, lambda m, d: f23(m, d).sum((0, 0)))
add("mean_int", RuntimeError, lambda m, d: t23(m, d).mean())
add("max_empty", RuntimeError, lambda m, d: m.ones(0, device=d).max())
add("argmax_empty", IndexError, lambda m, d: m.ones(0, device=d).argmax())
add("cumsum_oob", IndexError, lambda m, d: f23(m, d).cumsum(5))
add("cumsum_no_dim", TypeError, lambda m, d: f23(m, d).cumsum())
add("std_int", RuntimeError, lambda m, d: t23(m, d).std())
add("var_dim_oob", IndexError, lambda m, d: f23(m, d).var(3))
add("sum_ok_empty", None, lambda m, d: m.ones(0, device=d).sum())
add("prod_ok_bool", None, lambda m, d: m.tensor([True, True], device=d).prod())
add(
    "cumsum_ok_low_precision",
    None,
    lambda m, d: round(m.full((10**5,), 0.1, device=d).cumsum(0)[-1].item(), -1),
)
add(
    "std_ok_scaled",
    None,
    lambda m, d: round(m.tensor([3e19, 1e20], device=d).std().item() / 1e19, 3),
)

# -- scalars, conversion, misc ---------------------------------------------------------
add("item_multi", RuntimeError, lambda m, d: m.ones(2, device=d).item())
add("int_multi", ValueError, lambda m, d: int(m.ones(2, device=d)))
add("float_multi", ValueError, lambda m, d: float(m.ones(2, device=d)))
add("bool_multi", RuntimeError, lambda m, d: bool(m.ones(2, device=d)))
add("len_0d", TypeError, lambda m, d: len(m.tensor(1.0, device=d)))
add("iter_0d", TypeError, lambda m, d: iter(m.tensor(1.0, device=d)))
add("index_0d", IndexError, lambda m, d: m.tensor(1.0, device=d)[0])
add("record_stream_cpu", RuntimeError, lambda m, d: _record_cpu(m), True)
add("to_bad_device", RuntimeError, lambda m, d: m.ones(2).to("xyz"))
add("to_bad_dtype", TypeError, lambda m, d: m.ones(2).to(dtype="foo"))
add("view_dtype_size", RuntimeError, lambda m, d: m.ones(3, dtype=m.uint8, device=d).view(m.int16))
add("set_default_dtype_int", TypeError, lambda m, d: m.set_default_dtype(m.int64))
add("promote_types_bad", TypeError, lambda m, d: m.promote_types(m.float32, "x"))
add("ok_int_0d", None, lambda m, d: int(m.tensor([3.7], device=d)))
add("ok_item", None, lambda m, d: m.tensor([[2.5]], device=d).item())


def _record_cpu(m):
    x = m.ones(2, device="cpu")  # pageable host memory, whatever the default device
    x.record_stream(m.cuda.Stream() if m.__name__ == "gpu_tensor" else None)
    return x


# -- autograd misuse (run by tests/autograd/test_misuse.py: autograd tests run last) -------
AUTOGRAD_FROM = len(CASES)
add("numpy_requires_grad", RuntimeError, lambda m, d: m.ones(2, requires_grad=True).numpy())
add("requires_grad_int", RuntimeError, lambda m, d: m.ones(2, dtype=m.int64).requires_grad_())
add(
    "ones_requires_grad_int",
    RuntimeError,
    lambda m, d: m.ones(2, dtype=m.int64, requires_grad=True),
)
add("backward_nonscalar", RuntimeError, lambda m, d: (m.ones(2, requires_grad=True) * 2).backward())
add("backward_no_grad", RuntimeError, lambda m, d: m.ones(2).sum().backward())
add("backward_twice", RuntimeError, lambda m, d: _backward_twice(m))
add("leaf_inplace", RuntimeError, lambda m, d: m.ones(2, requires_grad=True).add_(1))
add("grad_wrong_shape", RuntimeError, lambda m, d: _set_grad(m, m.ones(3)))
add("grad_wrong_dtype", RuntimeError, lambda m, d: _set_grad(m, m.ones(2, dtype=m.float64)))
add("grad_not_tensor", TypeError, lambda m, d: _set_grad(m, 3))
add("hook_wrong_shape", RuntimeError, lambda m, d: _hook(m, lambda g: g.sum()))
add("hook_wrong_dtype", RuntimeError, lambda m, d: _hook(m, lambda g: g.double()))
add("detach_view_inplace", RuntimeError, lambda m, d: m.ones(4, requires_grad=True)[:2].detach_())
add("ok_detach_leaf_inplace", None, lambda m, d: m.ones(2, requires_grad=True).detach_())
add("ok_grad_none", None, lambda m, d: _set_grad(m, None))
add("ok_view_inplace_autograd", None, lambda m, d: _view_inplace(m))
add("ok_column_iadd_autograd", None, lambda m, d: _column_iadd(m))


def _backward_twice(m):
    x = m.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    y.backward()


def _set_grad(m, g):
    x = m.ones(2, requires_grad=True)
    x.grad = g
    return x.grad


def _hook(m, fn):
    x = m.ones(2, requires_grad=True)
    x.register_hook(fn)
    (x * 2).sum().backward()
    return x.grad


def _view_inplace(m):
    x = m.ones(4, 2, requires_grad=True)
    a = x * 1
    a[0:2].mul_(2)
    a.sum().backward()
    return x.grad


def _column_iadd(m):
    x = m.ones(3, 2, requires_grad=True)
    y = x * 3
    y[:, 0] += 1
    (y * y).sum().backward()
    return x.grad


GENERAL = CASES[:AUTOGRAD_FROM]
AUTOGRAD = CASES[AUTOGRAD_FROM:]
assert len({c.name for c in CASES}) == len(CASES), "duplicate case names"
