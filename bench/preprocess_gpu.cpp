// Family `preprocess`, GPU variants (built only with CUDA). Kernel variants time the launches
// with events (held, but for the element-wise sumsq's one launch per row: more than a held stream
// queues, so timed unheld and labelled so); end-to-end variants add the input's copy from
// pageable host memory and the output's copy back, timed on the host clock.
#include <cuda_runtime_api.h>

#include "bench/preprocess.h"
#include "fixtures/device_probe.h"
#include "fixtures/gpu_timer.h"
#include "fixtures/setup_cache.h"
#include "kernels/base/gpu_memory.h"

namespace gapbench::preprocess {
namespace {

// Device copies of one shape's data, shared by the GPU variants of that shape.
struct SumsqDevice {
  explicit SumsqDevice(const SumsqData& d) : x(reserve(d)), out(d.shape.rows) {
    copy_to_device(x, d.x.data(), stream.get());
    stream.synchronize();
  }
  static std::size_t reserve(const SumsqData& d) {
    require_free_device_memory((d.x.size() + d.shape.rows) * sizeof(float));
    return d.x.size();
  }
  void upload_input(const SumsqData& d) { copy_to_device(x, d.x.data(), stream.get()); }
  cudaError_t launch(const SumsqData& d, Style style) {
    const auto fn = style == Style::elementwise ? sumsq_elementwise_gpu : sumsq_vectorized_gpu;
    return fn(x.data(), d.shape.rows, d.shape.cols, out.data(), stream.get());
  }
  // One per row element-wise: far more than a held stream queues (fixtures/hold_policy.h).
  static std::size_t launches(const SumsqData& d, Style style) {
    return style == Style::elementwise ? d.shape.rows : 1;
  }

  TimedStream stream;
  DeviceBuffer<float> x, out;
};

struct ImageDevice {
  explicit ImageDevice(const ImageData& d)
      : in(reserve(d.shape)), delta(d.shape.n), flip(d.shape.n), out(d.shape.pixels()) {
    copy_to_device(in, d.in.data(), stream.get());
    copy_to_device(delta, d.aug.delta.data(), stream.get());
    copy_to_device(flip, d.aug.flip.data(), stream.get());
    stream.synchronize();
  }
  static std::size_t reserve(const ImageShape& s) {
    require_free_device_memory(s.pixels() * (sizeof(std::uint8_t) + sizeof(float)));
    return s.pixels();
  }
  void upload_input(const ImageData& d) { copy_to_device(in, d.in.data(), stream.get()); }
  cudaError_t launch(const ImageData& d, Style style) {
    const auto fn = style == Style::elementwise ? image_elementwise_gpu : image_vectorized_gpu;
    return fn(in.data(), d.shape, delta.data(), flip.data(), out.data(), stream.get());
  }
  static std::size_t launches(const ImageData& d, Style style) {
    return style == Style::elementwise ? d.shape.n : 1;  // one per image element-wise
  }

  TimedStream stream;
  DeviceBuffer<std::uint8_t> in;
  DeviceBuffer<float> delta;
  DeviceBuffer<std::uint8_t> flip;
  DeviceBuffer<float> out;
};

template <class Device>
void download(Device& dev, std::vector<float>& host) {
  GAPBENCH_CHECK(cudaMemcpyAsync(host.data(), dev.out.data(), dev.out.bytes(),
                                 cudaMemcpyDeviceToHost, dev.stream.get()));
}

// One GPU variant of one shape: validated once (which also warms up), then timed.
template <class Data, class Device, class Shape>
void bench_gpu(State& state, const std::string& key, Shape shape, Style style, GpuTiming timing) {
  const Data& data = cached<Data>(key, shape);
  Device& dev = cached<Device>(key, data);
  std::vector<float> out(data.out_size());
  auto launch = [&] { GAPBENCH_CHECK(dev.launch(data, style)); };
  auto end_to_end = [&] {
    dev.upload_input(data);
    launch();
    download(dev, out);
    dev.stream.synchronize();
  };
  validate_once([&] {
    // The device output still holds the previous variant's result: poison it (all-ones bits are
    // a NaN), so a kernel that writes nothing cannot pass.
    poison(dev.out, dev.stream.get());
    if (timing == GpuTiming::kernel) {
      launch();
      download(dev, out);
      dev.stream.synchronize();
    } else {
      end_to_end();
    }
    return data.check(out);
  });
  const std::size_t launches = Device::launches(data, style);
  if (timing == GpuTiming::kernel) {
    time_kernel(state, dev.stream, launches, launch);
  } else {
    time_end_to_end(state, dev.stream, launches, launch, end_to_end);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * data.bytes()));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * data.items()));
}

}  // namespace

Body sumsq_gpu(SumsqShape shape, Style style, GpuTiming timing) {
  return
      [=](State& st) { bench_gpu<SumsqData, SumsqDevice>(st, shape.key(), shape, style, timing); };
}

Body image_gpu(ImageShape shape, Style style, GpuTiming timing) {
  return [=](State& st) {
    bench_gpu<ImageData, ImageDevice>(st, image_key(shape), shape, style, timing);
  };
}

}  // namespace gapbench::preprocess
