#include "fixtures/cpu_accounting.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace gapbench {
namespace {

// Two CPUs, 100 ticks a second: user nice system idle iowait irq softirq steal guest guest_nice.
constexpr const char* kStat =
    "cpu  1000 200 300 4000 100 10 20 50 0 0\n"
    "cpu0 500 100 150 2000 50 5 10 25 0 0\n"
    "intr 12345\n";

TEST(CpuAccounting, ReadsTheAggregateLineOfProcStat) {
  const auto m = parse_proc_stat(kStat, 100.0);
  ASSERT_TRUE(m.has_value());
  EXPECT_DOUBLE_EQ(m->busy, (1000 + 200 + 300 + 10 + 20) / 100.0);
  EXPECT_DOUBLE_EQ(m->steal, 0.5);
  EXPECT_DOUBLE_EQ(m->total, (1000 + 200 + 300 + 4000 + 100 + 10 + 20 + 50) / 100.0);
}

TEST(CpuAccounting, RefusesAProcStatWithoutTheAggregateLineOrItsFields) {
  EXPECT_FALSE(parse_proc_stat("cpu0 1 2 3 4 5 6 7 8\n", 100.0));
  EXPECT_FALSE(parse_proc_stat("cpu  1 2 3 4\n", 100.0));
  EXPECT_FALSE(parse_proc_stat("cpu  1 2 3 -4 5 6 7 8\n", 100.0));
  EXPECT_FALSE(parse_proc_stat("", 100.0));
}

CpuClock clock_at(double wall, double own, double busy, double steal, double total) {
  CpuClock c;
  c.wall = wall;
  c.own = own;
  c.machine = MachineCpuTime{busy, steal, total};
  return c;
}

TEST(CpuAccounting, OtherWorkIsTheMachinesBusyTimeLessThisProcesss) {
  // 10 s on two CPUs: this process used 12 CPU seconds, the machine 19 busy and 1 stolen.
  const auto share = cpu_share(clock_at(100, 5, 1000, 10, 3000), clock_at(110, 17, 1019, 11, 3020));
  ASSERT_TRUE(share.has_value());
  EXPECT_DOUBLE_EQ(share->window, 10.0);
  EXPECT_DOUBLE_EQ(share->own_cpus, 1.2);
  EXPECT_DOUBLE_EQ(share->other_cpus, 0.7);
  EXPECT_DOUBLE_EQ(share->steal, 0.05);
  std::map<std::string, std::string> keys;
  for (const auto& [k, v] : cpu_share_context(*share)) keys[k] = v;
  EXPECT_EQ(keys.at("stability.other_cpus"), "0.70");
  EXPECT_EQ(keys.at("stability.own_cpus"), "1.20");
  EXPECT_EQ(keys.at("stability.steal"), "0.050");
  EXPECT_EQ(keys.at("stability.window_s"), "10.00");
}

TEST(CpuAccounting, RoundingNeverMakesOtherWorkNegative) {
  // getrusage counts microseconds, /proc/stat ticks: this process can read more than the machine.
  const auto share = cpu_share(clock_at(0, 0, 0, 0, 0), clock_at(1, 1.01, 1.0, 0, 2));
  ASSERT_TRUE(share.has_value());
  EXPECT_EQ(share->other_cpus, 0.0);
}

TEST(CpuAccounting, NoShareWithoutTheMachinesTimesOrAWindow) {
  CpuClock no_proc = clock_at(1, 0, 0, 0, 0);
  no_proc.machine.reset();
  EXPECT_FALSE(cpu_share(clock_at(0, 0, 0, 0, 0), no_proc));
  EXPECT_FALSE(cpu_share(clock_at(5, 0, 0, 0, 0), clock_at(5, 0, 1, 0, 2)));
}

TEST(CpuAccounting, ThisMachinesClockCountsThisProcesssOwnWork) {
  const CpuClock start = read_cpu_clock();
  volatile double sink = 0;
  for (int i = 0; i < 20000000; ++i) sink = sink + i * 0.5;
  const CpuClock end = read_cpu_clock();
  EXPECT_GT(end.own, start.own);
  ASSERT_TRUE(end.machine.has_value()) << "/proc/stat unreadable on this Linux machine";
  EXPECT_GE(end.machine->busy, start.machine->busy);
}

}  // namespace
}  // namespace gapbench
