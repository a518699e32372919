// Family `preprocess`: the two classic preprocessing examples, each written the slow way
// (one element at a time through an opaque call, as an interpreter loop runs it; on the GPU, one
// small kernel launch per row or image, as eager per-item dispatch does) and the fast way (one
// contiguous vectorized pass over the whole batch; on the GPU, one batched kernel).
//
// Op `sumsq`: per-row sum of squares of a rows x cols row-major float matrix (the classic
//   1,000,000 x 100 "Python loop vs NumPy" example).
// Op `image`: image-batch preparation: n images of h x w x c uint8 (HWC layout) become floats
//   out = clamp(in / 255 + delta[i], 0, 1), mirrored left-right where flip[i] != 0
//   (random brightness and random horizontal flip, per image, as tf.image does).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#if GAPBENCH_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace gapbench::preprocess {

struct ImageShape {
  std::size_t n = 0, h = 0, w = 0, c = 0;
  std::size_t pixels() const { return n * h * w * c; }  // elements in the whole batch
  std::size_t image_elements() const { return h * w * c; }
};

// Per-image random brightness delta in [-max_delta, max_delta] and a flip flag (0 or 1), drawn
// from the seed so the CPU and GPU variants of one run see the same augmentation.
struct Augmentation {
  std::vector<float> delta;
  std::vector<std::uint8_t> flip;
};
Augmentation random_augmentation(std::size_t n, std::uint64_t seed, float max_delta = 0.25f);

// ---- CPU reference (float64 arithmetic) ----
void sumsq_reference(const float* x, std::size_t rows, std::size_t cols, double* out);
void image_reference(const std::uint8_t* in, ImageShape shape, const float* delta,
                     const std::uint8_t* flip, double* out);

// ---- CPU variants ----
void sumsq_elementwise(const float* x, std::size_t rows, std::size_t cols, float* out);
void sumsq_vectorized(const float* x, std::size_t rows, std::size_t cols, float* out);
void image_elementwise(const std::uint8_t* in, ImageShape shape, const float* delta,
                       const std::uint8_t* flip, float* out);
void image_vectorized(const std::uint8_t* in, ImageShape shape, const float* delta,
                      const std::uint8_t* flip, float* out);

#if GAPBENCH_WITH_CUDA
// ---- GPU variants: device pointers, asynchronous on `stream`. Each returns the launch status
// (cudaGetLastError after its launches; the first failure stops the loop) for the caller's
// GAPBENCH_CHECK. ----
cudaError_t sumsq_elementwise_gpu(const float* x, std::size_t rows, std::size_t cols, float* out,
                                  cudaStream_t stream);  // one launch per row
cudaError_t sumsq_vectorized_gpu(const float* x, std::size_t rows, std::size_t cols, float* out,
                                 cudaStream_t stream);  // one launch
cudaError_t image_elementwise_gpu(const std::uint8_t* in, ImageShape shape, const float* delta,
                                  const std::uint8_t* flip, float* out,
                                  cudaStream_t stream);  // one launch per image
cudaError_t image_vectorized_gpu(const std::uint8_t* in, ImageShape shape, const float* delta,
                                 const std::uint8_t* flip, float* out,
                                 cudaStream_t stream);  // one launch
#endif

// Tolerances of sumsq (relative, by the length of the sum) and of the image op (absolute):
// docs/reading-results.md#preprocess.
double sumsq_rtol(std::size_t cols);
inline constexpr double kImageAtol = 1e-6;
inline constexpr double kImageRtol = 1e-6;

}  // namespace gapbench::preprocess
