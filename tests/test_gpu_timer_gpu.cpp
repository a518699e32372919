// The GPU timer, on a device (skipped with the reason without one). What the first GPU run must
// confirm: kernel time is device time, whatever the host does while it enqueues the work.
#include "fixtures/gpu_timer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <thread>

#include "kernels/base/gpu_memory.h"
#include "kernels/launch.h"
#include "tests/gpu_test.h"

namespace gapbench {
namespace {

using namespace std::chrono_literals;

// The tests of what holding a stream does skip where launches block (compute-sanitizer
// --force-blocking-launches, as ci/gpu-check runs it; CUDA_LAUNCH_BLOCKING=1).
#define SKIP_WHERE_STREAMS_CANNOT_BE_HELD(stream)                               \
  do {                                                                          \
    if (!(stream).holds())                                                      \
      GTEST_SKIP() << "skipped: kernel launches block here (compute-sanitizer " \
                      "--force-blocking-launches?), so no stream can be held";  \
  } while (0)

// A device-to-device copy of `bytes` on the timed stream (its source written first: initcheck
// reports a copy of memory nothing wrote).
struct Copy {
  explicit Copy(TimedStream& s) : stream(s) {
    GAPBENCH_CHECK(cudaMemsetAsync(a.data(), 1, a.bytes(), stream.get()));
    stream.synchronize();
  }
  TimedStream& stream;
  DeviceBuffer<char> a = DeviceBuffer<char>(64 << 20), b = DeviceBuffer<char>(64 << 20);
  void operator()(std::size_t bytes) const {
    GAPBENCH_CHECK(
        cudaMemcpyAsync(b.data(), a.data(), bytes, cudaMemcpyDeviceToDevice, stream.get()));
  }
};

TEST(GpuTimer, KernelSecondsArePositiveAndGrowWithWork) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  TimedStream stream;
  const Copy copy(stream);
  auto timed = [&](std::size_t bytes) { return stream.kernel_seconds(1, [&] { copy(bytes); }); };
  timed(1 << 20);  // warm-up
  const double small = timed(1 << 20);
  const double large = timed(64 << 20);
  EXPECT_GT(small, 0.0);
  EXPECT_GT(large, small);
}

// The host sleeping between the start of timing and its work (as cuBLAS's heuristics or cuDNN's
// plan lookup take host time) must not count: the work itself takes microseconds.
TEST(GpuTimer, HostDelayBeforeTheWorkIsNotKernelTime) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  TimedStream stream;
  SKIP_WHERE_STREAMS_CANNOT_BE_HELD(stream);
  const Copy copy(stream);
  stream.kernel_seconds(1, [&] { copy(4096); });  // warm-up
  constexpr auto kHostDelay = 20ms;
  const double seconds = stream.kernel_seconds(1, [&] {
    std::this_thread::sleep_for(kHostDelay);
    copy(4096);
  });
  EXPECT_GT(seconds, 0.0);
  EXPECT_LT(seconds, 0.1 * std::chrono::duration<double>(kHostDelay).count())
      << "kernel time includes the host's delay: the stream was not held";
}

// Work that waits for its own stream cannot be timed held: the hold times out and the timer says
// so rather than report host time as kernel time.
TEST(GpuTimer, WorkThatWaitsForItsStreamIsRefused) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  TimedStream stream(100ms);
  SKIP_WHERE_STREAMS_CANNOT_BE_HELD(stream);
  const Copy copy(stream);
  try {
    stream.kernel_seconds(1, [&] {
      copy(4096);
      stream.synchronize();  // waits for the hold: released only by its timeout
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("waited for its own stream"), std::string::npos)
        << e.what();
  }
  // The stream is usable again afterwards.
  EXPECT_GT(stream.kernel_seconds(1, [&] { copy(4096); }), 0.0);
}

// More launches than a held stream queues (preprocess's element-wise sumsq makes one per row)
// are timed unheld: held, the host would wait for the queue and the queue for the host until
// the hold timed out. Each launch ran, and the time includes them.
TEST(GpuTimer, ALaunchStormIsTimedUnheld) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  constexpr std::size_t kLaunches = 20000;  // well past the ~1000 a stream queues
  TimedStream stream;
  ASSERT_NE(stream.hold_for(kLaunches), Hold::held);
  const DeviceBuffer<unsigned> counter(1);
  GAPBENCH_CHECK(cudaMemsetAsync(counter.data(), 0, sizeof(unsigned), stream.get()));
  const double seconds = stream.kernel_seconds(kLaunches, [&] {
    GAPBENCH_CHECK(launch::ticks_gpu(counter.data(), kLaunches, stream.get()));
  });
  unsigned count = 0;
  GAPBENCH_CHECK(
      cudaMemcpyAsync(&count, counter.data(), sizeof count, cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  EXPECT_EQ(count, kLaunches);
  EXPECT_GT(seconds, 0.0);
}

// A throw inside the timed work releases the stream: the next timing works at once.
TEST(GpuTimer, ThrowingWorkReleasesTheStream) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  TimedStream stream;
  const Copy copy(stream);
  EXPECT_THROW(stream.kernel_seconds(1,
                                     [&] {
                                       copy(4096);
                                       throw std::logic_error("fails while enqueuing");
                                     }),
               std::logic_error);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_GT(stream.kernel_seconds(1, [&] { copy(4096); }), 0.0);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, StreamHold::kDefaultTimeout / 2);
}

// End-to-end: wall time per iteration; overhead_share is the part that was not device time.
TEST(GpuTimer, EndToEndOverheadShareCountsHostTime) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  TimedStream stream;
  const Copy copy(stream);
  auto launch = [&] { copy(4096); };
  auto step = [&] {
    std::this_thread::sleep_for(2ms);  // host work a user's step pays
    launch();
    stream.synchronize();
  };
  double share = -1.0;
  // time_end_to_end needs a benchmark::State: run it inside a one-off benchmark, registered for
  // this test only (also when it throws: the body refers to this test's locals).
  struct Unregister {
    ~Unregister() { benchmark::ClearRegisteredBenchmarks(); }
  } unregister;
  benchmark::RegisterBenchmark("gpu_timer_e2e",
                               [&](benchmark::State& state) {
                                 time_end_to_end(state, stream, 1, launch, step);
                                 share = state.counters["overhead_share"];
                               })
      ->UseManualTime()
      ->Iterations(5);
  benchmark::RunSpecifiedBenchmarks(std::string("gpu_timer_e2e"));
  EXPECT_GT(share, 0.9) << "a 2 ms host step around a microsecond copy is mostly overhead";
  EXPECT_LE(share, 1.0);
}

}  // namespace
}  // namespace gapbench
