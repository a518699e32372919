"""The checks: a float32 result passes with room to spare, and the faults a wrong fast path makes
(a dropped channel, a swapped gate, a dropped k-slice, a gradient off by 1%, a missed flip, one
byte) fail. The tolerances come from the arithmetic, so they must be tight enough to catch them."""

from __future__ import annotations

import numpy as np
import pytest

from gapbench_probe import problems
from gapbench_probe.problems import ARITHMETIC
from tests.fake_framework import case, rounded

FP32 = problems.FLOAT32

CONV = case("conv", ("n", 2), ("c", 16), ("hw", 9), ("k", 4), ("r", 3), ("stride", 1), ("pad", 1))
LSTM = case("lstm", ("scope", "seq"), ("batch", 4), ("input", 8), ("hidden", 16), ("steps", 20))


def test_sumsq():
    p = problems.sumsq(case("sumsq", ("style", "vectorized"), ("rows", 500), ("cols", 100)), 1)
    x = p.inputs["x"]
    assert p.check((x * x).sum(1), FP32) is None
    assert p.check((x[:, 1:] * x[:, 1:]).sum(1), FP32).startswith("validation failed")


def test_image():
    p = problems.image(case("image", ("style", "vectorized"), ("n", 4), ("hw", 8), ("c", 3)), 1)
    images, delta, flip = p.inputs["images"], p.inputs["delta"], p.inputs["flip"]
    assert p.check(problems.image_op_float32(images, delta, flip), FP32) is None
    assert p.check(problems.image_op_float32(images, delta, ~flip), FP32) is not None


def test_conv():
    p = problems.conv(CONV, 1)
    x, w = p.inputs["x"], p.inputs["w"]
    assert p.check(problems.conv_reference(x, w, 1, 1).astype(np.float32), FP32) is None
    dropped = x.copy()
    dropped[:, -1] = 0
    assert "conv output" in p.check(problems.conv_reference(dropped, w, 1, 1), FP32)


def test_lstm_with_a_swapped_gate_fails():
    p = problems.lstm(LSTM, 1)
    i = p.inputs
    hs, cs, _ = problems.lstm_reference(i["x"], i["w"], i["u"], i["b"], i["h0"], i["c0"])
    assert p.check((hs.transpose(1, 0, 2).astype(np.float32), cs[-1].astype(np.float32)),
                   FP32) is None
    h = 16
    order = np.r_[h:2 * h, 0:h, 2 * h:4 * h]  # i and f swapped
    hs, cs, _ = problems.lstm_reference(i["x"], i["w"][:, order], i["u"][:, order],
                                        i["b"][order], i["h0"], i["c0"])
    assert p.check((hs.transpose(1, 0, 2), cs[-1]), FP32) is not None


def test_matmul_with_a_dropped_k_slice_fails():
    p = problems.matmul(case("matmul", ("n", 64)), 1)
    a, b = p.inputs["a"], p.inputs["b"]
    assert p.check(a @ b, FP32) is None
    assert p.check(a[:, :-4] @ b[:-4], FP32) is not None


def test_dense_with_a_gradient_off_by_one_percent_fails():
    p = problems.dense(case("dense", ("batch", 64)), 1)
    params, x, labels, lr = (p.inputs[k] for k in ("params", "x", "labels", "lr"))
    loss, grads, after, _ = problems.dense_reference(params, x, labels, lr)
    assert p.check((loss, *(a.astype(np.float32) for a in after)), FP32) is None
    off = [pp - lr * 1.01 * g for pp, g in zip(params, grads)]
    assert "after the step" in p.check((loss, *off), FP32)


def test_copy_with_one_byte_changed_fails():
    p = problems.copy(case("copy", ("dir", "h2d"), ("memory", "pinned"), ("bytes", 4096)), 1)
    back = p.inputs["host"].copy()
    assert p.check(back, FP32) is None
    back[100] ^= 1
    assert p.check(back, FP32) == "validation failed: copy: 1 bytes differ, the first at 100"


@pytest.mark.parametrize("math", ["fp32", "tf32"])
def test_tf32_widens_the_tolerance_by_its_input_roundoff(math):
    p = problems.matmul(case("matmul", ("n", 256)), 1)
    a, b = p.inputs["a"], p.inputs["b"]
    # inputs truncated to TF32's 10 mantissa bits, as the tensor cores may read them
    verdict = p.check(rounded(a, "tf32") @ rounded(b, "tf32"), ARITHMETIC[math])
    assert (verdict is None) == (math == "tf32")


def half_product(a, b, fmt):
    """A half-format GEMM: inputs in the format, float32 sums, the result stored in it."""
    return rounded(rounded(a, fmt).astype(np.float64) @ rounded(b, fmt), fmt)


@pytest.mark.parametrize("fmt", ["fp16", "bf16"])
def test_a_half_format_product_passes_in_its_math_only(fmt):
    p = problems.matmul(case("matmul", ("n", 256)), 1)
    a, b = p.inputs["a"], p.inputs["b"]
    assert p.check(half_product(a, b, fmt), ARITHMETIC[fmt]) is None
    assert p.check(half_product(a, b, fmt), FP32) is not None
    # a dropped k-slice (a quarter of the sum) still fails in the widest format
    assert p.check(half_product(a[:, :192], b[:192], fmt), ARITHMETIC[fmt]) is not None


def test_the_math_does_not_change_a_cases_data():
    plain = problems.matmul(case("matmul", ("n", 8)), 3).inputs["a"]
    half = problems.matmul(case("matmul", ("n", 8), ("math", "fp16")), 3).inputs["a"]
    other = problems.matmul(case("matmul", ("n", 8)), 4).inputs["a"]
    assert np.array_equal(plain, half) and not np.array_equal(plain, other)


def lstm_in(fmt, i, order=slice(None)):
    """The LSTM as a framework computing in `fmt` runs it: x, W, U, b and each step's h_{t-1}
    read in the format, float32 sums and gates; h and c stored in it where it is a storage
    format (float16), else float32 (TF32 is only how the tensor cores read)."""
    w, u, b = (rounded(a, fmt) for a in (i["w"][:, order], i["u"][:, order], i["b"][order]))
    store = "fp32" if fmt == "tf32" else fmt
    h, c = rounded(i["h0"], store), rounded(i["c0"], store)
    hs = []
    for t in range(i["x"].shape[1]):
        ht, ct, _ = problems.lstm_reference(rounded(i["x"][:, t:t + 1], fmt), w, u, b,
                                            rounded(h, fmt), c)
        h, c = rounded(ht[0], store), rounded(ct[0], store)
        hs.append(h)
    return np.stack(hs, 1), c


@pytest.mark.parametrize("fmt", ["tf32", "fp16"])
def test_lstm_in_its_math_passes_and_a_swapped_gate_still_fails(fmt):
    p = problems.lstm(LSTM, 1)
    i = p.inputs
    assert p.check(lstm_in(fmt, i), ARITHMETIC[fmt]) is None
    assert p.check(lstm_in(fmt, i), FP32) is not None
    h = 16
    swapped = np.r_[h:2 * h, 0:h, 2 * h:4 * h]
    assert p.check(lstm_in(fmt, i, swapped), ARITHMETIC[fmt]) is not None


def test_conv_in_float16():
    p = problems.conv(CONV, 1)
    x, w = p.inputs["x"], p.inputs["w"]
    y = rounded(problems.conv_reference(rounded(x, "fp16"), rounded(w, "fp16"), 1, 1), "fp16")
    assert p.check(y, ARITHMETIC["fp16"]) is None and p.check(y, FP32) is not None
