// Family `preprocess`: element-wise vs vectorized preprocessing, on the CPU and the GPU.
//
// Names: preprocess/<variant>/<cpu|gpu>/op:sumsq/rows:<r>/cols:<c>
//        preprocess/<variant>/<cpu|gpu>/op:image/n:<images>/hw:<side>/c:<channels>
// variant: elementwise | vectorized; on the GPU also elementwise_e2e | vectorized_e2e, which add
// the input's host-to-device copy (from pageable memory, as a framework's host tensor is) and
// the output's copy back. Counters: bytes_per_second (bytes the op reads and writes),
// items_per_second (rows or images); GPU end-to-end also overhead_share.
#include "bench/preprocess.h"

#include "fixtures/setup_cache.h"

namespace gapbench::preprocess {
namespace {

// Times one CPU variant: `run(data, out)` computes the whole batch into `out`.
template <class Data, class Shape, class Run>
void bench_cpu(State& state, const std::string& key, Shape shape, Run run) {
  const Data& data = cached<Data>(key, shape);
  std::vector<float> out(data.out_size());
  validate_once([&] {
    run(data, out.data());
    return data.check(out);
  });
  for (auto _ : state) {
    run(data, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * data.bytes()));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * data.items()));
}

const char* style_name(Style style) {
  return style == Style::elementwise ? "elementwise" : "vectorized";
}

// Which of a sumsq shape's variants are registered (the profile's size tables decide).
struct SumsqVariants {
  bool cpu = true, gpu_elementwise = true, gpu_vectorized = true;
};

void register_sumsq(SumsqShape shape, SumsqVariants which) {
  auto name = [&](const std::string& variant) {
    return BenchName("preprocess", variant)
        .axis("op", "sumsq")
        .axis("rows", static_cast<long long>(shape.rows))
        .axis("cols", static_cast<long long>(shape.cols));
  };
  for (Style style : {Style::elementwise, Style::vectorized}) {
    const auto fn = style == Style::elementwise ? sumsq_elementwise : sumsq_vectorized;
    if (which.cpu) {
      add_cpu(name(style_name(style)), [=](State& st) {
        bench_cpu<SumsqData>(st, shape.key(), shape, [fn](const SumsqData& d, float* out) {
          fn(d.x.data(), d.shape.rows, d.shape.cols, out);
        });
      });
    }
    if (style == Style::elementwise ? !which.gpu_elementwise : !which.gpu_vectorized) continue;
    for (GpuTiming timing : {GpuTiming::kernel, GpuTiming::end_to_end}) {
      add_gpu(name(gpu_variant(style_name(style), timing)),
              GAPBENCH_GPU_BODY(sumsq_gpu(shape, style, timing)));
    }
  }
}

void register_image(ImageShape shape) {
  auto name = [&](const std::string& variant) {
    return BenchName("preprocess", variant)
        .axis("op", "image")
        .axis("n", static_cast<long long>(shape.n))
        .axis("hw", static_cast<long long>(shape.h))
        .axis("c", static_cast<long long>(shape.c));
  };
  for (Style style : {Style::elementwise, Style::vectorized}) {
    const auto fn = style == Style::elementwise ? image_elementwise : image_vectorized;
    add_cpu(name(style_name(style)), [=](State& st) {
      bench_cpu<ImageData>(st, image_key(shape), shape, [fn](const ImageData& d, float* out) {
        fn(d.in.data(), d.shape, d.aug.delta.data(), d.aug.flip.data(), out);
      });
    });
    for (GpuTiming timing : {GpuTiming::kernel, GpuTiming::end_to_end}) {
      add_gpu(name(gpu_variant(style_name(style), timing)),
              GAPBENCH_GPU_BODY(image_gpu(shape, style, timing)));
    }
  }
}

}  // namespace
}  // namespace gapbench::preprocess

namespace gapbench {

GAPBENCH_FAMILY(preprocess) {
  using preprocess::ImageShape;
  using preprocess::SumsqShape;
  // The classic 1,000,000 x 100 matrix; the full profile adds smaller ones, where per-call
  // overhead weighs more. The GPU's element-wise sum is one launch per row, about 4 us each on an
  // H200: 4 s an iteration at 10^6 rows, so the quick profile times it at 10^4 rows only (the
  // report compares element-wise and vectorized per row), everything else at 10^6.
  constexpr std::size_t kClassicRows = 1000000, kQuickElementwiseGpuRows = 10000;
  for (std::size_t rows : profile.pick<std::size_t>({kQuickElementwiseGpuRows, kClassicRows},
                                                    {10000, 100000, kClassicRows})) {
    const bool classic = rows == kClassicRows;
    preprocess::register_sumsq(
        {rows, 100}, profile.full() ? preprocess::SumsqVariants{}
                                    : preprocess::SumsqVariants{classic, !classic, classic});
  }
  // The classic batch of 32 images of 256 x 256 x 3; the full profile adds batch 1 and 128.
  for (ImageShape s : profile.pick<ImageShape>(
           {{32, 256, 256, 3}}, {{1, 256, 256, 3}, {32, 256, 256, 3}, {128, 256, 256, 3}})) {
    preprocess::register_image(s);
  }
}

}  // namespace gapbench
