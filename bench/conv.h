// Family `conv`: what the CPU and GPU variants share. One shape's data (seeded input and filter)
// and its float64 reference are built once (fixtures/setup_cache.h) and checked against by every
// variant, each with the tolerance of its arithmetic (kernels/conv.h).
#pragma once

#include <string>
#include <vector>

#include "fixtures/harness.h"
#include "kernels/base/validate.h"
#include "kernels/conv.h"

namespace gapbench::conv {

// A shape's Problem under the run's seed, built once per process.
const Problem& cached_problem(const ConvShape& shape);

// A conv row's shape axes, appended to `name`: n, c, hw, k, r, stride, pad.
BenchName with_shape_axes(BenchName name, const ConvShape& shape);

// flops (2·N·K·C·R·S·P·Q per iteration, as a rate) and items_per_second (images).
void set_conv_counters(State& state, const ConvShape& shape);

// The hand-written kernels (float32, no library).
enum class GpuVariant { naive, tiled };

// GPU bodies, defined in bench/conv_gpu.cpp (CUDA builds only; see GAPBENCH_GPU_BODY).
Body conv_gpu(ConvShape shape, GpuVariant variant);
// cuDNN in one math mode, always said in the name (fp32 with TF32 off, tf32, fp16 NHWC;
// kernels/conv_cudnn.h): cuDNN's default math would let a float32 row use TF32.
Body conv_cudnn_math_gpu(ConvShape shape, Arithmetic arithmetic, GpuTiming timing);

}  // namespace gapbench::conv
