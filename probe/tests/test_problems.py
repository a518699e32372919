"""The checks: a float32 result passes with room to spare, and the faults a wrong fast path makes
(a dropped channel, a swapped gate, a dropped k-slice, a gradient off by 1%, a missed flip, one
byte) fail. The tolerances come from the arithmetic, so they must be tight enough to catch them."""

from __future__ import annotations

import numpy as np
import pytest

from gapbench_probe import problems
from tests.fake_framework import case

CONV = case("conv", ("n", 2), ("c", 16), ("hw", 9), ("k", 4), ("r", 3), ("stride", 1), ("pad", 1))
LSTM = case("lstm", ("scope", "seq"), ("batch", 4), ("input", 8), ("hidden", 16), ("steps", 20))


def test_sumsq():
    p = problems.sumsq(case("sumsq", ("style", "vectorized"), ("rows", 500), ("cols", 100)), 1)
    x = p.inputs["x"]
    assert p.check((x * x).sum(1), 0.0) is None
    assert p.check((x[:, 1:] * x[:, 1:]).sum(1), 0.0).startswith("validation failed")


def test_image():
    p = problems.image(case("image", ("style", "vectorized"), ("n", 4), ("hw", 8), ("c", 3)), 1)
    images, delta, flip = p.inputs["images"], p.inputs["delta"], p.inputs["flip"]
    assert p.check(problems.image_op_float32(images, delta, flip), 0.0) is None
    assert p.check(problems.image_op_float32(images, delta, ~flip), 0.0) is not None


def test_conv():
    p = problems.conv(CONV, 1)
    x, w = p.inputs["x"], p.inputs["w"]
    assert p.check(problems.conv_reference(x, w, 1, 1).astype(np.float32), 0.0) is None
    dropped = x.copy()
    dropped[:, -1] = 0
    assert "conv output" in p.check(problems.conv_reference(dropped, w, 1, 1), 0.0)


def test_lstm_with_a_swapped_gate_fails():
    p = problems.lstm(LSTM, 1)
    i = p.inputs
    hs, cs, _ = problems.lstm_reference(i["x"], i["w"], i["u"], i["b"], i["h0"], i["c0"])
    assert p.check((hs.transpose(1, 0, 2).astype(np.float32), cs[-1].astype(np.float32)),
                   0.0) is None
    h = 16
    order = np.r_[h:2 * h, 0:h, 2 * h:4 * h]  # i and f swapped
    hs, cs, _ = problems.lstm_reference(i["x"], i["w"][:, order], i["u"][:, order],
                                        i["b"][order], i["h0"], i["c0"])
    assert p.check((hs.transpose(1, 0, 2), cs[-1]), 0.0) is not None


def test_matmul_with_a_dropped_k_slice_fails():
    p = problems.matmul(case("matmul", ("n", 64)), 1)
    a, b = p.inputs["a"], p.inputs["b"]
    assert p.check(a @ b, 0.0) is None
    assert p.check(a[:, :-4] @ b[:-4], 0.0) is not None


def test_dense_with_a_gradient_off_by_one_percent_fails():
    p = problems.dense(case("dense", ("batch", 64)), 1)
    params, x, labels, lr = (p.inputs[k] for k in ("params", "x", "labels", "lr"))
    loss, grads, after, _ = problems.dense_reference(params, x, labels, lr)
    assert p.check((loss, *(a.astype(np.float32) for a in after)), 0.0) is None
    off = [pp - lr * 1.01 * g for pp, g in zip(params, grads)]
    assert "after the step" in p.check((loss, *off), 0.0)


def test_copy_with_one_byte_changed_fails():
    p = problems.copy(case("copy", ("dir", "h2d"), ("memory", "pinned"), ("bytes", 4096)), 1)
    back = p.inputs["host"].copy()
    assert p.check(back, 0.0) is None
    back[100] ^= 1
    assert p.check(back, 0.0) == "validation failed: copy: 1 bytes differ, the first at 100"


@pytest.mark.parametrize("e", [0.0, problems.TF32_ROUNDOFF])
def test_tf32_widens_the_tolerance_by_its_input_roundoff(e):
    p = problems.matmul(case("matmul", ("n", 256)), 1)
    a, b = p.inputs["a"], p.inputs["b"]
    # inputs rounded to TF32's 10 mantissa bits, as the tensor cores read them
    def tf32(m):
        return (m.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
    verdict = p.check(tf32(a) @ tf32(b), e)
    assert (verdict is None) == (e > 0)
