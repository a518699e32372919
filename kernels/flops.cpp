// The CPU's arithmetic peak (kernels/flops.h). Each loop is compiled for its own instruction set
// with a target attribute, so the file builds with the project's baseline flags and a CPU only
// ever runs the loops cpu_has() allows.
#include "kernels/flops.h"

#include <immintrin.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "kernels/onednn_isa.h"

namespace gapbench::flops {
namespace {

constexpr float kMultiplier = 1.0f - 0x1.0p-10f;
constexpr float kAddend = 3.0f * 0x1.0p-10f;
// Every value of the float32 loops stays below 3: each rounding is at most 3 * 2^-24.
constexpr double kLargestValue = 3.0;
// The bf16 loop's pair (a0, a1) and each lane's b (both elements), all exact in bf16.
constexpr float kPairA0 = 0x1.0p-4f;
constexpr float kPairA1 = 0x1.0p-5f;
float pair_b(std::size_t lane) { return 1.0f + static_cast<float>(lane % 16) / 16.0f; }

constexpr std::size_t kMaxLanes = 16;
constexpr std::size_t kMaxOutputs = kAccumulators * kMaxLanes;

// Accumulator r, lane j starts from value k = r * lanes + j: in [1, 2) for the float32 loops
// (each lane its own), the integer k for the bf16 loop.
std::array<float, kMaxOutputs> start_values(Isa isa) {
  std::array<float, kMaxOutputs> v{};
  for (std::size_t k = 0; k < kMaxOutputs; ++k) {
    v[k] = isa == Isa::avx512_bf16 ? static_cast<float>(k)
                                   : 1.0f + static_cast<float>(k % 256) / 256.0f;
  }
  return v;
}

// bfloat16 is float32's upper half; exact for the values used here.
std::uint16_t to_bf16(float f) {
  std::uint32_t bits;
  static_assert(sizeof bits == sizeof f);
  __builtin_memcpy(&bits, &f, sizeof f);
  return static_cast<std::uint16_t>(bits >> 16);
}

// The twelve accumulators, spelt out so that each is a register of its own.
#define GAPBENCH_EACH_ACCUMULATOR(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
static_assert(kAccumulators == 12, "GAPBENCH_EACH_ACCUMULATOR spells out 12");

// Every loop: load the accumulators, `steps` steps of each, store them. Each ISA's function
// defines GAPBENCH_LOAD, GAPBENCH_STEP and GAPBENCH_STORE for one accumulator first.
#define GAPBENCH_ACCUMULATOR_LOOP(steps)       \
  GAPBENCH_EACH_ACCUMULATOR(GAPBENCH_LOAD)     \
  for (std::int64_t i = 0; i < (steps); ++i) { \
    GAPBENCH_EACH_ACCUMULATOR(GAPBENCH_STEP)   \
  }                                            \
  GAPBENCH_EACH_ACCUMULATOR(GAPBENCH_STORE)

__attribute__((target("sse4.1"))) void run_sse41(std::int64_t steps, const float* start,
                                                 float* out) {
  const __m128 m = _mm_set1_ps(kMultiplier), c = _mm_set1_ps(kAddend);
#define GAPBENCH_LOAD(r) __m128 acc##r = _mm_loadu_ps(start + 4 * (r));
#define GAPBENCH_STEP(r) acc##r = _mm_add_ps(_mm_mul_ps(acc##r, m), c);
#define GAPBENCH_STORE(r) _mm_storeu_ps(out + 4 * (r), acc##r);
  GAPBENCH_ACCUMULATOR_LOOP(steps)
#undef GAPBENCH_LOAD
#undef GAPBENCH_STEP
#undef GAPBENCH_STORE
}

__attribute__((target("avx2,fma"))) void run_avx2(std::int64_t steps, const float* start,
                                                  float* out) {
  const __m256 m = _mm256_set1_ps(kMultiplier), c = _mm256_set1_ps(kAddend);
#define GAPBENCH_LOAD(r) __m256 acc##r = _mm256_loadu_ps(start + 8 * (r));
#define GAPBENCH_STEP(r) acc##r = _mm256_fmadd_ps(acc##r, m, c);
#define GAPBENCH_STORE(r) _mm256_storeu_ps(out + 8 * (r), acc##r);
  GAPBENCH_ACCUMULATOR_LOOP(steps)
#undef GAPBENCH_LOAD
#undef GAPBENCH_STEP
#undef GAPBENCH_STORE
}

__attribute__((target("avx512f"))) void run_avx512(std::int64_t steps, const float* start,
                                                   float* out) {
  const __m512 m = _mm512_set1_ps(kMultiplier), c = _mm512_set1_ps(kAddend);
#define GAPBENCH_LOAD(r) __m512 acc##r = _mm512_loadu_ps(start + 16 * (r));
#define GAPBENCH_STEP(r) acc##r = _mm512_fmadd_ps(acc##r, m, c);
#define GAPBENCH_STORE(r) _mm512_storeu_ps(out + 16 * (r), acc##r);
  GAPBENCH_ACCUMULATOR_LOOP(steps)
#undef GAPBENCH_LOAD
#undef GAPBENCH_STEP
#undef GAPBENCH_STORE
}

// `a` and `b` hold 32 bf16 each: lane j's pair is elements 2j and 2j+1.
__attribute__((target("avx512f,avx512bf16"))) void run_avx512_bf16(std::int64_t steps,
                                                                   const float* start,
                                                                   const std::uint16_t* a,
                                                                   const std::uint16_t* b,
                                                                   float* out) {
  const __m512bh va = (__m512bh)_mm512_loadu_si512(a);
  const __m512bh vb = (__m512bh)_mm512_loadu_si512(b);
#define GAPBENCH_LOAD(r) __m512 acc##r = _mm512_loadu_ps(start + 16 * (r));
#define GAPBENCH_STEP(r) acc##r = _mm512_dpbf16_ps(acc##r, va, vb);
#define GAPBENCH_STORE(r) _mm512_storeu_ps(out + 16 * (r), acc##r);
  GAPBENCH_ACCUMULATOR_LOOP(steps)
#undef GAPBENCH_LOAD
#undef GAPBENCH_STEP
#undef GAPBENCH_STORE
}

#undef GAPBENCH_ACCUMULATOR_LOOP
#undef GAPBENCH_EACH_ACCUMULATOR

// What the ISA is called in a skip's reason.
const char* isa_words(Isa isa) {
  switch (isa) {
    case Isa::sse41:
      return "SSE4.1";
    case Isa::avx2:
      return "AVX2 with FMA";
    case Isa::avx512:
      return "AVX-512";
    case Isa::avx512_bf16:
      return "AVX-512 BF16";
    case Isa::amx:
      return "AMX";
  }
  return "?";
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::sse41:
      return "sse41";
    case Isa::avx2:
      return "avx2";
    case Isa::avx512:
      return "avx512";
    case Isa::avx512_bf16:
      return "avx512_bf16";
    case Isa::amx:
      return "amx";
  }
  return "?";
}

Arithmetic isa_math(Isa isa) {
  return isa == Isa::avx512_bf16 || isa == Isa::amx ? Arithmetic::bf16 : Arithmetic::float32;
}

bool cpu_has(Isa isa) {
  // libgcc's checks include the operating system's: AVX and AVX-512 count only where XCR0
  // enables their registers.
  __builtin_cpu_init();
  switch (isa) {
    case Isa::sse41:
      return __builtin_cpu_supports("sse4.1");
    case Isa::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::avx512:
      return __builtin_cpu_supports("avx512f");
    case Isa::avx512_bf16:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
    case Isa::amx:
      return __builtin_cpu_supports("amx-bf16") && __builtin_cpu_supports("amx-tile");
  }
  return false;
}

std::optional<Isa> isa_cap() {
  const char* value = std::getenv("GAPBENCH_MAX_CPU_ISA");
  if (value == nullptr || *value == '\0') return std::nullopt;
  for (Isa isa : {Isa::sse41, Isa::avx2, Isa::avx512, Isa::avx512_bf16, Isa::amx}) {
    if (value == std::string(isa_name(isa))) return isa;
  }
  throw std::invalid_argument(std::string("environment variable GAPBENCH_MAX_CPU_ISA must be ") +
                              "sse41, avx2, avx512, avx512_bf16 or amx, got '" + value + "'");
}

std::optional<std::string> unavailable_reason(Isa isa, bool has, std::optional<Isa> cap) {
  if (!has) return std::string(kCpuLacks) + isa_words(isa);
  if (cap && static_cast<int>(isa) > static_cast<int>(*cap)) {
    return std::string(kCpuLacks) + isa_words(isa) + " (GAPBENCH_MAX_CPU_ISA=" + isa_name(*cap) +
           " caps it at " + isa_name(*cap) + ")";
  }
  return std::nullopt;
}

std::optional<std::string> unavailable_reason(Isa isa) {
  return unavailable_reason(isa, cpu_has(isa), isa_cap());
}

std::size_t lanes(Isa isa) {
  switch (isa) {
    case Isa::sse41:
      return 4;
    case Isa::avx2:
      return 8;
    default:
      return 16;
  }
}

std::size_t outputs(Isa isa) { return kAccumulators * lanes(isa); }

double flops_per_step(Isa isa) {
  // Two FLOP per lane (a multiply and an add, fused or not); VDPBF16PS does two of each.
  const double per_lane = isa == Isa::avx512_bf16 ? 4.0 : 2.0;
  return per_lane * static_cast<double>(outputs(isa));
}

void run(Isa isa, std::int64_t steps, float* out) {
  static const std::array<float, kMaxOutputs> fp32_start = start_values(Isa::avx2);
  static const std::array<float, kMaxOutputs> bf16_start = start_values(Isa::avx512_bf16);
  switch (isa) {
    case Isa::sse41:
      return run_sse41(steps, fp32_start.data(), out);
    case Isa::avx2:
      return run_avx2(steps, fp32_start.data(), out);
    case Isa::avx512:
      return run_avx512(steps, fp32_start.data(), out);
    case Isa::avx512_bf16: {
      static const auto pairs = [] {
        std::array<std::array<std::uint16_t, 32>, 2> ab{};
        for (std::size_t j = 0; j < 16; ++j) {
          ab[0][2 * j] = to_bf16(kPairA0);
          ab[0][2 * j + 1] = to_bf16(kPairA1);
          ab[1][2 * j] = ab[1][2 * j + 1] = to_bf16(pair_b(j));
        }
        return ab;
      }();
      return run_avx512_bf16(steps, bf16_start.data(), pairs[0].data(), pairs[1].data(), out);
    }
    case Isa::amx:
      break;
  }
  throw std::invalid_argument(std::string("no loop measures ") + isa_name(isa));
}

std::vector<double> reference(Isa isa, std::int64_t steps) {
  const std::array<float, kMaxOutputs> start = start_values(isa);
  std::vector<double> ref(outputs(isa));
  for (std::size_t k = 0; k < ref.size(); ++k) {
    double x = start[k];
    if (isa == Isa::avx512_bf16) {
      const double b = pair_b(k % lanes(isa));
      x += static_cast<double>(steps) * (kPairA0 * b + kPairA1 * b);
    } else {
      for (std::int64_t i = 0; i < steps; ++i) x = x * kMultiplier + kAddend;
    }
    ref[k] = x;
  }
  return ref;
}

Tolerance tolerance(Isa isa, std::int64_t steps) {
  const auto n = static_cast<double>(steps);
  if (isa == Isa::avx512_bf16) {
    // Exact sums of powers of two while values stay below 2^15; two roundings a step allowed
    // all the same, relative to the value.
    return {0.0, 2.0 * n * kFloat32Roundoff};
  }
  // steps x roundings per step x the largest rounding (docs/reading-results.md#the-flop-peak).
  const double roundings = isa == Isa::sse41 ? 2.0 : 1.0;
  return {n * roundings * kLargestValue * kFloat32Roundoff, 0.0};
}

Validation check(Isa isa, std::int64_t steps) {
  std::vector<float> got(outputs(isa));
  run(isa, steps, got.data());
  const std::vector<double> ref = reference(isa, steps);
  return validate(std::string("flops ") + isa_name(isa), got.data(), ref.data(), got.size(),
                  tolerance(isa, steps));
}

}  // namespace gapbench::flops
