// Family `transfer`: host-device copies, the cause behind "my GPU is slow" when data crosses PCIe
// from pageable memory or over a narrow or old link.
//
// Names: transfer/<pageable|pinned>/gpu/dir:<h2d|d2h>/mode:<sync|async>/bytes:<n>
//        transfer/device/gpu/dir:d2d/mode:async/bytes:<n>
//        transfer/memcpy/cpu/bytes:<n>          (what the CPU path pays instead: a host copy)
// mode:sync is cudaMemcpy plus a synchronize, timed on the host clock (what a framework's
// blocking .to(device) pays); mode:async is cudaMemcpyAsync on the fixture's stream, timed with
// held events (the copy engine's time, fixtures/gpu_timer.h). From pageable memory, mode:async is
// a staged copy (the driver copies through its own pinned buffer, with the host taking part),
// so it is timed on the host clock until it is complete, and labelled "staged copy".
// bytes_per_second counts the bytes copied once (as nvbandwidth and PyTorch users read a copy);
// copies within one memory (d2d, the host memcpy) also count traffic_bytes_per_second, reads plus
// writes, for comparison with that memory's peak. The time per iteration is the latency of one
// copy; items_per_second is copies per second.
#include "bench/transfer.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "kernels/base/data.h"
#include "kernels/membw.h"

namespace gapbench::transfer {
namespace {

// Page-aligned, as the GPU paths' pinned buffers are, so that the copy's speed does not hang on
// where malloc put the two buffers: glibc's memcpy on the AMD CI VM copies 4 KiB 30x slower
// (1.8 us against 60 ns) when the destination sits 8 or 16 bytes past the source modulo a page,
// which made this benchmark bimodal from one repetition to the next.
using HostBuffer = std::unique_ptr<float[], void (*)(void*)>;

HostBuffer page_aligned(std::size_t n) {
  constexpr std::size_t kPage = 4096;
  const std::size_t bytes = (n * sizeof(float) + kPage - 1) / kPage * kPage;
  void* p = std::aligned_alloc(kPage, bytes);
  if (p == nullptr) throw std::bad_alloc();
  return HostBuffer(static_cast<float*>(p), std::free);
}

void bench_host_copy(State& state, std::size_t bytes) {
  const std::size_t n = bytes / sizeof(float);
  const HostBuffer src = page_aligned(n), dst = page_aligned(n);
  {
    const std::vector<float> data = uniform_floats(n, run_seed(), 10);
    std::copy(data.begin(), data.end(), src.get());
  }
  std::fill_n(dst.get(), n, 0.0f);
  validate_once([&] {
    membw::copy(dst.get(), src.get(), n);
    return validate("memcpy", dst.get(), src.get(), n, Tolerance::exact());
  });
  for (auto _ : state) {
    membw::copy(dst.get(), src.get(), n);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
  set_traffic_counter(state, 2 * bytes);
  state.SetItemsProcessed(state.iterations());
}

}  // namespace
}  // namespace gapbench::transfer

namespace gapbench {

GAPBENCH_FAMILY(transfer) {
  using namespace transfer;
  constexpr std::size_t kKiB = 1024;
  // 4 KiB to 256 MiB: latency dominates at the small end, bandwidth at the large. The GPU's
  // quick sizes are each end and the middle (its 45 copies at five sizes took 34 s on an H200).
  const auto sizes =
      profile.pick<std::size_t>({4 * kKiB, 64 * kKiB, 1024 * kKiB, 16384 * kKiB, 65536 * kKiB},
                                {4 * kKiB, 16 * kKiB, 64 * kKiB, 256 * kKiB, 1024 * kKiB,
                                 4096 * kKiB, 16384 * kKiB, 65536 * kKiB, 262144 * kKiB});
  const auto gpu_sizes =
      profile.full() ? sizes : std::vector<std::size_t>{4 * kKiB, 1024 * kKiB, 65536 * kKiB};
  for (std::size_t bytes : sizes) {
    const auto b = static_cast<long long>(bytes);
    const bool on_gpu = std::find(gpu_sizes.begin(), gpu_sizes.end(), bytes) != gpu_sizes.end();
    for (Memory memory : {Memory::pageable, Memory::pinned}) {
      for (Direction dir : {Direction::h2d, Direction::d2h}) {
        for (Mode mode : {Mode::sync, Mode::async}) {
          if (on_gpu) {
            add_gpu(BenchName("transfer", name_of(memory))
                        .axis("dir", name_of(dir))
                        .axis("mode", name_of(mode))
                        .axis("bytes", b),
                    GAPBENCH_GPU_BODY(copy_gpu(memory, dir, mode, bytes)));
          }
        }
      }
    }
    if (on_gpu) {
      add_gpu(
          BenchName("transfer", "device").axis("dir", "d2d").axis("mode", "async").axis("bytes", b),
          GAPBENCH_GPU_BODY(copy_gpu(Memory::device, Direction::d2d, Mode::async, bytes)));
    }
    add_cpu(BenchName("transfer", "memcpy").axis("bytes", b),
            [=](State& st) { bench_host_copy(st, bytes); });
  }
}

}  // namespace gapbench
