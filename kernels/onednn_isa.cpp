#include "kernels/onednn_isa.h"

#include <cstdlib>
#include <dnnl.hpp>
#include <sstream>

namespace gapbench {

namespace {

bool has(const std::string& isa, const char* part) { return isa.find(part) != std::string::npos; }

}  // namespace

std::string onednn_isa() {
  using dnnl::cpu_isa;
  // The richest first: each value is a mask holding the bits of every set below it.
  const std::pair<cpu_isa, const char*> known[] = {
      {cpu_isa::avx512_core_amx, "avx512_core_amx"},
      {cpu_isa::avx512_core_bf16, "avx512_core_bf16"},
      {cpu_isa::avx512_core_vnni, "avx512_core_vnni"},
      {cpu_isa::avx512_core, "avx512_core"},
      {cpu_isa::avx2_vnni, "avx2_vnni"},
      {cpu_isa::avx2, "avx2"},
      {cpu_isa::avx, "avx"},
      {cpu_isa::sse41, "sse41"},
  };
  const auto effective = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  for (const auto& [isa, name] : known) {
    const auto bits = static_cast<unsigned>(isa);
    if ((effective & bits) == bits) return name;
  }
  std::ostringstream unknown;
  unknown << "isa mask 0x" << std::hex << effective;
  return unknown.str();
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
