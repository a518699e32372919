#include "kernels/flops.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "gapbench/tables.h"
#include "kernels/onednn_isa.h"

namespace gapbench::flops {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// Each loop this CPU has computes its recurrence; the others are compiled only (the AVX-512
// and bf16 loops on an AVX2 CPU such as Zen 3).
void expect_matches_reference(Isa isa) {
  if (!cpu_has(isa)) GTEST_SKIP() << "this CPU lacks " << isa_name(isa);
  for (std::int64_t steps : {0, 1, 7, 256, 4099}) {
    const Validation v = check(isa, steps);
    EXPECT_TRUE(v.ok) << isa_name(isa) << " steps=" << steps << ": " << v.message();
    EXPECT_EQ(v.count, outputs(isa));
  }
}

// The check catches a loop that runs one step too few or too many: the tolerance is tighter
// than one step's change, in every lane.
void expect_a_wrong_step_count_fails(Isa isa) {
  if (!cpu_has(isa)) GTEST_SKIP() << "this CPU lacks " << isa_name(isa);
  constexpr std::int64_t kSteps = 256;
  for (std::int64_t ran : {kSteps - 1, kSteps + 1}) {
    std::vector<float> got(outputs(isa));
    run(isa, ran, got.data());
    const std::vector<double> ref = reference(isa, kSteps);
    const Validation v =
        validate("flops", got.data(), ref.data(), got.size(), tolerance(isa, kSteps));
    EXPECT_FALSE(v.ok) << isa_name(isa) << " ran " << ran << " steps, checked as " << kSteps;
    EXPECT_EQ(v.mismatches, outputs(isa));
  }
}

TEST(Flops, Sse41MatchesItsReference) { expect_matches_reference(Isa::sse41); }
TEST(Flops, Avx2MatchesItsReference) { expect_matches_reference(Isa::avx2); }
TEST(Flops, Avx512MatchesItsReference) { expect_matches_reference(Isa::avx512); }
TEST(Flops, Avx512Bf16MatchesItsReference) { expect_matches_reference(Isa::avx512_bf16); }
TEST(Flops, Sse41CatchesAWrongStepCount) { expect_a_wrong_step_count_fails(Isa::sse41); }
TEST(Flops, Avx2CatchesAWrongStepCount) { expect_a_wrong_step_count_fails(Isa::avx2); }
TEST(Flops, Avx512CatchesAWrongStepCount) { expect_a_wrong_step_count_fails(Isa::avx512); }
TEST(Flops, Avx512Bf16CatchesAWrongStepCount) { expect_a_wrong_step_count_fails(Isa::avx512_bf16); }

TEST(Flops, CountsTwoFlopPerLanePerStepAndFourForBf16Pairs) {
  EXPECT_EQ(flops_per_step(Isa::sse41), 12 * 4 * 2);
  EXPECT_EQ(flops_per_step(Isa::avx2), 12 * 8 * 2);
  EXPECT_EQ(flops_per_step(Isa::avx512), 12 * 16 * 2);
  EXPECT_EQ(flops_per_step(Isa::avx512_bf16), 12 * 16 * 4);
  EXPECT_EQ(isa_math(Isa::avx2), Arithmetic::float32);
  EXPECT_EQ(isa_math(Isa::avx512_bf16), Arithmetic::bf16);
}

// Every x86-64 CPU gapbench builds for has SSE4.1 in practice; AVX2 implies it.
TEST(Flops, TheCpuHasAtLeastWhatItsWiderSetsImply) {
  EXPECT_TRUE(!cpu_has(Isa::avx2) || cpu_has(Isa::sse41));
  EXPECT_TRUE(!cpu_has(Isa::avx512_bf16) || cpu_has(Isa::avx512));
}

TEST(Flops, AMissingIsaOrOneAboveTheCapIsACpuLacksSkip) {
  EXPECT_EQ(unavailable_reason(Isa::avx2, true, std::nullopt), std::nullopt);
  EXPECT_EQ(unavailable_reason(Isa::avx2, true, Isa::avx2), std::nullopt);
  EXPECT_EQ(unavailable_reason(Isa::sse41, true, Isa::avx2), std::nullopt);
  const auto lacks = unavailable_reason(Isa::avx512, false, std::nullopt);
  ASSERT_TRUE(lacks);
  EXPECT_EQ(*lacks, "this CPU lacks AVX-512");
  const auto capped = unavailable_reason(Isa::avx2, true, Isa::sse41);
  ASSERT_TRUE(capped);
  EXPECT_EQ(*capped, "this CPU lacks AVX2 with FMA (GAPBENCH_MAX_CPU_ISA=sse41 caps it at sse41)");
  // The report accepts a CPU row's skip that starts so, and no other.
  EXPECT_TRUE(starts_with(*capped, kCpuLacks));
  EXPECT_TRUE(unavailable_reason(Isa::avx512_bf16, true, Isa::avx512));
}

// Under CI's capped presets (GAPBENCH_MAX_CPU_ISA=sse41, avx2, avx512) the rows above the cap
// are skipped, and the one at the cap runs where the CPU has it.
TEST(Flops, TheCapInForceHoldsEveryRowAboveIt) {
  const std::optional<Isa> cap = isa_cap();
  if (!cap) GTEST_SKIP() << "GAPBENCH_MAX_CPU_ISA is not set";
  for (Isa isa : kMeasured) {
    const bool above = static_cast<int>(isa) > static_cast<int>(*cap);
    EXPECT_EQ(unavailable_reason(isa).has_value(), above || !cpu_has(isa)) << isa_name(isa);
  }
}

TEST(Flops, ABadCapIsRefusedNamingTheVariable) {
  const char* before = std::getenv("GAPBENCH_MAX_CPU_ISA");
  const std::string saved = before ? before : "";
  setenv("GAPBENCH_MAX_CPU_ISA", "AVX2", 1);  // oneDNN's spelling, not ours
  try {
    isa_cap();
    ADD_FAILURE() << "AVX2 was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("GAPBENCH_MAX_CPU_ISA"), std::string::npos) << e.what();
  }
  setenv("GAPBENCH_MAX_CPU_ISA", "avx512_bf16", 1);
  EXPECT_EQ(isa_cap(), Isa::avx512_bf16);
  setenv("GAPBENCH_MAX_CPU_ISA", "", 1);
  EXPECT_EQ(isa_cap(), std::nullopt);
  if (before) {
    setenv("GAPBENCH_MAX_CPU_ISA", saved.c_str(), 1);
  } else {
    unsetenv("GAPBENCH_MAX_CPU_ISA");
  }
}

// The report names each loop from isa.json's flop_loops: the enum's values, in order, and no more.
TEST(Flops, EveryIsaIsIsaJsonsInItsOrder) {
  const std::size_t listed = std::size(tables::kFlopLoops);
  for (std::size_t i = 0; i < listed; ++i) {
    EXPECT_STREQ(isa_name(static_cast<Isa>(i)), tables::kFlopLoops[i].name)
        << "Isa value " << i << " against report/gapbench_report/tables/isa.json's flop_loops";
  }
  // isa_name's "?" past the last value: an Isa that isa.json does not list would have a name.
  EXPECT_STREQ(isa_name(static_cast<Isa>(listed)), "?")
      << "Isa has more values than isa.json's flop_loops lists";
}

}  // namespace
}  // namespace gapbench::flops
