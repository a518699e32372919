// Family `conv`, GPU variants (built only with CUDA). Kernel variants are timed with events on
// the shape's stream; cudnn_e2e adds the input's copy from pageable host memory (a framework's
// host tensor), the output's copy back and the synchronize, on the host clock.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "bench/conv.h"
#include "fixtures/device_probe.h"
#include "fixtures/gpu_timer.h"
#include "fixtures/setup_cache.h"
#include "kernels/base/cuda_libraries.h"
#include "kernels/base/gpu_memory.h"
#include "kernels/conv_cudnn.h"

namespace gapbench::conv {
namespace {

#if GAPBENCH_WITH_CUDNN
// A shape's cuDNN set-up: handle on the shape's stream, descriptors and algorithm search, and
// the chosen algorithm's workspace.
struct CudnnState {
  CudnnState(cudaStream_t stream, const ConvShape& shape)
      : handle(stream), conv(handle.get(), shape), workspace(reserve(conv.workspace_bytes())) {}
  static std::size_t reserve(std::size_t bytes) {
    require_free_device_memory(bytes);
    return bytes;
  }
  CudnnHandle handle;
  CudnnConvolution conv;
  DeviceBuffer<std::uint8_t> workspace;
};
#endif

// Device copies of one shape's tensors, shared by its GPU variants.
struct ConvDevice {
  explicit ConvDevice(const Problem& d)
      : x(reserve(d.shape)), w(d.shape.filter_size()), y(d.shape.output_size()) {
    upload_input(d);
    GAPBENCH_CHECK(
        cudaMemcpyAsync(w.data(), d.w.data(), w.bytes(), cudaMemcpyHostToDevice, stream.get()));
    stream.synchronize();
  }
  static std::size_t reserve(const ConvShape& s) {
    require_free_device_memory((s.input_size() + s.filter_size() + s.output_size()) *
                               sizeof(float));
    return s.input_size();
  }
  void upload_input(const Problem& d) {
    GAPBENCH_CHECK(
        cudaMemcpyAsync(x.data(), d.x.data(), x.bytes(), cudaMemcpyHostToDevice, stream.get()));
  }
  void download_output(std::vector<float>& host) {
    GAPBENCH_CHECK(
        cudaMemcpyAsync(host.data(), y.data(), y.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  }

  TimedStream stream;
  DeviceBuffer<float> x, w, y;
#if GAPBENCH_WITH_CUDNN
  // Built by the shape's first cuDNN variant; declared last, so destroyed before the stream its
  // handle is bound to.
  std::unique_ptr<CudnnState> cudnn;
  CudnnState& cudnn_state(const ConvShape& shape) {
    if (!cudnn) cudnn = std::make_unique<CudnnState>(stream.get(), shape);
    return *cudnn;
  }
#endif
};

[[maybe_unused]] bool uses_cudnn(GpuVariant v) {
  return v == GpuVariant::cudnn || v == GpuVariant::cudnn_e2e;
}

void bench_gpu(State& state, const ConvShape& shape, GpuVariant variant) {
#if !GAPBENCH_WITH_CUDNN
  if (uses_cudnn(variant)) throw Skip("built without cuDNN");
#endif
  const Problem& data = cached_problem(shape);
  ConvDevice& dev = cached<ConvDevice>(shape.key(), data);
  std::function<void()> launch;
  Arithmetic arithmetic = Arithmetic::float32;
  switch (variant) {
    case GpuVariant::naive:
      launch = [&] {
        GAPBENCH_CHECK(
            naive_gpu(shape, dev.x.data(), dev.w.data(), dev.y.data(), dev.stream.get()));
      };
      break;
    case GpuVariant::tiled:
      // Planned once here, so the timed launch does no host arithmetic between its events.
      launch = [&, plan = tiled_plan(shape)] {
        GAPBENCH_CHECK(
            tiled_gpu(shape, plan, dev.x.data(), dev.w.data(), dev.y.data(), dev.stream.get()));
      };
      break;
    case GpuVariant::cudnn:
    case GpuVariant::cudnn_e2e: {
#if GAPBENCH_WITH_CUDNN
      CudnnState& cudnn = dev.cudnn_state(shape);
      launch = [&dev, &cudnn] {
        cudnn.conv.forward(dev.x.data(), dev.w.data(), dev.y.data(), cudnn.workspace.data());
      };
      // DEFAULT_MATH lets cuDNN use TF32 tensor cores (kernels/conv_cudnn.h).
      arithmetic = Arithmetic::tf32;
      state.counters["setup_ms"] = cudnn.conv.search_seconds() * 1e3;
      state.SetLabel(cudnn.conv.description());
#endif
      break;
    }
  }

  std::vector<float> out(shape.output_size());
  const bool end_to_end = variant == GpuVariant::cudnn_e2e;
  auto step = [&] {
    dev.upload_input(data);
    launch();
    dev.download_output(out);
    dev.stream.synchronize();
  };
  validate_once([&] {
    // The device output still holds the previous variant's result: poison it (all-ones bits are
    // a NaN), so a kernel that writes nothing cannot pass.
    GAPBENCH_CHECK(cudaMemsetAsync(dev.y.data(), 0xFF, dev.y.bytes(), dev.stream.get()));
    if (end_to_end) {
      step();
    } else {
      launch();
      dev.download_output(out);
      dev.stream.synchronize();
    }
    return data.check("conv", out, arithmetic);
  });
  if (end_to_end) {
    time_end_to_end(state, dev.stream, launch, step);
  } else {
    time_kernel(state, dev.stream, launch);
  }
  set_conv_counters(state, shape);
}

}  // namespace

Body conv_gpu(ConvShape shape, GpuVariant variant) {
  return [=](State& st) { bench_gpu(st, shape, variant); };
}

}  // namespace gapbench::conv
