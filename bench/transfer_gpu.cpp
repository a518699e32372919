// Family `transfer`, GPU variants (built only with CUDA).
#include <cuda_runtime_api.h>

#include <cstring>
#include <vector>

#include "bench/transfer.h"
#include "fixtures/device_probe.h"
#include "fixtures/gpu_timer.h"
#include "fixtures/setup_cache.h"
#include "kernels/base/data.h"
#include "kernels/base/gpu_memory.h"

namespace gapbench::transfer {
namespace {

// The buffers of one copy: a source filled with seeded data, a destination, and the host or
// device memory each lives in.
class CopySetup {
 public:
  CopySetup(Memory memory, Direction dir, std::size_t bytes)
      : bytes_(bytes), n_(bytes / sizeof(float)), expected_(uniform_floats(n_, run_seed(), 20)) {
    require_free_device_memory(dir == Direction::d2d ? 2 * bytes : bytes);
    device_ = DeviceBuffer<float>(n_);
    float* host = nullptr;
    if (memory == Memory::pinned) {
      pinned_ = PinnedBuffer<float>(n_);
      host = pinned_.data();
    } else if (memory == Memory::pageable) {
      pageable_.assign(n_, 0.0f);  // touched, so first-use page faults are not timed
      host = pageable_.data();
    }
    switch (dir) {
      case Direction::h2d:
        src_ = host, dst_ = device_.data(), kind_ = cudaMemcpyHostToDevice;
        break;
      case Direction::d2h:
        src_ = device_.data(), dst_ = host, kind_ = cudaMemcpyDeviceToHost;
        break;
      case Direction::d2d:
        device2_ = DeviceBuffer<float>(n_);
        src_ = device_.data(), dst_ = device2_.data(), kind_ = cudaMemcpyDeviceToDevice;
        break;
    }
    dst_on_device_ = dir != Direction::d2h;
    // Seed the source wherever it lives, on the fixture's stream (a legacy-stream cudaMemcpy is
    // not ordered with the non-blocking stream the async variants use), and wait for it.
    GAPBENCH_CHECK(
        cudaMemcpyAsync(src_, expected_.data(), bytes_, cudaMemcpyDefault, stream_.get()));
    stream_.synchronize();
  }

  void copy(Mode mode) {
    if (mode == Mode::sync) {
      // cudaMemcpy from pageable memory may return before its DMA ends: wait for it.
      GAPBENCH_CHECK(cudaMemcpy(dst_, src_, bytes_, kind_));
      GAPBENCH_CHECK(cudaStreamSynchronize(nullptr));
    } else {
      GAPBENCH_CHECK(cudaMemcpyAsync(dst_, src_, bytes_, kind_, stream_.get()));
    }
  }

  // Poisons the destination, copies once, and compares every byte with the source's data.
  Validation check(Mode mode) {
    std::vector<float> got(n_);
    if (dst_on_device_) {
      poison(dst_, bytes_, stream_.get());
      stream_.synchronize();  // done before a sync-mode copy on the legacy stream starts
    } else {
      std::memset(dst_, kPoisonByte, bytes_);
    }
    copy(mode);
    stream_.synchronize();
    GAPBENCH_CHECK(cudaMemcpy(got.data(), dst_, bytes_, cudaMemcpyDefault));
    return validate("copy", got, expected_, Tolerance::exact());
  }

  TimedStream& stream() { return stream_; }

 private:
  std::size_t bytes_, n_;
  std::vector<float> expected_;
  TimedStream stream_;
  DeviceBuffer<float> device_, device2_;
  PinnedBuffer<float> pinned_;
  std::vector<float> pageable_;
  void* src_ = nullptr;
  void* dst_ = nullptr;
  cudaMemcpyKind kind_ = cudaMemcpyDefault;
  bool dst_on_device_ = true;
};

}  // namespace

Body copy_gpu(Memory memory, Direction direction, Mode mode, std::size_t bytes) {
  return [=](State& state) {
    CopySetup& setup = cached<CopySetup>(current_benchmark(), memory, direction, bytes);
    validate_once([&] { return setup.check(mode); });
    if (mode == Mode::sync) {
      time_wall(state, [&] { setup.copy(mode); });
    } else if (memory == Memory::pageable) {
      // The driver stages a pageable copy through its own pinned buffer, with the host taking
      // part, and the call may not return before much of it is done: events would time only a
      // part of it, and not the copy engine's. Host wall time until the copy is complete.
      time_wall(state, [&] {
        setup.copy(mode);
        setup.stream().synchronize();
      });
      state.SetLabel("staged copy: host wall time");
    } else {
      time_kernel(state, setup.stream(), 1, [&] { setup.copy(mode); });
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
    if (direction == Direction::d2d) set_traffic_counter(state, 2 * bytes);
    state.SetItemsProcessed(state.iterations());
  };
}

}  // namespace gapbench::transfer
