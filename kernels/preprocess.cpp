// Family `preprocess`, CPU side: the float64 references, then each op written twice.
//
// `*_elementwise` runs the way an interpreter loop does: every element goes through one opaque
// call (a [[gnu::noinline]] function reached through a volatile function pointer, so the compiler
// can neither inline the step nor vectorize the loop around it). `*_vectorized` is one contiguous
// pass over the batch that the compiler turns into SIMD code (-O3 -march=native), as NumPy's or
// tf.image's C loops do.
//
// The inputs (random_augmentation) and the tolerance (sumsq_rtol) come first, in the header's
// order. random_augmentation draws from gapbench::element_hash, the header-only hash of
// kernels/base/data.h, so the kernels library needs nothing else from fixtures/.
#include "kernels/preprocess.h"

#include <algorithm>
#include <utility>

#include "kernels/base/data.h"  // element_hash only (inline, header-only)
#include "kernels/inject.h"

namespace gapbench::preprocess {

namespace {

// Stream ids of the two augmentation draws ("prepdelt", "prepflip" in ASCII): independent of
// each other and of the small stream ids the fixtures use for their tensors.
constexpr std::uint64_t kDeltaStream = 0x7072657064656c74ull;
constexpr std::uint64_t kFlipStream = 0x70726570666c6970ull;

// The image op in float32, shared by both CPU variants (and written the same way in the .cu).
inline float brighten(std::uint8_t v, float delta) {
  const float y = static_cast<float>(v) * (1.0f / 255.0f) + delta;
  // std::max/min rather than std::fmax/fmin: identical for non-NaN values, and they compile to
  // maxps/minps (maxss/minss in scalar code: no branches) without -ffast-math.
  return std::min(std::max(y, 0.0f), 1.0f);
}

}  // namespace

Augmentation random_augmentation(std::size_t n, std::uint64_t seed, float max_delta) {
  Augmentation a;
  a.delta.resize(n);
  a.flip.resize(n);
  // fill_uniform's formula over [-max_delta, max_delta): 24 random bits per value.
  const float lo = -max_delta;
  const float scale = (2.0f * max_delta) * 0x1.0p-24f;
  for (std::size_t i = 0; i < n; ++i) {
    const auto bits = static_cast<float>(element_hash(seed, kDeltaStream, i) >> 40);
    a.delta[i] = lo + bits * scale;
    a.flip[i] = static_cast<std::uint8_t>(element_hash(seed, kFlipStream, i) >> 63);
  }
  return a;
}

double sumsq_rtol(std::size_t cols) { return std::max(1e-5, static_cast<double>(cols) * 0x1p-24); }

// ---- CPU reference (float64 arithmetic) ----

void sumsq_reference(const float* x, std::size_t rows, std::size_t cols, double* out) {
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    double acc = 0.0;
    for (std::size_t j = 0; j < cols; ++j) {
      const double v = row[j];
      acc += v * v;
    }
    out[r] = acc;
  }
}

void image_reference(const std::uint8_t* in, ImageShape shape, const float* delta,
                     const std::uint8_t* flip, double* out) {
  const std::size_t w = shape.w, c = shape.c;
  for (std::size_t i = 0; i < shape.n; ++i) {
    const double d = delta[i];
    for (std::size_t y = 0; y < shape.h; ++y) {
      const std::size_t row = (i * shape.h + y) * w * c;
      for (std::size_t x = 0; x < w; ++x) {
        const std::size_t src_x = flip[i] ? w - 1 - x : x;
        for (std::size_t ch = 0; ch < c; ++ch) {
          const double v = static_cast<double>(in[row + src_x * c + ch]) / 255.0 + d;
          out[row + x * c + ch] = std::min(1.0, std::max(0.0, v));
        }
      }
    }
  }
}

// ---- CPU variants ----

namespace {

// The opaque per-element steps of the elementwise variants.
[[gnu::noinline]] float sumsq_step(float acc, float x) { return acc + x * x; }
[[gnu::noinline]] float image_step(std::uint8_t v, float delta) { return brighten(v, delta); }

using SumsqStep = float (*)(float, float);
using ImageStep = float (*)(std::uint8_t, float);
// Volatile: the pointer is re-read on every call, so no call can be resolved at compile time.
SumsqStep volatile g_sumsq_step = &sumsq_step;
ImageStep volatile g_image_step = &image_step;

// Mirrors one row of w pixels of C channels in place (C = 0: c channels, known at run time):
// pixel x and pixel w-1-x swap, channels keep their order.
template <std::size_t C>
void mirror_pixels(float* row, std::size_t w, std::size_t c) {
  const std::size_t channels = C != 0 ? C : c;
  for (std::size_t x = 0; x < w / 2; ++x) {
    float* a = row + x * channels;
    float* b = row + (w - 1 - x) * channels;
    for (std::size_t ch = 0; ch < channels; ++ch) std::swap(a[ch], b[ch]);
  }
}

}  // namespace

void sumsq_elementwise(const float* x, std::size_t rows, std::size_t cols, float* out) {
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    float acc = 0.0f;
    for (std::size_t j = 0; j < cols; ++j) acc = g_sumsq_step(acc, row[j]);
    out[r] = acc;
  }
}

void sumsq_vectorized(const float* __restrict x, std::size_t rows, std::size_t cols,
                      float* __restrict out) {
  // kLanes independent partial sums: the float adds need no reassociation, so the lane loop
  // vectorizes (two 8-wide vectors with AVX2, one with AVX-512) without -ffast-math.
  constexpr std::size_t kLanes = 16;
  // Rows of the classic example's shape are short (100 floats): each row's reduction tail stalls
  // the stream long enough that the hardware prefetcher falls behind. Asking for the data 1 KiB
  // ahead keeps the loads in flight (measured on a 2-core EPYC: 12.2 -> 14.8 GB/s, ~92% of a pure
  // read).
  constexpr std::size_t kPrefetchBytes = 1024;
  constexpr std::size_t kLineBytes = 64;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* __restrict row = x + r * cols;
    const char* ahead = reinterpret_cast<const char*>(row) + kPrefetchBytes;
    for (std::size_t b = 0; b < cols * sizeof(float); b += kLineBytes) {
      __builtin_prefetch(ahead + b);  // a hint: prefetching past the end never faults
    }
    float acc[kLanes] = {};
    std::size_t j = 0;
    for (; j + kLanes <= cols; j += kLanes) {
      for (std::size_t l = 0; l < kLanes; ++l) acc[l] += row[j + l] * row[j + l];
    }
    float tail = 0.0f;
    for (; j < cols; ++j) tail += row[j] * row[j];
    // Pairwise combine of the lanes.
    for (std::size_t half = kLanes / 2; half > 0; half /= 2) {
      for (std::size_t l = 0; l < half; ++l) acc[l] += acc[l + half];
    }
    out[r] = acc[0] + tail;
  }
}

namespace {

void image_elementwise_pass(const std::uint8_t* in, ImageShape shape, const float* delta,
                            const std::uint8_t* flip, float* out) {
  const std::size_t w = shape.w, c = shape.c;
  for (std::size_t i = 0; i < shape.n; ++i) {
    for (std::size_t y = 0; y < shape.h; ++y) {
      const std::size_t row = (i * shape.h + y) * w * c;
      for (std::size_t x = 0; x < w; ++x) {
        const std::size_t src_x = flip[i] ? w - 1 - x : x;
        for (std::size_t ch = 0; ch < c; ++ch) {
          out[row + x * c + ch] = g_image_step(in[row + src_x * c + ch], delta[i]);
        }
      }
    }
  }
}

// Test only (kernels/inject.h): ci/gate-proof's known slowdown. `pass` runs once more over the
// first rows of the batch (whole images, then the first rows of the next: rows are
// independent, flips included), which leaves the output as it was.
template <typename Pass>
void inject_image_rows([[maybe_unused]] Pass pass, [[maybe_unused]] const std::uint8_t* in,
                       [[maybe_unused]] ImageShape shape, [[maybe_unused]] const float* delta,
                       [[maybe_unused]] const std::uint8_t* flip, [[maybe_unused]] float* out) {
#if GAPBENCH_TEST_INJECT
  const std::size_t rows = inject::extra(shape.n * shape.h);
  const std::size_t images = rows / shape.h;
  pass(in, {images, shape.h, shape.w, shape.c}, delta, flip, out);
  if (const std::size_t rest = rows % shape.h; rest > 0) {
    const std::size_t offset = images * shape.image_elements();
    pass(in + offset, {1, rest, shape.w, shape.c}, delta + images, flip + images, out + offset);
  }
#endif
}

}  // namespace

void image_elementwise(const std::uint8_t* in, ImageShape shape, const float* delta,
                       const std::uint8_t* flip, float* out) {
  image_elementwise_pass(in, shape, delta, flip, out);
  inject_image_rows(image_elementwise_pass, in, shape, delta, flip, out);
}

namespace {

void image_vectorized_pass(const std::uint8_t* __restrict in, ImageShape shape,
                           const float* __restrict delta, const std::uint8_t* __restrict flip,
                           float* __restrict out) {
  const std::size_t row_elements = shape.w * shape.c;
  for (std::size_t i = 0; i < shape.n; ++i) {
    const float d = delta[i];
    for (std::size_t y = 0; y < shape.h; ++y) {
      const std::size_t offset = (i * shape.h + y) * row_elements;
      const std::uint8_t* __restrict src = in + offset;
      float* __restrict dst = out + offset;
      // The row is one straight run of w*c elements; a flipped row is then mirrored in place,
      // while it is still in L1 (reading it right-to-left instead does not vectorize for c = 3).
      for (std::size_t k = 0; k < row_elements; ++k) dst[k] = brighten(src[k], d);
      if (flip[i]) {
        if (shape.c == 3) {
          mirror_pixels<3>(dst, shape.w, 3);
        } else if (shape.c == 1) {
          mirror_pixels<1>(dst, shape.w, 1);
        } else {
          mirror_pixels<0>(dst, shape.w, shape.c);
        }
      }
    }
  }
}

}  // namespace

void image_vectorized(const std::uint8_t* __restrict in, ImageShape shape,
                      const float* __restrict delta, const std::uint8_t* __restrict flip,
                      float* __restrict out) {
  image_vectorized_pass(in, shape, delta, flip, out);
  inject_image_rows(image_vectorized_pass, in, shape, delta, flip, out);
}

}  // namespace gapbench::preprocess
