#include "fixtures/harness.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "tests/keep_runs.h"

namespace gapbench {
namespace {

// A row's rate counters count each thread's work once (schema 1 counted it once per thread).
TEST(Harness, RateCountersCountEachThreadsWorkOnce) {
  constexpr int kThreads = 2, kIterations = 10;
  constexpr double kSecondsPerIteration = 1e-3, kFlops = 1e6;
  constexpr std::size_t kBytes = 1000;
  benchmark::RegisterBenchmark("harness_rate_counters",
                               [](benchmark::State& state) {
                                 for (auto _ : state) state.SetIterationTime(kSecondsPerIteration);
                                 set_flops_counter(state, kFlops);
                                 set_traffic_counter(state, kBytes);
                               })
      ->UseManualTime()
      ->Iterations(kIterations)
      ->Threads(kThreads);
  KeepRuns kept;
  benchmark::RunSpecifiedBenchmarks(&kept, std::string("harness_rate_counters"));
  ASSERT_EQ(kept.runs.size(), 1u);
  const auto& counters = kept.runs.front().counters;
  // Each thread's iterations take kIterations * kSecondsPerIteration side by side.
  const double seconds = kIterations * kSecondsPerIteration;
  EXPECT_NEAR(counters.at("flops").value, kThreads * kIterations * kFlops / seconds, 1.0);
  EXPECT_NEAR(counters.at("traffic_bytes_per_second").value,
              kThreads * kIterations * kBytes / seconds, 1e-3);
}

TEST(Harness, MedianOfIsTheMiddleValue) {
  const std::vector<double> values = {5.0, 1.0, 4.0, 2.0, 3.0};
  std::size_t i = 0;
  EXPECT_EQ(median_of(5, [&] { return values[i++]; }), 3.0);
  EXPECT_GE(median_seconds(3, [] { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }),
            0.001);
}

TEST(Harness, NamesFollowTheScheme) {
  const BenchName name = BenchName("conv", "cudnn").axis("n", 32).axis("layout", "nchw");
  EXPECT_EQ(name.str(Device::gpu), "conv/cudnn/gpu/n:32/layout:nchw");
  EXPECT_EQ(name.str(Device::cpu), "conv/cudnn/cpu/n:32/layout:nchw");
  EXPECT_EQ(BenchName("peak", "read").str(Device::cpu), "peak/read/cpu");
}

TEST(Harness, EndToEndVariantsAreSuffixed) {
  EXPECT_EQ(gpu_variant("vectorized", GpuTiming::kernel), "vectorized");
  EXPECT_EQ(gpu_variant("vectorized", GpuTiming::end_to_end), "vectorized_e2e");
}

TEST(Harness, ProfilesPickSizesAndRepetitions) {
  const Profile quick = Profile::parse("quick");
  const Profile full = Profile::parse("full");
  EXPECT_STREQ(quick.name(), "quick");
  EXPECT_STREQ(full.name(), "full");
  EXPECT_EQ(quick.pick<int>({1}, {1, 2, 3}), std::vector<int>{1});
  EXPECT_EQ(full.pick<int>({1}, {1, 2, 3}), (std::vector<int>{1, 2, 3}));
  EXPECT_LT(quick.repetitions(), full.repetitions());
  EXPECT_LT(quick.min_time_seconds(), full.min_time_seconds());
  EXPECT_THROW(Profile::parse("Quick"), std::invalid_argument);
  EXPECT_THROW(Profile::parse(""), std::invalid_argument);
}

TEST(Harness, RequireValidThrowsWithTheWorstElement) {
  const std::vector<double> ref = {1.0, 2.0};
  const std::vector<float> good = {1.0f, 2.0f};
  const std::vector<float> bad = {1.0f, 3.0f};
  EXPECT_NO_THROW(require_valid(validate("out", good, ref, Tolerance::exact())));
  try {
    require_valid(validate("out", bad, ref, Tolerance::exact()));
    FAIL() << "no exception";
  } catch (const ValidationError& e) {
    EXPECT_NE(std::string(e.what()).find("worst [1] got 3 want 2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gapbench

namespace gapbench {
namespace {

// Out of host memory inside a run: the failure names the bytes asked for.
TEST(Harness, AFailedHostAllocationNamesItsSize) {
  const std::size_t huge = std::size_t{1} << 62;
  try {
    void* p = ::operator new(huge);
    ::operator delete(p);
    FAIL() << "allocated 4 EiB";
  } catch (const std::bad_alloc& e) {
    EXPECT_NE(std::string(e.what()).find("could not allocate"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(" + std::to_string(huge) + " bytes)"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace gapbench
