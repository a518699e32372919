#include "kernels/onednn_isa.h"

#include <algorithm>
#include <cctype>
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

std::string onednn_isa_for_cpu(const std::string& cpu_flags) {
  // The flags each set needs, the richest first. AVX-512 "core" is F with BW, VL and DQ: read
  // from avx512f, which every CPU since Skylake-SP has with the other three.
  static const std::vector<std::pair<std::vector<std::string>, const char*>> kNeeds = {
      {{"amx_tile", "amx_bf16", "avx512_bf16"}, "avx512_core_amx"},
      {{"avx512_bf16", "avx512f"}, "avx512_core_bf16"},
      {{"avx512_vnni", "avx512f"}, "avx512_core_vnni"},
      {{"avx512f"}, "avx512_core"},
      {{"avx2"}, "avx2"},
      {{"avx"}, "avx"},
      {{"sse4_2"}, "sse41"},
  };
  std::istringstream words(cpu_flags);
  std::vector<std::string> flags;
  for (std::string w; words >> w;) flags.push_back(w);
  for (const auto& [needs, isa] : kNeeds) {
    if (std::all_of(needs.begin(), needs.end(), [&](const std::string& flag) {
          return std::find(flags.begin(), flags.end(), flag) != flags.end();
        }))
      return isa;
  }
  return "";
}

OnednnCap onednn_cap_effect(const std::string& cap, const std::string& effective,
                            const std::string& cpu_flags) {
  if (cap.empty()) return OnednnCap::none;
  std::string lower = cap;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::vector<std::string> names = onednn_isa_names();  // the richest first
  if (lower != "all" && std::find(names.begin(), names.end(), lower) == names.end())
    return OnednnCap::unknown_value;
  const std::string best = onednn_isa_for_cpu(cpu_flags);
  const auto rank = [&](const std::string& isa) {
    return std::find(names.begin(), names.end(), isa) - names.begin();
  };
  if (best.empty()) return OnednnCap::binds;
  return rank(effective) > rank(best) ? OnednnCap::binds : OnednnCap::binds_nothing;
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
