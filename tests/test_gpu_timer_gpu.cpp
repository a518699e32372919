// The GPU timer, on a device (skipped with the reason without one). What the first GPU run must
// confirm: kernel time is device time, whatever the host does while it enqueues the work.
#include "fixtures/gpu_timer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kernels/base/gpu_memory.h"
#include "kernels/launch.h"
#include "tests/gpu_test.h"
#include "tests/keep_runs.h"

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

// The launch storm's size (GpuTimer.ALaunchStormIsTimedUnheld), where streams hold or not.
std::size_t storm_launches(bool streams_hold) {
  return streams_hold ? 20000 : kMaxHeldLaunches + 1;
}

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
  TimedStream stream;
  const std::size_t launches = storm_launches(stream.holds());
  ASSERT_NE(stream.hold_for(launches), Hold::held);
  const DeviceBuffer<unsigned> counter(1);
  GAPBENCH_CHECK(cudaMemsetAsync(counter.data(), 0, sizeof(unsigned), stream.get()));
  const double seconds = stream.kernel_seconds(
      launches, [&] { GAPBENCH_CHECK(launch::ticks_gpu(counter.data(), launches, stream.get())); });
  unsigned count = 0;
  GAPBENCH_CHECK(
      cudaMemcpyAsync(&count, counter.data(), sizeof count, cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  EXPECT_EQ(count, launches);
  EXPECT_GT(seconds, 0.0);
}

// Host only: the storm's size. Past the hold's limit either way; where streams hold, well past
// the ~1000 launches a stream queues too (the hang the test guards against). Where launches
// block (compute-sanitizer --force-blocking-launches) no launch queues and nothing is held, and
// each instrumented launch costs milliseconds (about 6 ms under racecheck on an H100, where
// 20,000 ran past the step's limit): there just past the hold's limit.
TEST(GpuTimer, TheLaunchStormIsPastTheHoldsLimitAndSmallWhereLaunchesBlock) {
  EXPECT_EQ(choose_hold(storm_launches(true), true), Hold::too_many);
  EXPECT_GE(storm_launches(true), 10 * std::size_t{1000});
  EXPECT_EQ(storm_launches(false), kMaxHeldLaunches + 1);
  EXPECT_EQ(choose_hold(storm_launches(false), true), Hold::too_many);
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
// Right in both modes: where launches block (compute-sanitizer --force-blocking-launches, as
// ci/gpu-check runs it; CUDA_LAUNCH_BLOCKING=1) the kernels' device time cannot be held apart
// from their launches, so no share is reported and the label says why; the wall time is the
// step's either way.
TEST(GpuTimer, EndToEndOverheadShareCountsHostTime) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  constexpr auto kHostStep = 2ms;
  TimedStream stream;
  const Copy copy(stream);
  auto launch = [&] { copy(4096); };
  auto step = [&] {
    std::this_thread::sleep_for(kHostStep);  // host work a user's step pays
    launch();
    stream.synchronize();
  };
  // time_end_to_end needs a benchmark::State: run it inside a one-off benchmark, registered for
  // this test only (also when it throws: the body refers to this test's locals).
  struct Unregister {
    ~Unregister() { benchmark::ClearRegisteredBenchmarks(); }
  } unregister;
  benchmark::RegisterBenchmark(
      "gpu_timer_e2e",
      [&](benchmark::State& state) { time_end_to_end(state, stream, 1, launch, step); })
      ->UseManualTime()
      ->Iterations(5);
  KeepRuns kept;
  benchmark::RunSpecifiedBenchmarks(&kept, std::string("gpu_timer_e2e"));
  ASSERT_EQ(kept.runs.size(), 1u);
  const auto& run = kept.runs.front();
  ASSERT_FALSE(run.error_occurred) << run.error_message;
  ASSERT_GT(run.iterations, 0);
  EXPECT_GE(run.real_accumulated_time / static_cast<double>(run.iterations),
            std::chrono::duration<double>(kHostStep).count())
      << "the end-to-end time leaves out the host's step";
  const auto share = run.counters.find("overhead_share");
  if (stream.holds()) {
    ASSERT_NE(share, run.counters.end()) << "no overhead_share: " << run.report_label;
    EXPECT_GT(share->second.value, 0.9)
        << "a 2 ms host step around a microsecond copy is mostly overhead";
    EXPECT_LE(share->second.value, 1.0);
    EXPECT_EQ(run.report_label, "");
  } else {
    EXPECT_EQ(share, run.counters.end())
        << "an overhead_share from a device time that includes the launches";
    EXPECT_NE(run.report_label.find("no overhead_share"), std::string::npos) << run.report_label;
    EXPECT_NE(run.report_label.find("launches block"), std::string::npos) << run.report_label;
  }
}

}  // namespace
}  // namespace gapbench
