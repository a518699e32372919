#include "kernels/onednn_isa.h"

#include <cstdlib>
#include <dnnl.hpp>
#include <sstream>
#include <utility>

namespace gapbench {

namespace {

bool has(const std::string& isa, const char* part) { return isa.find(part) != std::string::npos; }

// The richest first: each value is a mask holding the bits of every set below it.
constexpr std::pair<dnnl::cpu_isa, const char*> kKnownIsas[] = {
    {dnnl::cpu_isa::avx512_core_amx, "avx512_core_amx"},
    {dnnl::cpu_isa::avx512_core_bf16, "avx512_core_bf16"},
    {dnnl::cpu_isa::avx512_core_vnni, "avx512_core_vnni"},
    {dnnl::cpu_isa::avx512_core, "avx512_core"},
    {dnnl::cpu_isa::avx2_vnni, "avx2_vnni"},
    {dnnl::cpu_isa::avx2, "avx2"},
    {dnnl::cpu_isa::avx, "avx"},
    {dnnl::cpu_isa::sse41, "sse41"},
};

}  // namespace

std::string onednn_isa() {
  const auto effective = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  for (const auto& [isa, name] : kKnownIsas) {
    const auto bits = static_cast<unsigned>(isa);
    if ((effective & bits) == bits) return name;
  }
  std::ostringstream unknown;
  unknown << "isa mask 0x" << std::hex << effective;
  return unknown.str();
}

std::vector<std::string> onednn_isa_names() {
  std::vector<std::string> names;
  for (const auto& known : kKnownIsas) names.push_back(known.second);
  return names;
}

std::string onednn_isa_cap() {
  const char* cap = std::getenv("DNNL_MAX_CPU_ISA");
  return cap ? cap : "";
}

std::optional<std::string> onednn_arithmetic_unavailable_reason(Arithmetic arithmetic,
                                                                const std::string& isa,
                                                                const std::string& cap) {
  if (arithmetic == Arithmetic::float32) return std::nullopt;
  if (arithmetic != Arithmetic::bf16) {
    return std::string("oneDNN's CPU variants compute in fp32 or bf16, not ") +
           math_name(arithmetic);
  }
  if (has(isa, "bf16") || has(isa, "amx")) return std::nullopt;
  const std::string seen = cap.empty()
                               ? "oneDNN's best here is " + isa
                               : "oneDNN is capped at " + isa + " (DNNL_MAX_CPU_ISA=" + cap + ")";
  const char* instead = has(isa, "avx512") ? "emulate" : "refuse";
  return std::string(kCpuLacks) + "bf16 instructions (AVX-512 BF16 or AMX): " + seen +
         ", where it would " + instead + " bf16";
}

std::optional<std::string> onednn_arithmetic_unavailable_reason(Arithmetic arithmetic) {
  static const std::string isa = onednn_isa();
  return onednn_arithmetic_unavailable_reason(arithmetic, isa, onednn_isa_cap());
}

}  // namespace gapbench
