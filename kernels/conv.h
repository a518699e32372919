// Family `conv`: forward 2-D convolution, float32, NCHW (the layout cuDNN and PyTorch default to).
//
//   y[n][k][p][q] = sum over c, r, s of x[n][c][p*stride + r - pad][q*stride + s - pad]
//                                     * w[k][c][r][s]
//
// cross-correlation (no filter flip), as every framework's "conv2d" is; inputs outside the image
// are zero (padding). Input x is N x C x H x W, filter w is K x C x R x S, output y is N x K x P x
// Q.
//
// This file: the shape and its one validity check, the float64 reference and the tolerance of
// each arithmetic, the CPU variants (naive loops, im2col + OpenBLAS SGEMM), and the GPU variants'
// launchers (kernels in conv.cu). The library wrappers are kernels/conv_onednn.h and
// kernels/conv_cudnn.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/base/validate.h"  // Tolerance (header-only)

#if GAPBENCH_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace gapbench::conv {

// Stride and padding are the same along both axes (every shape of the family is); height and
// width, and the filter's R and S, may differ (the tests use that to catch swapped axes).
struct ConvShape {
  std::size_t n = 0, c = 0, h = 0, w = 0;  // input: images, channels, height, width
  std::size_t k = 0, r = 0, s = 0;         // filters, filter height, filter width
  std::size_t stride = 1, pad = 0;

  // Output height and width; meaningful only for a shape check_shape() accepts.
  std::size_t p() const { return (h + 2 * pad - r) / stride + 1; }
  std::size_t q() const { return (w + 2 * pad - s) / stride + 1; }
  std::size_t input_size() const { return n * c * h * w; }
  std::size_t filter_size() const { return k * c * r * s; }
  std::size_t output_size() const { return n * k * p() * q(); }
  std::size_t reduction() const { return c * r * s; }  // terms summed per output element
  // Floating-point operations, one multiply and one add per term: 2·N·K·C·R·S·P·Q.
  double flops() const;
  // "n:1 c:1 h:28 w:28 k:1 r:3 s:3 stride:1 pad:0", for messages.
  std::string str() const;
  // The same, compact: a cache key.
  std::string key() const;
};

// Throws std::invalid_argument with one message naming the shape and what is wrong with it: a
// zero dimension or stride, padding not smaller than the filter (whole output rows would see
// only padding), a filter larger than the padded input (no output), or a tensor of 2^31 elements
// or more (the GPU kernels and cuDNN index with 32-bit integers). Every entry point that
// allocates calls it first.
void check_shape(const ConvShape& shape);

// ---- reference and tolerance ----

// y (N x K x P x Q) with float64 products and sums.
void reference(const ConvShape& shape, const float* x, const float* w, double* y);

// An upper bound on sum |x·w| over the terms of any one output element: max|x| times the
// largest filter's sum of |w|. Rounding errors are proportional to it.
double magnitude_bound(const ConvShape& shape, const float* x, const float* w);

// The worst-case rounding bound of any summation order, as an absolute tolerance at the
// magnitude bound; derived in docs/reading-results.md#gemm-and-convolution.
Tolerance tolerance(const ConvShape& shape, double magnitude, Arithmetic arithmetic,
                    double output_roundoff = 0.0);

// One shape's seeded input and filter (uniform in [-1, 1)), its float64 reference and magnitude
// bound: what the benchmarks and the tests check every variant against. Rejects an impossible
// shape (std::invalid_argument) before allocating anything.
struct Problem {
  Problem(const ConvShape& shape, std::uint64_t seed);

  // `y` against the reference, with the tolerance of `arithmetic` (and of an output stored in
  // a narrower format).
  Validation check(const std::string& what, const std::vector<float>& y,
                   Arithmetic arithmetic = Arithmetic::float32,
                   double output_roundoff = 0.0) const {
    return validate(what, y, ref, tolerance(shape, magnitude, arithmetic, output_roundoff));
  }

  ConvShape shape;
  std::vector<float> x, w;
  std::vector<double> ref;
  double magnitude = 0.0;
};

// ---- CPU variants (one thread for naive; OpenBLAS's threads for im2col_blas) ----

// The textbook seven nested loops, one output element at a time with a float accumulator and a
// bounds test per term, as a user hand-writes it.
void naive(const ConvShape& shape, const float* x, const float* w, float* y);

// Floats of scratch im2col_blas needs: (C·R·S) x (P·Q) for one image, or 0 for a 1x1 filter of
// stride 1 without padding, whose image already is that matrix.
std::size_t im2col_scratch_size(const ConvShape& shape);

// One image (C x H x W) unrolled into `cols`, a row-major (C·R·S) x (P·Q) matrix: row (c, r, s)
// holds the input each output position multiplies with w[.][c][r][s] (zero where it is padding).
void im2col(const ConvShape& shape, const float* image, float* cols);

// Per image: im2col, then one SGEMM y_n[K x PQ] = w[K x CRS] · cols[CRS x PQ] (OpenBLAS, all its
// threads). `scratch` holds im2col_scratch_size(shape) floats.
void im2col_blas(const ConvShape& shape, const float* x, const float* w, float* y, float* scratch);

// ---- GPU variant `tiled`: how it covers a shape ----
// Host arithmetic, here rather than in conv.cu, so the CPU tests check it.
//
// A block of kTiledThreads threads computes kTiledTileK filters x tile_p rows x tile_q columns of
// one image. The input tile (with its halo) and the matching filter slice are staged through
// shared memory `chunk` input channels at a time; each thread accumulates kTiledThreadK filters x
// kTiledThreadQ columns (32 outputs) in registers, so every shared-memory value it reads feeds 4
// or 8 fused multiply-adds. A warp covers 32/threads_q rows x 4·threads_q columns of one group of
// 8 filters: its filter reads are one broadcast, its input reads hit distinct banks (see pitch).
inline constexpr int kTiledThreads = 256;
inline constexpr int kTiledTileK = 32;    // filters per block
inline constexpr int kTiledThreadK = 8;   // filters per thread (kTiledTileK / 4 warp groups)
inline constexpr int kTiledThreadQ = 4;   // output columns per thread
inline constexpr int kTiledWarpsP = 2;    // warps stacked along the rows of a tile
inline constexpr int kTiledMaxChunk = 8;  // input channels staged at a time, at most
// Floats per (c, r, s) row of the staged filter slice: a multiple of 4 (float4 reads) and not of
// 32, so the transposing writes that stage it hit 8 banks rather than one.
inline constexpr int kTiledFilterPitch = kTiledTileK + 4;
// Shared memory per block that every CUDA GPU grants without opting in.
inline constexpr std::size_t kTiledSharedLimit = 48 * 1024;

struct TiledPlan {
  int threads_q = 0;  // lanes along a row per warp: 8 (tile 32 wide) or 4 (16 wide)
  int tile_p = 0, tile_q = 0;
  int chunk = 0;                 // input channels staged per step
  int in_rows = 0, in_cols = 0;  // the staged input tile: output tile plus halo
  int in_pitch = 0;              // floats per staged input row (>= in_cols; see tiled_pitch)
  std::size_t shared_bytes = 0;
  std::size_t tiles_p = 0, tiles_q = 0, tiles_k = 0;
  std::size_t blocks = 0;  // tiles_p · tiles_q · tiles_k · N, one block each
};

// The plan for a valid shape: the tile shape that wastes fewest output positions (16 x 16 beats
// 8 x 32 on a 14 x 14 or 112 x 112 output), the most channels per step that fit
// kTiledSharedLimit. Throws std::invalid_argument when even one channel does not fit (filters
// beyond about 17 x 17).
TiledPlan tiled_plan(const ConvShape& shape);

// The row pitch of the staged input tile, from in_cols up: the one at which a warp's input reads
// (lane l reads row (l / threads_q)·stride, column (l % threads_q)·stride) spread over the most
// shared-memory banks. For stride 1 that is conflict-free (every lane its own bank).
int tiled_pitch(int in_cols, int threads_q, int stride);
// Most lanes of one warp that tiled_pitch's read pattern puts on one bank (1: conflict-free).
int tiled_bank_conflicts(int pitch, int threads_q, int stride);

#if GAPBENCH_WITH_CUDA
// ---- GPU variants: device pointers, asynchronous on `stream`; each returns the launch status
// for the caller's GAPBENCH_CHECK. The shape must pass check_shape. ----

// One thread per output element, straight from the seven loops (grid-stride).
cudaError_t naive_gpu(const ConvShape& shape, const float* x, const float* w, float* y,
                      cudaStream_t stream);

// The shared-memory tiled direct convolution (tiled_plan above). Throws std::invalid_argument
// where tiled_plan does.
cudaError_t tiled_gpu(const ConvShape& shape, const float* x, const float* w, float* y,
                      cudaStream_t stream);
// The same with the plan made beforehand (tiled_plan(shape)), so a timed launch does no host
// arithmetic between its events.
cudaError_t tiled_gpu(const ConvShape& shape, const TiledPlan& plan, const float* x, const float* w,
                      float* y, cudaStream_t stream);
#endif

}  // namespace gapbench::conv
