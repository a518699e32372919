// Family `conv`, GPU variants (built only with CUDA). Kernel variants are timed with events on
// the shape's stream; cudnn_e2e adds the input's copy from pageable host memory (a framework's
// host tensor), the output's copy back and the synchronize, on the host clock. cuDNN runs in the
// math its name says, never its default math (kernels/conv_cudnn.h).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
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
  void poison_output() { poison(y, stream.get()); }
  void download_output(std::vector<float>& host) {
    GAPBENCH_CHECK(
        cudaMemcpyAsync(host.data(), y.data(), y.bytes(), cudaMemcpyDeviceToHost, stream.get()));
  }

  TimedStream stream;
  DeviceBuffer<float> x, w, y;
};

// What a GPU variant does, for validate_then_time.
struct GpuRun {
  std::function<void()> upload;    // the input in from host memory (async)
  std::function<void()> launch;    // the work (async)
  std::function<void()> download;  // the output back to host memory (async)
  std::function<void()> poison;    // the device output to all-ones bits, a NaN (async)
  std::function<Validation()> check;
};

// Validates once, the way it is timed: the output poisoned first (it still holds the previous
// variant's result, and a kernel that writes nothing must not pass), then the launch alone or
// the whole end-to-end step, the output downloaded and checked. Then times `launch` (at most
// `launches` launches) as kernel time, or the step (upload, launch, download, synchronize) end
// to end; `label` is the benchmark's label.
void validate_then_time(State& state, TimedStream& stream, bool end_to_end, const GpuRun& run,
                        std::size_t launches, const std::string& label = "") {
  auto step = [&] {
    run.upload();
    run.launch();
    run.download();
    stream.synchronize();
  };
  validate_once([&] {
    run.poison();
    if (end_to_end) {
      step();
    } else {
      run.launch();
      run.download();
      stream.synchronize();
    }
    return run.check();
  });
  if (end_to_end) {
    time_end_to_end(state, stream, launches, run.launch, step, label);
  } else {
    time_kernel(state, stream, launches, run.launch, label);
  }
}

// The hand-written kernels: float32, validated with float32's rounding bound.
void bench_gpu(State& state, const ConvShape& shape, GpuVariant variant) {
  const Problem& data = cached_problem(shape);
  ConvDevice& dev = cached<ConvDevice>(shape.key(), data);
  std::function<void()> launch;
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
  }

  std::vector<float> out(shape.output_size());
  validate_then_time(
      state, dev.stream, /*end_to_end=*/false,
      {[&] { dev.upload_input(data); }, launch, [&] { dev.download_output(out); },
       [&] { dev.poison_output(); }, [&] { return data.check("conv", out, Arithmetic::float32); }},
      /*launches=*/1);
  set_conv_counters(state, shape);
}

#if GAPBENCH_WITH_CUDNN
// One math mode's cuDNN convolution of a shape, with its own tensors in that mode's format:
// float32 NCHW, or float16 NHWC for fp16, held so on the host too (a mixed-precision model's
// tensors already are), converted once here.
class CudnnMath {
 public:
  CudnnMath(const Problem& d, Arithmetic arithmetic, cudaStream_t stream)
      : arithmetic_(arithmetic),
        shape_(d.shape),
        stream_(stream),
        handle_(stream),
        conv_(handle_.get(), d.shape, arithmetic),
        host_x_(host_bytes(d.x, d.shape.n, d.shape.c, d.shape.h, d.shape.w)),
        host_y_(d.shape.output_size() * element_bytes()),
        // Every buffer cuDNN gets, poisoned before it is filled (kernels/base/gpu_memory.h).
        x_(poisoned_buffer<std::uint8_t>(host_x_.size(), stream)),
        w_(poisoned_buffer<std::uint8_t>(d.shape.filter_size() * element_bytes(), stream)),
        y_(poisoned_buffer<std::uint8_t>(host_y_.size(), stream)),
        workspace_(poisoned_buffer<std::uint8_t>(reserve(conv_.workspace_bytes()), stream)) {
    const std::vector<std::uint8_t> w = host_bytes(d.w, d.shape.k, d.shape.c, d.shape.r, d.shape.s);
    copy_to_device(w_, w.data(), stream_);
    upload_input();
    GAPBENCH_CHECK(cudaStreamSynchronize(stream_));
  }
  // Tensor memory for `shape` in `arithmetic` (the workspace is checked once it is known).
  static std::size_t device_bytes(const ConvShape& s, Arithmetic arithmetic) {
    return (s.input_size() + s.filter_size() + s.output_size()) * input_bytes(arithmetic);
  }

  void launch() { conv_.forward(x_.data(), w_.data(), y_.data(), workspace_.data()); }
  void upload_input() {
    GAPBENCH_CHECK(
        cudaMemcpyAsync(x_.data(), host_x_.data(), x_.bytes(), cudaMemcpyHostToDevice, stream_));
  }
  void download_output() {
    GAPBENCH_CHECK(
        cudaMemcpyAsync(host_y_.data(), y_.data(), y_.bytes(), cudaMemcpyDeviceToHost, stream_));
  }
  void poison_output() { poison(y_, stream_); }
  // The last downloaded output as float32 NCHW, and its check: an fp16 output is stored in
  // float16, which adds its rounding to the tolerance.
  Validation check(const Problem& d) const {
    const bool half = arithmetic_ == Arithmetic::fp16;
    std::vector<float> y(shape_.output_size());
    if (half) {
      std::vector<std::uint16_t> bits(y.size());
      std::memcpy(bits.data(), host_y_.data(), host_y_.size());
      y = from_nhwc_half(bits, shape_.n, shape_.k, shape_.p(), shape_.q());
    } else {
      std::memcpy(y.data(), host_y_.data(), host_y_.size());
    }
    return d.check("conv", y, arithmetic_, half ? kFp16Roundoff : 0.0);
  }
  const CudnnConvolution& conv() const { return conv_; }

 private:
  std::size_t element_bytes() const { return input_bytes(arithmetic_); }
  static std::size_t reserve(std::size_t workspace) {
    require_free_device_memory(workspace);
    return workspace;
  }
  std::vector<std::uint8_t> host_bytes(const std::vector<float>& nchw, std::size_t n, std::size_t c,
                                       std::size_t h, std::size_t w) const {
    std::vector<std::uint8_t> out(nchw.size() * element_bytes());
    if (arithmetic_ == Arithmetic::fp16) {
      const std::vector<std::uint16_t> half = to_nhwc_half(nchw, n, c, h, w);
      std::memcpy(out.data(), half.data(), out.size());
    } else {
      std::memcpy(out.data(), nchw.data(), out.size());
    }
    return out;
  }

  Arithmetic arithmetic_;
  ConvShape shape_;
  cudaStream_t stream_;
  CudnnHandle handle_;
  CudnnConvolution conv_;
  std::vector<std::uint8_t> host_x_, host_y_;
  DeviceBuffer<std::uint8_t> x_, w_, y_, workspace_;
};
#endif

void bench_cudnn_math(State& state, const ConvShape& shape, Arithmetic arithmetic,
                      GpuTiming timing) {
#if !GAPBENCH_WITH_CUDNN
  (void)state, (void)shape, (void)arithmetic, (void)timing;
  throw Skip("built without cuDNN");
#else
  require_arithmetic(arithmetic);
  const Problem& data = cached_problem(shape);
  auto& dev = cached<OnTimedStream<CudnnMath> >(shape.key() + ":" + math_name(arithmetic),
                                                CudnnMath::device_bytes(shape, arithmetic), data,
                                                arithmetic);
  CudnnMath& op = dev.op;
  validate_then_time(
      state, dev.stream, timing == GpuTiming::end_to_end,
      {[&] { op.upload_input(); }, [&] { op.launch(); }, [&] { op.download_output(); },
       [&] { op.poison_output(); }, [&] { return op.check(data); }},
      kLibraryCallLaunches, op.conv().description());
  state.counters["setup_ms"] = op.conv().search_seconds() * 1e3;
  set_conv_counters(state, shape);
#endif
}

}  // namespace

Body conv_gpu(ConvShape shape, GpuVariant variant) {
  return [=](State& st) { bench_gpu(st, shape, variant); };
}

Body conv_cudnn_math_gpu(ConvShape shape, Arithmetic arithmetic, GpuTiming timing) {
  return [=](State& st) { bench_cudnn_math(st, shape, arithmetic, timing); };
}

}  // namespace gapbench::conv
