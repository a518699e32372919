// oneDNN's view of this CPU: the instruction set it runs with, and which arithmetic that set
// computes natively. The one rule for the CPU variants' `math` axis, shared by conv and lstm: a
// CPU variant whose arithmetic oneDNN would emulate (or refuse) here is skipped with the reason,
// never timed under its math's name and never an error.
//
// What oneDNN 2.6 does with bf16, by DNNL_MAX_CPU_ISA (checked on a Zen 4, every cap):
//   SSE41, AVX, AVX2              conv and LSTM refuse it ("could not create a primitive
//                                 descriptor iterator")
//   AVX512_CORE, AVX512_CORE_VNNI emulated: conv "jit_bf16:avx512_core" (bf16 in the name, but
//                                 no bf16 instructions), LSTM the reference implementation
//   AVX512_CORE_BF16, _AMX        native: "brgconv:avx512_core_bf16", LSTM "brgemm"
// The implementation's name therefore cannot tell; the effective ISA can.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kernels/base/validate.h"

namespace gapbench {

// Every skip for an instruction set the CPU lacks starts so ("skipped: this CPU lacks ..."); the
// report's checks accept such a skip of a CPU variant and no other.
inline constexpr const char* kCpuLacks = "this CPU lacks ";

// oneDNN's instruction set here, after any DNNL_MAX_CPU_ISA cap, spelt as that variable takes
// it in lower case: "sse41", "avx2", "avx512_core", "avx512_core_bf16", "avx512_core_amx".
std::string onednn_isa();
// Every name onednn_isa() gives a set it knows, the richest first.
std::vector<std::string> onednn_isa_names();

// The DNNL_MAX_CPU_ISA cap in force ("AVX2"), or "" when oneDNN may use all this CPU has.
std::string onednn_isa_cap();

// The richest set oneDNN runs on a CPU with these /proc/cpuinfo flags (cpu.isa's words), as
// onednn_isa() names it; "" where none of them says.
std::string onednn_isa_for_cpu(const std::string& cpu_flags);

// What a DNNL_MAX_CPU_ISA setting does: nothing set; it holds oneDNN below this CPU's best; it
// names no set oneDNN knows (oneDNN ignores it); or it is at or above the CPU's best.
enum class OnednnCap { none, binds, unknown_value, binds_nothing };
// For `cap` (the setting), `effective` (onednn_isa(), under it) and the CPU's flags. Where the
// flags say nothing, a known cap is taken to bind, as before this could be told.
OnednnCap onednn_cap_effect(const std::string& cap, const std::string& effective,
                            const std::string& cpu_flags);

// Why oneDNN cannot compute in `arithmetic` natively here, or nullopt: float32 always can; bf16
// needs AVX-512 BF16 or AMX. fp16 and tf32 have no CPU variant.
std::optional<std::string> onednn_arithmetic_unavailable_reason(Arithmetic arithmetic);

// The same, for a given ISA (as onednn_isa() names it) and cap: the rule itself, for tests.
std::optional<std::string> onednn_arithmetic_unavailable_reason(Arithmetic arithmetic,
                                                                const std::string& isa,
                                                                const std::string& cap);

}  // namespace gapbench
