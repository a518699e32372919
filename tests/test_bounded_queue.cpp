#include "fixtures/bounded_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace gapbench {
namespace {

using namespace std::chrono_literals;

TEST(BoundedQueue, RejectsZeroCapacity) {
  EXPECT_THROW(BoundedQueue<int>(0), std::invalid_argument);
}

TEST(BoundedQueue, DeliversInPushOrderThenEndsAfterClose) {
  BoundedQueue<int> q(4);
  std::thread producer([&] {
    for (int i = 0; i < 1000; ++i) ASSERT_TRUE(q.push(i));
    q.close();
  });
  std::vector<int> got;
  while (auto v = q.pop()) got.push_back(*v);
  producer.join();
  ASSERT_EQ(got.size(), 1000u);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(got[i], i);
  EXPECT_FALSE(q.pop().has_value());  // stays ended
}

TEST(BoundedQueue, ProducerBlocksWhileFull) {
  BoundedQueue<int> q(2);
  ASSERT_TRUE(q.push(1));
  ASSERT_TRUE(q.push(2));
  std::atomic<bool> pushed{false};
  std::thread producer([&] {
    EXPECT_TRUE(q.push(3));
    pushed = true;
  });
  // Not a timing assert: a push that returned while the queue was full is a bug at any speed;
  // the sleep only gives a wrong push the chance to happen.
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(pushed.load());
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.pop(), 1);  // makes room: the blocked push goes through
  producer.join();
  EXPECT_TRUE(pushed.load());
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.pop(), 2);
  EXPECT_EQ(q.pop(), 3);
}

TEST(BoundedQueue, NeverHoldsMoreThanItsCapacity) {
  BoundedQueue<int> q(3);
  constexpr int kProducers = 4, kEach = 2000;
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kEach; ++i) q.push(p * kEach + i);
    });
  }
  std::vector<int> seen(kProducers * kEach, 0);
  std::vector<int> last(kProducers, -1);
  std::size_t largest = 0;
  for (int n = 0; n < kProducers * kEach; ++n) {
    largest = std::max(largest, q.size());
    const int v = *q.pop();
    ++seen[v];
    // Each producer's items arrive in its own order.
    EXPECT_GT(v % kEach, last[v / kEach]);
    last[v / kEach] = v % kEach;
  }
  for (auto& t : producers) t.join();
  EXPECT_LE(largest, 3u);
  for (int count : seen) ASSERT_EQ(count, 1);
}

TEST(BoundedQueue, CloseRefusesPushesAndDrains) {
  BoundedQueue<int> q(4);
  q.push(7);
  q.push(8);
  q.close();
  EXPECT_FALSE(q.push(9));
  EXPECT_EQ(q.pop(), 7);
  EXPECT_EQ(q.pop(), 8);
  EXPECT_FALSE(q.pop().has_value());
}

TEST(BoundedQueue, CloseWakesABlockedConsumer) {
  BoundedQueue<int> q(1);
  std::optional<int> got = 42;
  std::thread consumer([&] { got = q.pop(); });
  std::this_thread::sleep_for(20ms);
  q.close();
  consumer.join();
  EXPECT_FALSE(got.has_value());
}

TEST(BoundedQueue, ShutdownDropsItemsAndWakesBlockedProducers) {
  BoundedQueue<int> q(1);
  q.push(1);
  std::atomic<int> refused{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < 3; ++p) {
    producers.emplace_back([&] { refused += q.push(2) ? 0 : 1; });
  }
  std::this_thread::sleep_for(20ms);
  q.shutdown();
  for (auto& t : producers) t.join();
  EXPECT_EQ(refused.load(), 3);
  EXPECT_FALSE(q.pop().has_value());  // the queued item was dropped
  EXPECT_EQ(q.size(), 0u);
}

TEST(BoundedQueue, FailDeliversQueuedItemsThenRethrows) {
  BoundedQueue<int> q(4);
  q.push(1);
  q.push(2);
  q.fail(std::make_exception_ptr(std::runtime_error("decode failed")));
  q.fail(std::make_exception_ptr(std::logic_error("second")));  // the first end wins
  EXPECT_FALSE(q.push(3));
  EXPECT_EQ(q.pop(), 1);
  EXPECT_EQ(q.pop(), 2);
  for (int again = 0; again < 2; ++again) {
    try {
      q.pop();
      ADD_FAILURE() << "pop after a failure must throw";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "decode failed");
    }
  }
}

TEST(BoundedQueue, FailAfterCloseIsIgnored) {
  BoundedQueue<int> q(1);
  q.close();
  q.fail(std::make_exception_ptr(std::runtime_error("late")));
  EXPECT_FALSE(q.pop().has_value());
}

TEST(BoundedQueue, ProducerThreadExceptionReachesTheConsumer) {
  BoundedQueue<int> q(2);
  std::thread producer([&] {
    try {
      for (int i = 0;; ++i) {
        if (i == 5) throw std::runtime_error("producer broke at 5");
        q.push(i);
      }
    } catch (...) {
      q.fail(std::current_exception());
    }
  });
  std::vector<int> got;
  EXPECT_THROW(
      {
        while (auto v = q.pop()) got.push_back(*v);
      },
      std::runtime_error);
  producer.join();
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(BoundedQueue, MoveOnlyItems) {
  BoundedQueue<std::unique_ptr<int>> q(2);
  q.push(std::make_unique<int>(5));
  auto v = q.pop();
  ASSERT_TRUE(v && *v);
  EXPECT_EQ(**v, 5);
}

}  // namespace
}  // namespace gapbench
