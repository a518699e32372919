#include "fixtures/cache_size.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

#include "tests/temp_dir.h"

namespace gapbench {
namespace {

using testing_files::TempDir;
using testing_files::write_file;

void make_dirs(const std::string& path) {
  std::string so_far;
  for (std::size_t at = 0; at != std::string::npos;) {
    at = path.find('/', at + 1);
    so_far = path.substr(0, at);
    mkdir(so_far.c_str(), 0755);
  }
}

// cpu<cpu>/cache/index<index>/ as Linux writes it.
void add_cache(const std::string& root, int cpu, int index, int level, const std::string& type,
               const std::string& size, const std::string& shared) {
  const std::string dir =
      root + "/cpu" + std::to_string(cpu) + "/cache/index" + std::to_string(index);
  make_dirs(dir);
  write_file(dir + "/level", std::to_string(level) + "\n");
  write_file(dir + "/type", type + "\n");
  write_file(dir + "/size", size + "\n");
  write_file(dir + "/shared_cpu_list", shared + "\n");
}

// A 16-core EPYC: two CCXs of 8 cores, each with its own 32 MiB L3.
void two_ccx_epyc(const std::string& root) {
  for (int cpu = 0; cpu < 16; ++cpu) {
    add_cache(root, cpu, 0, 1, "Data", "32K", std::to_string(cpu));
    add_cache(root, cpu, 1, 1, "Instruction", "32K", std::to_string(cpu));
    add_cache(root, cpu, 2, 2, "Unified", "512K", std::to_string(cpu));
    add_cache(root, cpu, 3, 3, "Unified", "32768K", cpu < 8 ? "0-7" : "8-15");
  }
}

constexpr std::size_t kMiB = std::size_t{1} << 20;

TEST(CacheSize, ACoreReachesOnlyItsOwnCcxsL3) {
  TempDir dir;
  two_ccx_epyc(dir.path());
  EXPECT_EQ(reachable_cache(dir.path(), {0, 1}).bytes, 32 * kMiB);
  EXPECT_EQ(reachable_cache(dir.path(), {0}).bytes, 32 * kMiB);
  // CPUs in both CCXs reach both L3s.
  const ReachableCache both = reachable_cache(dir.path(), {3, 9});
  EXPECT_EQ(both.bytes, 64 * kMiB);
  EXPECT_EQ(both.source, "sysfs: 2 L3 instances (CPUs 0-7; 8-15)");
}

TEST(CacheSize, AnIntelSocketsLlcIsSharedByEveryCore) {
  TempDir dir;
  for (int cpu = 0; cpu < 2; ++cpu) {
    add_cache(dir.path(), cpu, 0, 1, "Data", "48K", std::to_string(cpu));
    add_cache(dir.path(), cpu, 3, 3, "Unified", "491520K", "0-1");  // a 480 MiB Xeon's VM
  }
  EXPECT_EQ(reachable_cache(dir.path(), {0, 1}).bytes, 480 * kMiB);
}

TEST(CacheSize, NoSysfsIsUnknown) {
  TempDir dir;
  EXPECT_EQ(reachable_cache(dir.path(), {0, 1}).bytes, 0u);
  EXPECT_EQ(reachable_cache(dir.path() + "/missing", {0}).bytes, 0u);
}

TEST(CacheSize, ParsesCpuLists) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list("5"), (std::vector<int>{5}));
  EXPECT_TRUE(parse_cpu_list("3-1").empty());
  EXPECT_TRUE(parse_cpu_list("a").empty());
  EXPECT_TRUE(parse_cpu_list("1,,2").empty());
}

class CacheBytesVariable : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* before = std::getenv("GAPBENCH_CACHE_BYTES");
    had_ = before != nullptr;
    if (had_) saved_ = before;
  }
  void TearDown() override {
    if (had_) {
      setenv("GAPBENCH_CACHE_BYTES", saved_.c_str(), 1);
    } else {
      unsetenv("GAPBENCH_CACHE_BYTES");
    }
  }

 private:
  bool had_ = false;
  std::string saved_;
};

TEST_F(CacheBytesVariable, OverridesWhatTheProbeReads) {
  setenv("GAPBENCH_CACHE_BYTES", "503316480", 1);
  const ReachableCache cache = measuring_cache();
  EXPECT_EQ(cache.bytes, 480 * kMiB);
  EXPECT_EQ(cache.source, "GAPBENCH_CACHE_BYTES");
  unsetenv("GAPBENCH_CACHE_BYTES");
  EXPECT_NE(measuring_cache().source, "GAPBENCH_CACHE_BYTES");
}

TEST_F(CacheBytesVariable, TakesUpTo1TiB) {
  setenv("GAPBENCH_CACHE_BYTES", "1099511627776", 1);
  EXPECT_EQ(cache_bytes_override(), std::optional<std::size_t>{std::size_t{1} << 40});
}

TEST_F(CacheBytesVariable, RefusesWhatIsNotAWholeNumberOfBytes) {
  // Past 1 TiB: the buffer sized from it overflowed (2305843009213693953 is 2^61 + 1; the
  // largest is 2^64 - 1).
  for (const char* bad : {"480M", "-1", "0", " 5", "1e9", "99999999999999999999999",
                          "1099511627777", "2305843009213693953", "18446744073709551615"}) {
    setenv("GAPBENCH_CACHE_BYTES", bad, 1);
    try {
      cache_bytes_override();
      ADD_FAILURE() << "took '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("GAPBENCH_CACHE_BYTES"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace gapbench
