#include "fixtures/pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace gapbench::pipeline {
namespace {

using namespace std::chrono_literals;

// Threads of this process (Linux), or -1 where /proc cannot tell.
long thread_count() {
  std::error_code ec;
  std::filesystem::directory_iterator it("/proc/self/task", ec);
  if (ec) return -1;
  long n = 0;
  for (const auto& entry : it) {
    (void)entry;
    ++n;
  }
  return n;
}

// True once the process is back to `expected` threads. A joined thread's /proc entry can outlive
// the join by a moment (the kernel wakes the joiner before it reaps the thread), so poll; only
// a thread that never exits fails this.
bool back_to_threads(long expected) {
  if (expected < 0) return true;  // no /proc here
  for (int i = 0; i < 2000; ++i) {
    if (thread_count() == expected) return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

// Consumes until the pipeline ends.
void consume_all(Pipeline& pipe, const Pipeline::Stage& consume) {
  while (pipe.consume_next(consume)) {
  }
}

const Config kConfigs[] = {{Mode::none, 0, 1},     {Mode::prefetch, 1, 1}, {Mode::prefetch, 3, 1},
                           {Mode::parallel, 2, 1}, {Mode::parallel, 2, 3}, {Mode::parallel, 1, 4}};

std::string describe(const Config& c) {
  return std::string(name_of(c.mode)) + " depth " + std::to_string(c.depth) + " workers " +
         std::to_string(c.workers);
}

// Fake batches: slot buffers that hold the index they were produced for, plus a flag per slot
// that catches two stages holding one slot at once.
struct Slots {
  explicit Slots(std::size_t n) : index(n), held(n) {}
  std::vector<std::uint64_t> index;
  std::vector<std::atomic<bool>> held;
  std::atomic<int> clashes{0};
  void take(std::size_t slot) {
    if (held[slot].exchange(true)) ++clashes;
  }
  void give(std::size_t slot) { held[slot] = false; }
};

TEST(Pipeline, ConfigChecksAndSlots) {
  EXPECT_EQ((Config{Mode::none, 0, 1}.slots()), 1u);
  EXPECT_EQ((Config{Mode::prefetch, 2, 1}.slots()), 4u);
  EXPECT_EQ((Config{Mode::parallel, 2, 4}.slots()), 7u);
  for (const Config& bad :
       {Config{Mode::none, 1, 1}, Config{Mode::none, 0, 2}, Config{Mode::prefetch, 0, 1},
        Config{Mode::prefetch, 2, 2}, Config{Mode::parallel, 0, 2}, Config{Mode::parallel, 2, 0}}) {
    EXPECT_THROW(bad.check(), std::invalid_argument) << describe(bad);
    EXPECT_THROW(Pipeline(bad, [](std::uint64_t, std::size_t) {}), std::invalid_argument);
  }
}

TEST(Pipeline, EveryBatchOnceInTheDocumentedOrder) {
  constexpr std::uint64_t kBatches = 200;
  for (const Config& config : kConfigs) {
    Slots slots(config.slots());
    Pipeline pipe(
        config,
        [&](std::uint64_t index, std::size_t slot) {
          slots.take(slot);
          // Uneven work, so parallel producers finish out of order.
          if (index % 7 == 3) std::this_thread::sleep_for(200us);
          slots.index[slot] = index;
        },
        kBatches);
    std::vector<std::uint64_t> order;
    consume_all(pipe, [&](std::uint64_t index, std::size_t slot) {
      ASSERT_LT(slot, config.slots());
      EXPECT_EQ(slots.index[slot], index) << "the slot holds another batch";
      order.push_back(index);
      slots.give(slot);
    });
    EXPECT_FALSE(pipe.consume_next([](std::uint64_t, std::size_t) {})) << "stays ended";
    EXPECT_EQ(slots.clashes.load(), 0) << describe(config);
    EXPECT_EQ(pipe.stats().batches, kBatches);
    ASSERT_EQ(order.size(), kBatches) << describe(config);
    std::vector<std::uint64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (std::uint64_t i = 0; i < kBatches; ++i) ASSERT_EQ(sorted[i], i) << describe(config);
    if (config.mode != Mode::parallel || config.workers == 1) {
      EXPECT_EQ(order, sorted) << describe(config) << " must deliver in index order";
    }
  }
}

TEST(Pipeline, ProducersRunAtMostSlotsAhead) {
  for (const Config& config : kConfigs) {
    std::atomic<long> produced{0}, consumed{0}, most_ahead{0};
    Pipeline pipe(
        config,
        [&](std::uint64_t, std::size_t) {
          const long ahead = ++produced - consumed.load();
          long seen = most_ahead.load();
          while (ahead > seen && !most_ahead.compare_exchange_weak(seen, ahead)) {
          }
        },
        60);
    consume_all(pipe, [&](std::uint64_t, std::size_t) {
      std::this_thread::sleep_for(300us);  // a slow consumer: producers fill every slot
      ++consumed;
    });
    EXPECT_LE(most_ahead.load(), static_cast<long>(config.slots())) << describe(config);
  }
}

TEST(Pipeline, ProducerExceptionReachesTheConsumerAndEveryThreadIsJoined) {
  for (const Config& config : kConfigs) {
    const long threads_before = thread_count();
    std::atomic<int> calls{0};
    std::vector<std::uint64_t> consumed;
    {
      Pipeline pipe(config, [&](std::uint64_t index, std::size_t) {
        ++calls;
        if (index == 5) throw std::runtime_error("decode failed at batch 5");
      });
      try {
        consume_all(pipe, [&](std::uint64_t index, std::size_t) { consumed.push_back(index); });
        ADD_FAILURE() << describe(config) << ": the producer's exception never arrived";
      } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "decode failed at batch 5") << describe(config);
      }
    }  // destroyed: every producer joined
    EXPECT_TRUE(std::find(consumed.begin(), consumed.end(), 5u) == consumed.end());
    if (config.mode != Mode::parallel) {
      // In order, the failure comes where batch 5 would have been.
      EXPECT_EQ(consumed, (std::vector<std::uint64_t>{0, 1, 2, 3, 4})) << describe(config);
    }
    const int calls_at_exit = calls.load();
    std::this_thread::sleep_for(5ms);
    EXPECT_EQ(calls.load(), calls_at_exit) << describe(config) << ": a producer still runs";
    EXPECT_TRUE(back_to_threads(threads_before)) << describe(config);
  }
}

TEST(Pipeline, ConsumerLeavingEarlyJoinsBlockedProducers) {
  for (const Config& config : kConfigs) {
    const long threads_before = thread_count();
    std::atomic<int> calls{0};
    {
      Pipeline pipe(config, [&](std::uint64_t, std::size_t) { ++calls; });
      for (int i = 0; i < 3; ++i) ASSERT_TRUE(pipe.consume_next([](std::uint64_t, std::size_t) {}));
      // Give the producers time to fill the queue and block on it.
      std::this_thread::sleep_for(10ms);
    }
    const int calls_at_exit = calls.load();
    EXPECT_LE(calls_at_exit, 3 + static_cast<int>(config.slots())) << describe(config);
    std::this_thread::sleep_for(5ms);
    EXPECT_EQ(calls.load(), calls_at_exit) << describe(config);
    EXPECT_TRUE(back_to_threads(threads_before)) << describe(config);
  }
}

TEST(Pipeline, ConsumerExceptionPassesThroughAndJoins) {
  for (const Config& config : kConfigs) {
    const long threads_before = thread_count();
    {
      Pipeline pipe(config, [](std::uint64_t, std::size_t) {});
      EXPECT_THROW(pipe.consume_next([](std::uint64_t, std::size_t) {
        throw std::logic_error("consumer broke");
      }),
                   std::logic_error);
    }
    EXPECT_TRUE(back_to_threads(threads_before)) << describe(config);
  }
}

// Idle fraction with fake work (sleeps): the bounds are wide on purpose, so a loaded machine
// cannot flake them; a wrong definition (busy and wait swapped, wait not counted) fails them.
TEST(Pipeline, IdleFractionNearOneWhenTheProducerIsSlow) {
  for (const Config& config : {Config{Mode::none, 0, 1}, Config{Mode::prefetch, 2, 1}}) {
    Pipeline pipe(config, [](std::uint64_t, std::size_t) { std::this_thread::sleep_for(10ms); });
    for (int i = 0; i < 6; ++i) pipe.consume_next([](std::uint64_t, std::size_t) {});
    EXPECT_GT(pipe.stats().idle_fraction(), 0.8) << describe(config);
    EXPECT_LE(pipe.stats().idle_fraction(), 1.0);
  }
}

TEST(Pipeline, IdleFractionNearZeroWhenTheConsumerIsSlow) {
  Pipeline pipe({Mode::prefetch, 2, 1}, [](std::uint64_t, std::size_t) {});
  auto slow = [](std::uint64_t, std::size_t) { std::this_thread::sleep_for(10ms); };
  pipe.consume_next(slow);  // the queue fills meanwhile
  pipe.reset_stats();
  EXPECT_EQ(pipe.stats().batches, 0u);
  for (int i = 0; i < 6; ++i) pipe.consume_next(slow);
  EXPECT_EQ(pipe.stats().batches, 6u);
  EXPECT_LT(pipe.stats().idle_fraction(), 0.2);
  EXPECT_GE(pipe.stats().idle_fraction(), 0.0);
}

TEST(Pipeline, IdleFractionOfNoneIsTheProducersShare) {
  Pipeline pipe({Mode::none, 0, 1},
                [](std::uint64_t, std::size_t) { std::this_thread::sleep_for(15ms); });
  for (int i = 0; i < 4; ++i) {
    pipe.consume_next([](std::uint64_t, std::size_t) { std::this_thread::sleep_for(5ms); });
  }
  // 15 / (15 + 5) = 0.75 with exact sleeps; oversleeping moves it towards 0.5 at worst.
  EXPECT_GT(pipe.stats().idle_fraction(), 0.4);
  EXPECT_LT(pipe.stats().idle_fraction(), 0.95);
  EXPECT_GT(pipe.stats().wait_seconds, 4 * 0.015 * 0.99);
  EXPECT_GT(pipe.stats().busy_seconds, 4 * 0.005 * 0.99);
}

TEST(Pipeline, IdleFractionIsZeroBeforeAnyBatch) {
  Stats s;
  EXPECT_EQ(s.idle_fraction(), 0.0);
  s.wait_seconds = 1.0;
  s.busy_seconds = 3.0;
  EXPECT_DOUBLE_EQ(s.idle_fraction(), 0.25);
}

// ---- the ideal ----

// Produce 4 ms, consume 1 ms, as the quick profile's loading-bound case.
TEST(Ideal, ProducersOrConsumerLimitWhereEveryThreadHasACore) {
  EXPECT_DOUBLE_EQ(ideal_items_per_second(4e-3, 1e-3, 2, 8, ConsumerCost::cpu), 500.0);
  EXPECT_DOUBLE_EQ(ideal_items_per_second(4e-3, 1e-3, 1, 2, ConsumerCost::cpu), 250.0);
  EXPECT_DOUBLE_EQ(ideal_items_per_second(4e-3, 1e-3, 8, 16, ConsumerCost::cpu), 1000.0);
  // workers + 1 cores are always enough: the cap never binds there.
  EXPECT_DOUBLE_EQ(ideal_items_per_second(4e-3, 1e-3, 2, 3, ConsumerCost::cpu), 500.0);
}

TEST(Ideal, CoresCapItWithFewerCoresThanBusyThreads) {
  // parallel, 2 producers and the consumer on 2 cores: 2 / (4 + 1) ms, not 2 / 4 ms.
  EXPECT_DOUBLE_EQ(ideal_items_per_second(4e-3, 1e-3, 2, 2, ConsumerCost::cpu), 400.0);
  // More workers cannot raise it.
  EXPECT_DOUBLE_EQ(ideal_items_per_second(4e-3, 1e-3, 4, 2, ConsumerCost::cpu), 400.0);
  // prefetch on one core: one producer and the consumer take turns.
  EXPECT_DOUBLE_EQ(ideal_items_per_second(4e-3, 1e-3, 1, 1, ConsumerCost::cpu), 200.0);
}

TEST(Ideal, ADeviceConsumerLeavesTheCoresToTheProducers) {
  // Two producers on two cores: the sleeping consumer takes none of them.
  EXPECT_DOUBLE_EQ(ideal_items_per_second(4e-3, 1e-3, 2, 2, ConsumerCost::device), 500.0);
  // Four producers on two cores: cores / t_produce.
  EXPECT_DOUBLE_EQ(ideal_items_per_second(4e-3, 1e-3, 4, 2, ConsumerCost::device), 500.0);
  EXPECT_DOUBLE_EQ(ideal_items_per_second(4e-3, 1e-3, 2, 1, ConsumerCost::device), 250.0);
}

TEST(Ideal, ZeroBeforeBothStagesWereMeasured) {
  EXPECT_EQ(ideal_items_per_second(0.0, 1e-3, 2, 2, ConsumerCost::cpu), 0.0);
  EXPECT_EQ(ideal_items_per_second(4e-3, 0.0, 2, 2, ConsumerCost::cpu), 0.0);
}

// ---- calibration ----

TEST(Calibration, FindsTheCountOfALinearCost) {
  // 0.5 ms fixed + 0.1 ms per unit: 4 ms is 35 units.
  int calls = 0;
  const Calibrated c = calibrate_count(4e-3, 0, 16, 1, 1000, [&](std::size_t n) {
    ++calls;
    return 5e-4 + 1e-4 * static_cast<double>(n);
  });
  EXPECT_EQ(c.count, 35u);
  EXPECT_NEAR(c.seconds, 4e-3, 1e-12);
  EXPECT_LE(calls, 6);
}

TEST(Calibration, CorrectsACostThatIsNotLinear) {
  auto cost = [](std::size_t n) { return 1e-4 * std::pow(static_cast<double>(n), 1.3); };
  const Calibrated c = calibrate_count(16e-3, 2, 16, 2, 4096, cost);
  EXPECT_NEAR(c.seconds, 16e-3, 0.05 * 16e-3);
  EXPECT_EQ(c.seconds, cost(c.count));
}

TEST(Calibration, SurvivesAProbeSlowedDownByTheMachine) {
  // The second probe ran 10x slow (preempted): the first guess is far too small, the
  // corrections from clean measurements bring it back.
  int calls = 0;
  const Calibrated c = calibrate_count(4e-3, 2, 16, 2, 4096, [&](std::size_t n) {
    const double t = 6.6e-5 * static_cast<double>(n);
    return ++calls == 2 ? 10.0 * t : t;
  });
  EXPECT_NEAR(c.seconds, 4e-3, 0.05 * 4e-3);
  EXPECT_NEAR(static_cast<double>(c.count), 4e-3 / 6.6e-5, 1.0);
}

TEST(Calibration, ClampsToItsRange) {
  auto cost = [](std::size_t n) { return 1e-3 * static_cast<double>(n); };
  EXPECT_EQ(calibrate_count(1.0, 1, 4, 1, 50, cost).count, 50u);  // needs 1000 units
  EXPECT_EQ(calibrate_count(1e-6, 1, 4, 3, 50, cost).count, 3u);  // less than one unit
  // A flat cost (the slope lost in noise) must not ask for infinitely many units.
  EXPECT_EQ(calibrate_count(1.0, 1, 4, 1, 50, [](std::size_t) { return 1e-3; }).count, 50u);
}

}  // namespace
}  // namespace gapbench::pipeline
