"""Each case's seeded input, its float64 reference and the tolerance a float32 result is held to,
and the work one call does (for the counters).

A framework's result is checked once, before it is timed: a wrong result is an error entry, never
a figure. Tolerances follow the arithmetic, as gapbench's kernels/ do: the worst-case rounding
bound of a float32 sum of L terms, γ_L·Σ|terms| with γ_L = L·u/(1 - L·u), u = 2^-24, plus
((1+e)^2 - 1)·Σ|terms| where the framework reads float32 inputs to relative error e (the case's
math: TF32, float16, bfloat16), plus one rounding of the result where it is stored in a half
format. Any summation order a library picks stays inside it; a wrong index, a dropped block or a
swapped gate does not. A case's data do not depend on its math: fp32 and fp16 do the same work.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gapbench_probe.plan import Case

U32 = 2.0**-24  # float32 unit roundoff


@dataclass(frozen=True)
class Arithmetic:
    """How a result was computed: the relative error e with which each float32 input was read,
    and that of the result's own storage (a half format rounds it once more)."""

    inputs: float = 0.0
    stored: float = 0.0


# The `math:` axis, as gapbench's kernels/base/validate.h has it: TF32's tensor cores may truncate
# the 13 dropped bits (2^-10); float16 keeps 11 significant bits (2^-11), bfloat16 8 (2^-8).
ARITHMETIC = {"fp32": Arithmetic(), "tf32": Arithmetic(2.0**-10),
              "fp16": Arithmetic(2.0**-11, 2.0**-11), "bf16": Arithmetic(2.0**-8, 2.0**-8)}
FLOAT32 = ARITHMETIC["fp32"]


@dataclass
class Problem:
    """A case's inputs (the keyword arguments of the adapter's op), how its result is judged, and
    the work of one call (counter -> amount, made a rate per second of real time)."""

    inputs: dict[str, Any]
    # The result as numpy (the adapter's fetch), and the arithmetic the framework computed in;
    # returns what is wrong, or None.
    check: Callable[[Any, Arithmetic], str | None]
    work: dict[str, float] = field(default_factory=dict)
    constants: dict[str, float] = field(default_factory=dict)  # counters written as they are


def rng(seed: int, case: Case) -> np.random.Generator:
    """Data of its own per case (a function of the seed and the shape, not of the order nor of
    the math)."""
    key = [ord(ch) for ch in case.op + "/" + "/".join(f"{k}:{v}" for k, v in case.shape.axes)]
    return np.random.default_rng([seed, *key])


def uniform32(g: np.random.Generator, low: float, high: float, shape) -> np.ndarray:
    """Uniform float32 in [low, high), drawn in float32 (1M x 100 in float64 would take 800 MB)."""
    x = g.random(shape, dtype=np.float32)
    x *= np.float32(high - low)
    x += np.float32(low)
    return x


def gamma(terms: int, u: float = U32) -> float:
    return terms * u / (1 - terms * u)


def sum_bound(terms: int, e: float) -> float:
    """The relative error bound of a float32 dot product of `terms` terms, inputs read to e."""
    return (1 + e) ** 2 - 1 + gamma(terms) * (1 + e) ** 2


def product_bound(terms: int, arithmetic: Arithmetic) -> float:
    """sum_bound, and the result's own rounding where it is stored in a half format: relative
    to Σ|terms|, which bounds the result."""
    return sum_bound(terms, arithmetic.inputs) + arithmetic.stored


def compare(what: str, got: Any, ref: np.ndarray, atol: float | np.ndarray = 0.0,
            rtol: float = 0.0) -> str | None:
    """Elementwise |got - ref| <= atol + rtol·|ref|; None when it holds, else the worst element."""
    got = np.asarray(got)
    if got.shape != ref.shape:
        return f"{what}: shape {got.shape}, expected {ref.shape}"
    if not np.all(np.isfinite(got)):
        return f"{what}: {int(np.sum(~np.isfinite(got)))} elements are not finite"
    err = np.abs(got.astype(np.float64) - ref)
    limit = atol + rtol * np.abs(ref)
    over = err - limit
    worst = int(np.argmax(over))
    if over.flat[worst] <= 0:
        return None
    index = np.unravel_index(worst, ref.shape)
    return (f"validation failed: {what}[{', '.join(map(str, index))}] = {got.flat[worst]:.9g}, "
            f"reference {ref.flat[worst]:.9g}, error {err.flat[worst]:.3g} > tolerance "
            f"{np.broadcast_to(limit, ref.shape)[index]:.3g}")


def first_problem(*found: str | None) -> str | None:
    return next((f for f in found if f), None)


# ---- preprocess ------------------------------------------------------------------------------

def sumsq(case: Case, seed: int) -> Problem:
    rows, cols = case.number("rows"), case.number("cols")
    x = uniform32(rng(seed, case), -1, 1, (rows, cols))
    ref = np.empty(rows)
    for start in range(0, rows, 100_000):  # float64 in slices: 1M x 100 at once is 800 MB
        part = x[start:start + 100_000].astype(np.float64)
        ref[start:start + 100_000] = np.einsum("ij,ij->i", part, part)
    rtol = max(gamma(cols), 1e-5)  # non-negative terms: the bound is relative to the sum

    def check(out, arithmetic):
        return compare("sum of squares", np.asarray(out).reshape(-1), ref, rtol=rtol)
    return Problem({"x": x, "style": case.axis("style")}, check,
                   {"items_per_second": rows, "bytes_per_second": x.nbytes})


# Random brightness up to this much either way (as gapbench's preprocess draws it).
MAX_DELTA = 0.25


def image_batch(generator: np.random.Generator, n: int, hw: int, c: int):
    images = generator.integers(0, 256, size=(n, hw, hw, c), dtype=np.uint8)
    delta = uniform32(generator, -MAX_DELTA, MAX_DELTA, n)
    flip = generator.integers(0, 2, size=n).astype(bool)
    return images, delta, flip


def image_reference(images: np.ndarray, delta: np.ndarray, flip: np.ndarray) -> np.ndarray:
    """clamp(in / 255 + delta[i], 0, 1), mirrored left-right where flip[i], in float64."""
    out = np.clip(images / 255.0 + delta.astype(np.float64)[:, None, None, None], 0.0, 1.0)
    out[flip] = out[flip][:, :, ::-1, :]
    return out


def image_op_float32(images: np.ndarray, delta: np.ndarray, flip: np.ndarray) -> np.ndarray:
    """The same op in float32 numpy: the producer of the pipeline cases."""
    out = images.astype(np.float32) * np.float32(1 / 255)
    out += delta[:, None, None, None]
    np.clip(out, 0.0, 1.0, out=out)
    out[flip] = out[flip][:, :, ::-1, :]
    return out


def image(case: Case, seed: int) -> Problem:
    images, delta, flip = image_batch(rng(seed, case), case.number("n"), case.number("hw"),
                                      case.number("c"))
    ref = image_reference(images, delta, flip)

    def check(out, arithmetic):
        # Two float32 roundings of values in [0, 1]: absolute, as cancellation near 0 makes a
        # relative tolerance useless.
        return compare("image", out, ref, atol=1e-6, rtol=1e-6)
    return Problem({"images": images, "delta": delta, "flip": flip, "style": case.axis("style")},
                   check,
                   {"items_per_second": len(images), "bytes_per_second": images.size * 5})


# ---- conv --------------------------------------------------------------------------------------

def conv_reference(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    """y[n, k, p, q] in float64, NCHW, one image at a time through im2col."""
    n, c, h, _ = x.shape
    k, _, r, _ = w.shape
    out = (h + 2 * pad - r) // stride + 1
    wm = w.reshape(k, -1).astype(np.float64)
    y = np.empty((n, k, out, out))
    for i in range(n):
        img = np.pad(x[i].astype(np.float64), ((0, 0), (pad, pad), (pad, pad)))
        win = np.lib.stride_tricks.sliding_window_view(img, (r, r), axis=(1, 2))
        win = win[:, ::stride, ::stride]  # c, p, q, r, s
        cols = win.transpose(0, 3, 4, 1, 2).reshape(c * r * r, out * out)
        y[i] = (wm @ cols).reshape(k, out, out)
    return y


def conv(case: Case, seed: int) -> Problem:
    n, c, hw, k, r = (case.number(a) for a in ("n", "c", "hw", "k", "r"))
    stride, pad = case.number("stride"), case.number("pad")
    g = rng(seed, case)
    x = uniform32(g, -1, 1, (n, c, hw, hw))
    w = uniform32(g, -1, 1, (k, c, r, r))
    ref = conv_reference(x, w, stride, pad)
    # max|x| times the largest filter's sum of |w|: no output's Σ|x·w| exceeds it.
    magnitude = float(np.abs(x).max() * np.abs(w).reshape(k, -1).sum(1).max())
    out = ref.shape[-1]

    def check(y, arithmetic):
        return compare("conv output", y, ref, atol=product_bound(c * r * r, arithmetic)
                       * magnitude)
    flops = 2.0 * n * k * c * r * r * out * out
    return Problem({"x": x, "w": w, "stride": stride, "pad": pad}, check,
                   {"flops": flops, "items_per_second": n})


# ---- matmul ------------------------------------------------------------------------------------

SAMPLES = 256  # elements of a product checked (a float64 4096^2 product takes seconds)


def matmul(case: Case, seed: int) -> Problem:
    n = case.number("n")
    g = rng(seed, case)
    a = uniform32(g, -1, 1, (n, n))
    b = uniform32(g, -1, 1, (n, n))
    flat = g.choice(n * n, size=min(SAMPLES, n * n), replace=False)
    i, j = np.divmod(flat, n)
    a64, b64 = a[i].astype(np.float64), b[:, j].astype(np.float64).T
    ref = np.einsum("sk,sk->s", a64, b64)
    magnitude = float(np.einsum("sk,sk->s", np.abs(a64), np.abs(b64)).max())

    def check(c, arithmetic):
        c = np.asarray(c)
        if c.shape != (n, n):
            return f"product: shape {c.shape}, expected {(n, n)}"
        return compare("product (sampled)", c[i, j], ref,
                       atol=product_bound(n, arithmetic) * magnitude)
    return Problem({"a": a, "b": b}, check, {"flops": 2.0 * n**3})


# ---- lstm --------------------------------------------------------------------------------------

def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-z))


class LstmScale:
    """What the LSTM's error bound reads from the reference, over every step's terms
    [x_t, h_{t-1}]·[W; U] + b: the largest Σ|terms| of a pre-activation (magnitude), the largest
    √Σterms² (magnitude_l2: computed at first use, as only a narrower arithmetic's bound reads
    it) and the largest forget gate."""

    def __init__(self, inputs: np.ndarray, weights: np.ndarray, b: np.ndarray, forget_max: float):
        self.magnitude = float((np.abs(inputs) @ np.abs(weights) + np.abs(b)).max())
        self.forget_max = forget_max
        self.terms = inputs, weights, b

    @functools.cached_property
    def magnitude_l2(self) -> float:
        inputs, weights, b = self.terms
        return math.sqrt(float(((inputs * inputs) @ (weights * weights) + b * b).max()))


def lstm_reference(x, w, u, b, h0, c0):
    """Every h_t [steps][batch][hidden] and c_t, in float64; gates i, f, g, o (the order both
    Keras and torch keep theirs in). Also the LstmScale of the bound."""
    hidden = u.shape[0]
    w, u, b = (a.astype(np.float64) for a in (w, u, b))
    h, c = h0.astype(np.float64), c0.astype(np.float64)
    hs, cs, forget = [], [], 0.0
    for t in range(x.shape[1]):
        z = x[:, t].astype(np.float64) @ w + h @ u + b
        i, f, g, o = (z[:, k * hidden:(k + 1) * hidden] for k in range(4))
        f = sigmoid(f)
        forget = max(forget, float(f.max()))
        c = f * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        hs.append(h)
        cs.append(c)
    hs, cs = np.stack(hs), np.stack(cs)
    # Every step's terms at once: [x_t, h_{t-1}] against [W; U], plus b.
    inputs = np.concatenate([x.transpose(1, 0, 2), np.concatenate([h0[None], hs[:-1]])],
                            axis=2).reshape(-1, w.shape[0] + hidden).astype(np.float64)
    return hs, cs, LstmScale(inputs, np.concatenate([w, u]), b, forget)


# gapbench's LSTM tolerance (docs/reading-results.md#the-lstm), for h and c:
#   atol = SAFETY·(√steps·(√k·u·M + GATE_ULPS·u·max(1, |c|max)) + carried·2e·M_l2),
# float32 sums and gates over a √steps random walk, plus inputs (x, W, each h_{t-1}) read to e,
# carried over min(√steps, 1/(1 - f_max)) steps as the forget gate damps them; h and c stored in
# a half format are rounded once more (rtol).
LSTM_SAFETY = 4.0
GATE_ULPS = 16.0


def lstm_bound(k: int, steps: int, scale: LstmScale, c_max: float, e: float) -> float:
    walk = math.sqrt(steps)
    float32 = math.sqrt(k) * U32 * scale.magnitude + GATE_ULPS * U32 * max(1.0, c_max)
    carried = min(walk, 1 / (1 - min(scale.forget_max, 0.999)))
    narrow = carried * 2 * e * scale.magnitude_l2 if e else 0.0
    return LSTM_SAFETY * (walk * float32 + narrow)


def lstm(case: Case, seed: int) -> Problem:
    batch, size, hidden, steps = (case.number(a) for a in ("batch", "input", "hidden", "steps"))
    seq = case.axis("scope") == "seq"
    g = rng(seed, case)
    scale = 1 / math.sqrt(hidden)
    x = uniform32(g, -1, 1, (batch, steps if seq else 1, size))
    w = uniform32(g, -scale, scale, (size, 4 * hidden))
    u = uniform32(g, -scale, scale, (hidden, 4 * hidden))
    b = uniform32(g, -scale, scale, 4 * hidden)
    h0 = uniform32(g, -0.5, 0.5, (batch, hidden))
    c0 = uniform32(g, -0.5, 0.5, (batch, hidden))
    hs, cs, bound_scale = lstm_reference(x, w, u, b, h0, c0)
    run_steps = x.shape[1]
    k = size + hidden + 2
    c_max = float(np.abs(cs).max())

    def check(result, arithmetic):
        h_got, c_got = result
        atol = lstm_bound(k, run_steps, bound_scale, c_max, arithmetic.inputs)
        c_rtol = LSTM_SAFETY * math.sqrt(run_steps) * GATE_ULPS * U32
        h_ref = hs.transpose(1, 0, 2) if seq else hs[0]  # batch-major, as the layers return it
        return first_problem(
            compare("h", h_got, h_ref, atol=atol, rtol=arithmetic.stored),
            compare("c (last step)", c_got, cs[-1], atol=atol, rtol=c_rtol + arithmetic.stored))
    cell_flops = 2.0 * batch * (size + hidden) * 4 * hidden
    work = ({"flops": cell_flops * steps, "items_per_second": batch} if seq
            else {"flops": cell_flops, "items_per_second": 1})
    return Problem({"x": x, "w": w, "u": u, "b": b, "h0": h0, "c0": c0,
                    "scope": case.axis("scope"), "compiled": case.compiled}, check, work)


def lstm_step(case: Case, seed: int) -> Problem:
    """gapbench's threads family's op:lstm_step: the lstm op's one cell step at that shape."""
    step = Case("lstm", (("scope", "step"), *case.shape.axes, ("steps", "1")))
    return lstm(step, seed)


# ---- dense: one training step of 784 -> 128 -> 10 --------------------------------------------

DENSE_SHAPE = (784, 128, 10)
LEARNING_RATE = 0.1  # plain SGD, as the classic Keras example would use
GRAD_RTOL = 1e-3  # the gradient held to this share of its largest element (long reductions)
GRAD_RTOL_TF32 = 3e-2  # the same where TF32 reads the inputs to 2^-11


def dense_reference(params, x, labels, lr):
    """Loss, gradient and updated parameters in float64, and the pre-activation z1 with its
    rounding bound, for the ReLU kink."""
    w1, b1, w2, b2 = (p.astype(np.float64) for p in params)
    x64 = x.astype(np.float64)
    batch = len(x)
    z1 = x64 @ w1 + b1
    h = np.maximum(z1, 0)
    logits = h @ w2 + b2
    logits -= logits.max(1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(1, keepdims=True)
    loss = float(-np.log(p[np.arange(batch), labels]).mean())
    dlogits = p.copy()
    dlogits[np.arange(batch), labels] -= 1
    dlogits /= batch
    dh = dlogits @ w2.T
    dz = dh * (z1 > 0)
    grads = (x64.T @ dz, dz.sum(0), h.T @ dlogits, dlogits.sum(0))
    after = tuple(p64 - lr * gr for p64, gr in zip((w1, b1, w2, b2), grads))
    z_bound = gamma(x.shape[1] + 1) * (np.abs(x64) @ np.abs(w1) + np.abs(b1))
    return loss, grads, after, (z1, z_bound, dh)


def dense(case: Case, seed: int) -> Problem:
    batch = case.number("batch")
    n_in, n_hidden, n_out = DENSE_SHAPE
    g = rng(seed, case)
    x = uniform32(g, 0, 1, (batch, n_in))  # pixels
    labels = g.integers(0, n_out, size=batch).astype(np.int64)
    params = (uniform32(g, -1, 1, (n_in, n_hidden)) / np.float32(np.sqrt(n_in)),
              uniform32(g, -0.1, 0.1, n_hidden),
              uniform32(g, -1, 1, (n_hidden, n_out)) / np.float32(np.sqrt(n_hidden)),
              uniform32(g, -0.1, 0.1, n_out))
    loss, grads, after, (z1, z_bound, dh) = dense_reference(params, x, labels, LEARNING_RATE)
    # ReLU's kink widens the W1 columns and b1 of units near 0
    # (docs/reading-results.md#the-dense-training-step).
    near = np.abs(z1) <= z_bound
    row_x = np.abs(x).max(1, keepdims=True)
    kink_b1 = np.where(near, np.abs(dh), 0).max(0) / batch
    kink_w1 = np.where(near, np.abs(dh) * row_x, 0).max(0) / batch

    def check(result, arithmetic):
        got_loss, *got = result
        grad_rtol = GRAD_RTOL if arithmetic.inputs == 0 else GRAD_RTOL_TF32
        found = [compare("loss", np.float64(got_loss), np.float64(loss), rtol=1e-3)]
        for what, g_got, ref, grad, kink in zip(
                ("W1", "b1", "W2", "b2"), got, after, grads,
                (kink_w1[None, :], kink_b1, 0.0, 0.0)):
            atol = (2 * U32 * np.abs(ref).max() + LEARNING_RATE * grad_rtol * np.abs(grad).max()
                    + LEARNING_RATE * kink)
            found.append(compare(f"{what} after the step", g_got, ref, atol=atol))
        return first_problem(*found)
    return Problem({"params": params, "x": x, "labels": labels, "lr": LEARNING_RATE,
                    "compiled": case.compiled}, check,
                   {"items_per_second": batch})


# ---- copy --------------------------------------------------------------------------------------

def copy(case: Case, seed: int) -> Problem:
    size = case.number("bytes")
    host = rng(seed, case).integers(0, 256, size=size, dtype=np.uint8)

    def check(back, arithmetic):
        back = np.asarray(back).reshape(-1)
        if back.shape != host.shape:
            return f"copy: {back.size} bytes came back, expected {host.size}"
        wrong = np.flatnonzero(back != host)
        return (f"validation failed: copy: {wrong.size} bytes differ, the first at {wrong[0]}"
                if wrong.size else None)
    return Problem({"host": host, "memory": case.axis("memory")}, check,
                   {"bytes_per_second": size, "items_per_second": 1})


# ---- pipeline ----------------------------------------------------------------------------------

PIPELINE_IMAGE = (64, 64, 3)  # gapbench's pipeline decodes batches of 64x64x3 images
PIPELINE_DATASET = 64  # distinct images the producer draws from
PIPELINE_FEATURES = 64  # the consumer's layer: flattened image -> 64


class Producer:
    """A data pipeline's Python stage: batch `index` of `images` images through preprocess's
    image op in numpy, with the batch's own random brightness and flip. A module-level class of
    numpy arrays, so a DataLoader's worker processes can take it along."""

    def __init__(self, seed: int, images: int = 1):
        g = np.random.default_rng([seed, 0x706970])
        self.dataset = g.integers(0, 256, size=(PIPELINE_DATASET, *PIPELINE_IMAGE),
                                  dtype=np.uint8)
        self.seed = seed
        self.images = images

    def __call__(self, index: int) -> np.ndarray:
        g = np.random.default_rng([self.seed, 0x617567, int(index)])
        picks = (int(index) * self.images + np.arange(self.images)) % PIPELINE_DATASET
        delta = g.uniform(-MAX_DELTA, MAX_DELTA, size=self.images).astype(np.float32)
        flip = g.integers(0, 2, size=self.images).astype(bool)
        return image_op_float32(self.dataset[picks], delta, flip)


def consumer_weights(seed: int) -> np.ndarray:
    features = int(np.prod(PIPELINE_IMAGE))
    g = np.random.default_rng([seed, 0x636F6E])
    return (g.uniform(-1, 1, size=(features, PIPELINE_FEATURES)) / np.sqrt(features)
            ).astype(np.float32)


def pipeline_check(producer: Producer, w: np.ndarray
                   ) -> Callable[[Any, Arithmetic], str | None]:
    """The consumer's output for the batch it says it got, against float64 on that batch."""
    w64 = w.astype(np.float64)

    def check(result, arithmetic):
        index, y = result
        flat = producer(index).reshape(producer.images, -1).astype(np.float64)
        magnitude = float((np.abs(flat) @ np.abs(w64)).max())
        return compare(f"consumer output (batch {index})", y, flat @ w64,
                       atol=product_bound(flat.shape[1], arithmetic) * magnitude)
    return check


BUILDERS: dict[str, Callable[[Case, int], Problem]] = {
    "sumsq": sumsq, "image": image, "conv": conv, "lstm": lstm, "lstm_step": lstm_step,
    "matmul": matmul, "dense": dense, "copy": copy,
}
