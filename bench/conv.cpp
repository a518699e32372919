// Family `conv`: a hand-written convolution against the libraries a framework calls.
//
// Names: conv/<variant>/<cpu|gpu>/n:<images>/c:<channels>/hw:<height=width>/k:<filters>/
//        r:<filter height=width>/stride:<s>/pad:<p>
// CPU variants (real time):
//   naive        the textbook seven loops, one thread (kernels/conv.h)
//   im2col_blas  im2col per image + one OpenBLAS SGEMM per image, OpenBLAS's threads
//   onednn       oneDNN's direct convolution primitive, its OpenMP threads; created once, its
//                creation time in `setup_ms`, its implementation and layout in the label. The
//                primitive alone is timed: the input is reordered into its layout (NHWC on
//                AVX-512) before, the output back to NCHW after, as a framework's tensors stay
//                in that layout between layers (kernels/conv_onednn.h)
// GPU variants (manual time, CUDA events):
//   naive        one thread per output element
//   tiled        shared-memory tiled direct convolution, 32 outputs per thread
//   cudnn        cuDNN with the fastest algorithm of a search as PyTorch's cudnn.benchmark
//                (kernels/conv_cudnn.h); the search time in `setup_ms`, the algorithm, workspace
//                and math mode in the label. Always with its math axis, math:<fp32|tf32|fp16>:
//                fp32 is CUDNN_FMA_MATH (no TF32), never cuDNN's default math, which lets a
//                float32 convolution use TF32 on compute capability 8.0 and later
//   cudnn_e2e    the same plus the input's copy in (from pageable memory), the output's copy back
//                and the final synchronize, on the host clock; also `overhead_share`
// Counters: flops (2·N·K·C·R·S·P·Q per iteration, a rate), items_per_second (images).
// Every variant is validated against the float64 reference first, with the rounding bound of its
// arithmetic (kernels/conv.h says why).
#include "bench/conv.h"

#include <limits>

#include "fixtures/device_probe.h"
#include "fixtures/setup_cache.h"
#include "kernels/base/data.h"
#include "kernels/conv_onednn.h"

namespace gapbench::conv {
namespace {

enum class CpuVariant { naive, im2col_blas, onednn, onednn_bf16 };

struct NoStep {
  void operator()() const {}
};

// Validates `run()` once, with the tolerance of its arithmetic, then times it; `finish()` (not
// timed) writes y from what run() left, for a variant whose output stays in its own layout.
template <class Run, class Finish = NoStep>
void time_cpu(State& state, const Problem& data, std::vector<float>& y, Run&& run,
              Arithmetic arithmetic = Arithmetic::float32, Finish&& finish = Finish{}) {
  validate_once([&] {
    run();
    finish();
    return data.check("conv", y, arithmetic);
  });
  for (auto _ : state) {
    run();
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
}

void bench_cpu(State& state, const ConvShape& shape, CpuVariant variant) {
  const Problem& data = cached_problem(shape);
  // NaN until written: a variant that skips an element fails validation.
  std::vector<float> y(shape.output_size(), std::numeric_limits<float>::quiet_NaN());
  const float* x = data.x.data();
  const float* w = data.w.data();
  switch (variant) {
    case CpuVariant::naive:
      time_cpu(state, data, y, [&] { naive(shape, x, w, y.data()); });
      break;
    case CpuVariant::im2col_blas: {
      std::vector<float> scratch(im2col_scratch_size(shape));
      time_cpu(state, data, y, [&] { im2col_blas(shape, x, w, y.data(), scratch.data()); });
      break;
    }
    case CpuVariant::onednn:
    case CpuVariant::onednn_bf16: {
      const bool bf16 = variant == CpuVariant::onednn_bf16;
      // Emulated bf16 is slower than float32: timing it under the bf16 name would mislead.
      if (bf16) require_cpu_arithmetic(Arithmetic::bf16);
      const Arithmetic math = bf16 ? Arithmetic::bf16 : Arithmetic::float32;
      OnednnConvolution& dnn =
          cached<OnednnConvolution>(shape.key() + (bf16 ? ":bf16" : ""), shape, w, math);
      dnn.load_input(x);  // into the primitive's layout (and for bf16 rounded), untimed
      time_cpu(
          state, data, y, [&] { dnn.forward(); }, math, [&] { dnn.read_output(y.data()); });
      state.counters["setup_ms"] = dnn.setup_seconds() * 1e3;
      state.SetLabel(dnn.description());
      break;
    }
  }
  set_conv_counters(state, shape);
}

void register_shape(const ConvShape& shape, bool naive_on_cpu) {
  auto name = [&](const std::string& variant) {
    return with_shape_axes(BenchName("conv", variant), shape);
  };
  const std::pair<const char*, CpuVariant> cpu[] = {{"naive", CpuVariant::naive},
                                                    {"im2col_blas", CpuVariant::im2col_blas},
                                                    {"onednn", CpuVariant::onednn}};
  for (const auto& [variant, id] : cpu) {
    if (id == CpuVariant::naive && !naive_on_cpu) continue;
    add_cpu(name(variant), [shape, id = id](State& st) { bench_cpu(st, shape, id); });
  }
  add_cpu(name("onednn").axis("math", math_name(Arithmetic::bf16)),
          [shape](State& st) { bench_cpu(st, shape, CpuVariant::onednn_bf16); });
  const std::pair<std::string, GpuVariant> gpu[] = {{"naive", GpuVariant::naive},
                                                    {"tiled", GpuVariant::tiled}};
  for (const auto& [variant, id] : gpu) {
    add_gpu(name(variant), GAPBENCH_GPU_BODY(conv_gpu(shape, id)));
  }
  // cuDNN in each math mode said outright.
  for (GpuTiming timing : {GpuTiming::kernel, GpuTiming::end_to_end}) {
    for (Arithmetic math : {Arithmetic::float32, Arithmetic::tf32, Arithmetic::fp16}) {
      add_gpu(name(gpu_variant("cudnn", timing)).axis("math", math_name(math)),
              GAPBENCH_GPU_BODY(conv_cudnn_math_gpu(shape, math, timing)));
    }
  }
}

struct Layer {
  ConvShape shape;
  bool naive_on_cpu;  // the naive CPU loops take seconds per GFLOP: only where they make a point
};

}  // namespace

BenchName with_shape_axes(BenchName name, const ConvShape& shape) {
  return name.axis("n", static_cast<long long>(shape.n))
      .axis("c", static_cast<long long>(shape.c))
      .axis("hw", static_cast<long long>(shape.h))
      .axis("k", static_cast<long long>(shape.k))
      .axis("r", static_cast<long long>(shape.r))
      .axis("stride", static_cast<long long>(shape.stride))
      .axis("pad", static_cast<long long>(shape.pad));
}

const Problem& cached_problem(const ConvShape& shape) {
  return cached<Problem>(shape.key(), shape, run_seed());
}

void set_conv_counters(State& state, const ConvShape& shape) {
  set_flops_counter(state, shape.flops());
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(shape.n));
}

}  // namespace gapbench::conv

namespace gapbench {

GAPBENCH_FAMILY(conv) {
  using conv::ConvShape;
  using conv::Layer;
  //                       n    c    h    w    k  r  s  stride pad
  // The classic tiny input: one 28 x 28 image, one 3 x 3 filter ('valid', as Keras defaults to).
  const ConvShape tiny{1, 1, 28, 28, 1, 3, 3, 1, 0};
  // A ResNet stem: 7 x 7, stride 2, on 224 x 224 RGB.
  const ConvShape stem{32, 3, 224, 224, 64, 7, 7, 2, 3};
  // The 3 x 3 layer of ResNet's first stage: the one the 60%-of-SGEMM and 10x targets are about.
  const ConvShape layer56{32, 64, 56, 56, 64, 3, 3, 1, 1};
  // DeepBench's published shape (its T4 figure is the report's comparison point).
  const ConvShape deepbench{8, 64, 112, 112, 128, 3, 3, 1, 1};
  const ConvShape layer14{32, 256, 14, 14, 256, 3, 3, 1, 1};
  // A 1 x 1 pointwise layer (ResNet-50's 256 -> 64 bottleneck reduction).
  const ConvShape pointwise{32, 256, 56, 56, 64, 1, 1, 1, 0};

  // Quick: the tiny input, and the 3 x 3 and pointwise layers at batch 2, where the naive CPU
  // loops take about 0.4 s per iteration on 2 cores (naive and the libraries share the axes).
  // Full: every shape; naive on the CPU only where it makes the point (the tiny input, the
  // 3 x 3 layer the 10x target is about, the pointwise layer): 5-7 s per iteration there.
  auto batch = [](ConvShape s, std::size_t n) {
    s.n = n;
    return s;
  };
  for (const Layer& layer :
       profile.pick<Layer>({{tiny, true}, {batch(layer56, 2), true}, {batch(pointwise, 2), true}},
                           {{tiny, true},
                            {stem, false},
                            {layer56, true},
                            {deepbench, false},
                            {layer14, false},
                            {pointwise, true}})) {
    conv::register_shape(layer.shape, layer.naive_on_cpu);
  }
}

}  // namespace gapbench
