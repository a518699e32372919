#include "kernels/onednn_isa.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <string>

#include "gapbench/tables.h"

namespace gapbench {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

TEST(OnednnIsa, Bf16RunsNativelyOnlyWithBf16Instructions) {
  for (const char* isa : {"avx512_core_bf16", "avx512_core_amx"}) {
    EXPECT_FALSE(onednn_arithmetic_unavailable_reason(Arithmetic::bf16, isa, "")) << isa;
  }
  for (const char* isa : {"sse41", "avx", "avx2", "avx2_vnni", "avx512_core", "avx512_core_vnni"}) {
    const auto reason = onednn_arithmetic_unavailable_reason(Arithmetic::bf16, isa, "");
    ASSERT_TRUE(reason) << isa;
    EXPECT_TRUE(starts_with(*reason, kCpuLacks)) << *reason;
    EXPECT_NE(reason->find(std::string("best here is ") + isa + ","), std::string::npos) << *reason;
  }
  EXPECT_FALSE(onednn_arithmetic_unavailable_reason(Arithmetic::float32, "sse41", ""));
}

TEST(OnednnIsa, TheReasonSaysWhatOnednnWouldDoAndNamesACap) {
  // Measured with oneDNN 2.6: AVX-512 without bf16 emulates it, AVX2 and below refuse it.
  EXPECT_NE(onednn_arithmetic_unavailable_reason(Arithmetic::bf16, "avx512_core", "")
                ->find("would emulate bf16"),
            std::string::npos);
  const auto capped = onednn_arithmetic_unavailable_reason(Arithmetic::bf16, "avx2", "AVX2");
  ASSERT_TRUE(capped);
  EXPECT_NE(capped->find("capped at avx2 (DNNL_MAX_CPU_ISA=AVX2)"), std::string::npos) << *capped;
  EXPECT_NE(capped->find("would refuse bf16"), std::string::npos) << *capped;
}

TEST(OnednnIsa, ArithmeticsWithoutACpuVariantAreNamed) {
  for (Arithmetic a : {Arithmetic::fp16, Arithmetic::tf32}) {
    const auto reason = onednn_arithmetic_unavailable_reason(a, "avx512_core_amx", "");
    ASSERT_TRUE(reason);
    EXPECT_NE(reason->find(math_name(a)), std::string::npos) << *reason;
    EXPECT_FALSE(starts_with(*reason, kCpuLacks)) << "not a missing instruction set: " << *reason;
  }
}

// The report ranks onednn.isa by isa.json's order: every name oneDNN may record is there, the
// richest last.
TEST(OnednnIsa, EveryNameIsInIsaJsonsOrder) {
  const auto* const begin = std::begin(tables::kOnednnIsaOrder);
  const auto* const end = std::end(tables::kOnednnIsaOrder);
  const char* richer = nullptr;
  std::ptrdiff_t richer_at = end - begin;
  for (const std::string& name : onednn_isa_names()) {  // the richest first
    const auto* const at = std::find(begin, end, name);
    ASSERT_NE(at, end) << name << " is missing from report/gapbench_report/tables/isa.json";
    EXPECT_LT(at - begin, richer_at)
        << "isa.json lists " << name << " after " << richer << ", which oneDNN counts richer";
    richer = name.c_str();
    richer_at = at - begin;
  }
}

// The CPU's best set from its flags, and what a cap does against it.
TEST(OnednnIsa, ACapBindsOnlyBelowTheCpusBest) {
  EXPECT_EQ(onednn_isa_for_cpu("sse4_2 avx avx2 fma"), "avx2");
  EXPECT_EQ(onednn_isa_for_cpu("sse4_2 avx avx2 fma avx512f avx512_vnni avx512_bf16"),
            "avx512_core_bf16");
  EXPECT_EQ(onednn_isa_for_cpu("avx512f avx512_bf16 amx_tile amx_bf16 avx2"), "avx512_core_amx");
  EXPECT_EQ(onednn_isa_for_cpu("asimd sve"), "");
  const std::string zen3 = "sse4_2 avx avx2 fma";
  EXPECT_EQ(onednn_cap_effect("", "avx2", zen3), OnednnCap::none);
  EXPECT_EQ(onednn_cap_effect("SSE41", "sse41", zen3), OnednnCap::binds);
  EXPECT_EQ(onednn_cap_effect("AVX2", "avx2", zen3), OnednnCap::binds_nothing);
  EXPECT_EQ(onednn_cap_effect("avx512_core", "avx2", zen3), OnednnCap::binds_nothing);
  EXPECT_EQ(onednn_cap_effect("ALL", "avx2", zen3), OnednnCap::binds_nothing);
  EXPECT_EQ(onednn_cap_effect("bad", "avx2", zen3), OnednnCap::unknown_value);
  EXPECT_EQ(onednn_cap_effect("AVX", "avx", "asimd"), OnednnCap::binds);  // flags say nothing
}

// This process's own view: the effective ISA is named, agrees with the rule, and follows a cap.
TEST(OnednnIsa, ThisCpuIsNamedAndTheRuleAgreesWithIt) {
  const std::string isa = onednn_isa();
  EXPECT_EQ(isa.find("isa mask"), std::string::npos) << "unnamed oneDNN ISA: " << isa;
  const bool bf16 = isa.find("bf16") != std::string::npos || isa.find("amx") != std::string::npos;
  EXPECT_EQ(!onednn_arithmetic_unavailable_reason(Arithmetic::bf16), bf16) << isa;
  const char* cap = std::getenv("DNNL_MAX_CPU_ISA");
  EXPECT_EQ(onednn_isa_cap(), cap ? cap : "");
  if (cap && std::string(cap) == "AVX2") {
    EXPECT_EQ(isa, "avx2");
  }
}

}  // namespace
}  // namespace gapbench
