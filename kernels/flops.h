// The CPU's own arithmetic peak: register-resident loops, no library and no memory traffic, one
// per vector instruction set, chosen at run time so that one binary serves every x86-64 CPU.
//
// Each loop keeps kAccumulators independent vector registers busy: enough to cover an FMA's
// latency times the FMA units' throughput (4 cycles x 2 units on Zen 3 and Skylake-X, 5 x 2 on
// Zen 4; SSE's dependent multiply then add, 6 cycles x 2 on Zen 3), so the loop is bound by
// throughput alone. Every accumulator lane follows a recurrence whose float64 reference is known,
// so a run is checked before it is timed (check()).
//
//   sse41        x = x*m + c, multiply then add (SSE has no FMA): 4 lanes x 2 FLOP a step
//   avx2         x = fma(x, m, c), 8 lanes x 2 FLOP (an FMA lane counts 2)
//   avx512       x = fma(x, m, c), 16 lanes x 2 FLOP
//   avx512_bf16  x += a0*b0 + a1*b1 (VDPBF16PS: bf16 pairs, float32 sums), 16 lanes x 4 FLOP
//
// m = 1 - 2^-10 and c = 3 * 2^-10 draw every lane from its start in [1, 2) towards 3 without
// ever reaching it, so values stay normal (no denormal slow path) and a step missing, repeated
// or computed wrong moves the result by more than the rounding allows. The bf16 loop adds exact
// powers of two, so its sums are exact.
//
// AMX (bf16 tiles) has no loop yet: it needs the tile state requested from Linux
// (arch_prctl ARCH_REQ_XCOMP_PERM) and a CPU that has it to be tested on; no row claims it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/base/validate.h"

namespace gapbench::flops {

// In the order of the cap GAPBENCH_MAX_CPU_ISA: each set includes those before it. `amx` is a
// cap's value only (no loop measures it yet).
enum class Isa { sse41, avx2, avx512, avx512_bf16, amx };
inline constexpr Isa kMeasured[] = {Isa::sse41, Isa::avx2, Isa::avx512, Isa::avx512_bf16};

inline constexpr int kAccumulators = 12;

// "sse41", "avx2", "avx512", "avx512_bf16", "amx": the row's `isa` axis and the cap's values.
const char* isa_name(Isa isa);
// The arithmetic a loop computes in: float32, or bf16 for avx512_bf16 and amx.
Arithmetic isa_math(Isa isa);

// Whether this CPU (and its operating system: the vector state must be enabled) runs `isa`.
bool cpu_has(Isa isa);

// GAPBENCH_MAX_CPU_ISA: nullopt when unset or empty; throws std::invalid_argument naming the
// variable and its values when it is set to anything else.
std::optional<Isa> isa_cap();

// Why the `isa` loop does not run here, or nullopt when it does. Every reason starts with
// "this CPU lacks " (kernels/onednn_isa.h's kCpuLacks), a capped one naming the cap:
// "this CPU lacks AVX-512 (GAPBENCH_MAX_CPU_ISA=avx2 caps it at avx2)".
std::optional<std::string> unavailable_reason(Isa isa, bool has, std::optional<Isa> cap);
std::optional<std::string> unavailable_reason(Isa isa);  // this CPU, this process's cap

// The float32 values the loop leaves: kAccumulators x lanes(isa).
std::size_t lanes(Isa isa);
std::size_t outputs(Isa isa);
// FLOP of one step (one instruction per accumulator).
double flops_per_step(Isa isa);

// Runs `steps` steps of the loop from its start values and writes every accumulator lane to
// out[0..outputs(isa)). Only where cpu_has(isa): elsewhere the instructions would fault.
void run(Isa isa, std::int64_t steps, float* out);

// The float64 reference of the same recurrence, and the tolerance its float32 arithmetic
// allows after `steps` steps (reading-results.md#tolerances).
std::vector<double> reference(Isa isa, std::int64_t steps);
Tolerance tolerance(Isa isa, std::int64_t steps);

// Runs `steps` steps and validates them: what a benchmark checks before timing.
Validation check(Isa isa, std::int64_t steps);

}  // namespace gapbench::flops
