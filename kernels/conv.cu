// Family `conv`, GPU side: the naive and tiled kernels, then their launchers (conv.h).
//
// Both compute in float32 with fused multiply-adds; indices are 32-bit, which check_shape
// guarantees (every tensor has fewer than 2^31 elements).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/conv.h"
#include "kernels/grid_stride.cuh"

namespace gapbench::conv {

namespace {

// The shape as kernel arguments.
struct Dims {
  int n, c, h, w, k, r, s, stride, pad, p, q;
};

Dims dims_of(const ConvShape& sh) {
  return {static_cast<int>(sh.n),   static_cast<int>(sh.c),      static_cast<int>(sh.h),
          static_cast<int>(sh.w),   static_cast<int>(sh.k),      static_cast<int>(sh.r),
          static_cast<int>(sh.s),   static_cast<int>(sh.stride), static_cast<int>(sh.pad),
          static_cast<int>(sh.p()), static_cast<int>(sh.q())};
}

// ---- naive: one thread per output element ----

// Grid-stride over the output in NKPQ order, so neighbouring threads write neighbouring outputs
// and read neighbouring inputs. `total` < 2^31 and the grid has at most 65535·256 threads, so
// i + stride never wraps an unsigned int.
__global__ void naive_kernel(const float* __restrict__ x, const float* __restrict__ w,
                             float* __restrict__ y, Dims d, unsigned total) {
  const unsigned grid = gridDim.x * blockDim.x;
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += grid) {
    const int q = static_cast<int>(i % d.q);
    unsigned rest = i / d.q;
    const int p = static_cast<int>(rest % d.p);
    rest /= d.p;
    const int k = static_cast<int>(rest % d.k);
    const int n = static_cast<int>(rest / d.k);
    float acc = 0.0f;
    for (int c = 0; c < d.c; ++c) {
      for (int r = 0; r < d.r; ++r) {
        for (int s = 0; s < d.s; ++s) {
          const int ih = p * d.stride + r - d.pad;
          const int iw = q * d.stride + s - d.pad;
          if (ih < 0 || ih >= d.h || iw < 0 || iw >= d.w) continue;
          acc += x[((n * d.c + c) * d.h + ih) * d.w + iw] * w[((k * d.c + c) * d.r + r) * d.s + s];
        }
      }
    }
    y[i] = acc;
  }
}

// ---- tiled: shared-memory tiles, 32 outputs per thread (conv.h has the layout) ----

struct TiledArgs {
  Dims d;
  int chunk, in_rows, in_cols, in_pitch;
  int tiles_p, tiles_q, tiles_k;
};

constexpr int kWarp = 32;
constexpr int kWarps = kTiledThreads / kWarp;
constexpr int kWarpsK = kTiledTileK / kTiledThreadK;  // warp groups along the filters
static_assert(kWarpsK * kTiledWarpsP == kWarps, "every warp has one (filter group, row group)");
static_assert(kTiledThreadK == 8, "the filter values are read as two float4");

// kThreadsQ: lanes along a row (8 or 4); kStride: the stride, or 0 to read it from the shape.
// Lane l of a warp computes output row l / kThreadsQ of the warp's rows and the columns
// l % kThreadsQ + j·kThreadsQ (j < 4): interleaved, so lanes of one row read consecutive input
// columns (distinct banks, with tiled_pitch's row pitch).
template <int kThreadsQ, int kStride>
__global__ void __launch_bounds__(kTiledThreads)
    tiled_kernel(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                 TiledArgs a) {
  constexpr int kRowsPerWarp = kWarp / kThreadsQ;
  constexpr int kTileP = kTiledWarpsP * kRowsPerWarp;
  constexpr int kTileQ = kThreadsQ * kTiledThreadQ;
  const Dims& d = a.d;
  const int stride = kStride > 0 ? kStride : d.stride;

  // Filter slice first: float4 reads need 16-byte alignment, which the float4 array gives.
  extern __shared__ float4 shared4[];
  float* const filt = reinterpret_cast<float*>(shared4);  // [chunk·R·S][kTiledFilterPitch]
  const int rs = d.r * d.s;
  float* const tile = filt + a.chunk * rs * kTiledFilterPitch;  // [chunk][in_rows][in_pitch]

  // Block -> (image, row tile, column tile, filter tile); filter tiles vary fastest, so blocks
  // running together share their input tile through L2.
  int b = static_cast<int>(blockIdx.x);
  const int kt = b % a.tiles_k;
  b /= a.tiles_k;
  const int qt = b % a.tiles_q;
  b /= a.tiles_q;
  const int pt = b % a.tiles_p;
  const int img = b / a.tiles_p;
  const int k0 = kt * kTiledTileK, p0 = pt * kTileP, q0 = qt * kTileQ;

  const int tid = static_cast<int>(threadIdx.x);
  const int lane = tid % kWarp, warp = tid / kWarp;
  const int kgroup = warp % kWarpsK, pgroup = warp / kWarpsK;
  const int tq = lane % kThreadsQ;
  const int row = pgroup * kRowsPerWarp + lane / kThreadsQ;  // output row within the tile

  const int in_y0 = p0 * stride - d.pad, in_x0 = q0 * stride - d.pad;
  const int crs = d.c * rs;
  const float* const x_img = x + img * d.c * d.h * d.w;

  float acc[kTiledThreadK][kTiledThreadQ] = {};
  for (int c0 = 0; c0 < d.c; c0 += a.chunk) {
    const int cc = min(a.chunk, d.c - c0);
    // Filter slice, transposed to [c][r][s][filter]: global reads run along one filter's
    // contiguous (c, r, s) run; filters past K are zero.
    const int slice = cc * rs;
    for (int i = tid; i < kTiledTileK * slice; i += kTiledThreads) {
      const int kk = i / slice, j = i - kk * slice;
      const int k = k0 + kk;
      filt[j * kTiledFilterPitch + kk] = k < d.k ? w[k * crs + c0 * rs + j] : 0.0f;
    }
    // Input tile with halo, one staged row per warp step (lanes along the row, coalesced);
    // zero where it is padding or past the image.
    for (int row_i = warp; row_i < cc * a.in_rows; row_i += kWarps) {
      const int c = row_i / a.in_rows;
      const int gy = in_y0 + (row_i - c * a.in_rows);
      float* const dst = tile + row_i * a.in_pitch;
      const bool row_inside = gy >= 0 && gy < d.h;
      const float* const src = x_img + ((c0 + c) * d.h + (row_inside ? gy : 0)) * d.w;
      for (int col = lane; col < a.in_cols; col += kWarp) {
        const int gx = in_x0 + col;
        dst[col] = row_inside && gx >= 0 && gx < d.w ? src[gx] : 0.0f;
      }
    }
    __syncthreads();

    for (int c = 0; c < cc; ++c) {
      for (int r = 0; r < d.r; ++r) {
        const float* const in_row =
            tile + (c * a.in_rows + row * stride + r) * a.in_pitch + tq * stride;
        const float* const f_row =
            filt + (c * rs + r * d.s) * kTiledFilterPitch + kgroup * kTiledThreadK;
        for (int s = 0; s < d.s; ++s) {
          float xv[kTiledThreadQ];
#pragma unroll
          for (int j = 0; j < kTiledThreadQ; ++j) xv[j] = in_row[j * kThreadsQ * stride + s];
          // Same address across the warp: a broadcast.
          const float4 lo = *reinterpret_cast<const float4*>(f_row + s * kTiledFilterPitch);
          const float4 hi = *reinterpret_cast<const float4*>(f_row + s * kTiledFilterPitch + 4);
          const float fv[kTiledThreadK] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
          for (int kk = 0; kk < kTiledThreadK; ++kk) {
#pragma unroll
            for (int j = 0; j < kTiledThreadQ; ++j) acc[kk][j] = fmaf(fv[kk], xv[j], acc[kk][j]);
          }
        }
      }
    }
    __syncthreads();  // before the next step overwrites the tiles
  }

  const int p = p0 + row;
  if (p >= d.p) return;
#pragma unroll
  for (int kk = 0; kk < kTiledThreadK; ++kk) {
    const int k = k0 + kgroup * kTiledThreadK + kk;
    if (k >= d.k) break;
    float* const out = y + ((img * d.k + k) * d.p + p) * d.q;
#pragma unroll
    for (int j = 0; j < kTiledThreadQ; ++j) {
      const int q = q0 + tq + j * kThreadsQ;
      if (q < d.q) out[q] = acc[kk][j];
    }
  }
}

template <int kThreadsQ>
void launch_tiled(const TiledPlan& plan, const TiledArgs& args, const float* x, const float* w,
                  float* y, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(plan.blocks));
  const std::size_t shared = plan.shared_bytes;
  // Strides 1 and 2 (every shape of the family) get their own code; others read it at run time.
  switch (args.d.stride) {
    case 1:
      tiled_kernel<kThreadsQ, 1><<<grid, kTiledThreads, shared, stream>>>(x, w, y, args);
      break;
    case 2:
      tiled_kernel<kThreadsQ, 2><<<grid, kTiledThreads, shared, stream>>>(x, w, y, args);
      break;
    default:
      tiled_kernel<kThreadsQ, 0><<<grid, kTiledThreads, shared, stream>>>(x, w, y, args);
  }
}

}  // namespace

// ---- launchers ----

cudaError_t naive_gpu(const ConvShape& shape, const float* x, const float* w, float* y,
                      cudaStream_t stream) {
  constexpr unsigned kThreads = 256;
  const std::size_t total = shape.output_size();
  const std::size_t blocks = grid::blocks_for(total, kThreads);
  naive_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      x, w, y, dims_of(shape), static_cast<unsigned>(total));
  return cudaGetLastError();
}

cudaError_t tiled_gpu(const ConvShape& shape, const float* x, const float* w, float* y,
                      cudaStream_t stream) {
  // tiled_plan checks the shape, and throws if it cannot stage it.
  return tiled_gpu(shape, tiled_plan(shape), x, w, y, stream);
}

cudaError_t tiled_gpu(const ConvShape& shape, const TiledPlan& plan, const float* x, const float* w,
                      float* y, cudaStream_t stream) {
  const TiledArgs args{dims_of(shape),
                       plan.chunk,
                       plan.in_rows,
                       plan.in_cols,
                       plan.in_pitch,
                       static_cast<int>(plan.tiles_p),
                       static_cast<int>(plan.tiles_q),
                       static_cast<int>(plan.tiles_k)};
  if (plan.threads_q == 8) {
    launch_tiled<8>(plan, args, x, w, y, stream);
  } else {
    launch_tiled<4>(plan, args, x, w, y, stream);
  }
  return cudaGetLastError();
}

}  // namespace gapbench::conv
