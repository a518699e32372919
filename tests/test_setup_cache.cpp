#include "fixtures/setup_cache.h"

#include <gtest/gtest.h>

namespace gapbench {
namespace {

// Counts live instances, to prove the cache holds one at a time and frees the old one first.
struct Tracked {
  explicit Tracked(int v) : value(v) {
    ++live;
    peak = std::max(peak, live);
  }
  ~Tracked() { --live; }
  int value;
  static inline int live = 0;
  static inline int peak = 0;
};

TEST(SetupCache, SameKeyReusesNewKeyRebuildsOneAtATime) {
  release_setup_cache();
  Tracked::peak = 0;
  Tracked& a = cached<Tracked>("a", 1);
  Tracked& again = cached<Tracked>("a", 99);  // same key: not rebuilt, args ignored
  EXPECT_EQ(&a, &again);
  EXPECT_EQ(again.value, 1);
  EXPECT_EQ(cached<Tracked>("b", 2).value, 2);
  EXPECT_EQ(Tracked::live, 1);
  EXPECT_EQ(Tracked::peak, 1);  // the old one was freed before the new one was built
  release_setup_cache();
  EXPECT_EQ(Tracked::live, 0);
  EXPECT_EQ(cached<Tracked>("b", 3).value, 3);  // rebuilt after release
  release_setup_cache();
}

TEST(SetupCache, AFailedBuildLeavesTheSlotEmpty) {
  struct Throws {
    explicit Throws(bool fail) {
      if (fail) throw std::runtime_error("no");
    }
  };
  EXPECT_THROW(cached<Throws>("x", true), std::runtime_error);
  EXPECT_NO_THROW(cached<Throws>("x", false));  // same key: built now, not taken as cached
  release_setup_cache();
}

}  // namespace
}  // namespace gapbench
