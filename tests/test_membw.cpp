#include "kernels/membw.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "kernels/base/data.h"
#include "kernels/base/validate.h"

namespace gapbench {
namespace {

TEST(Membw, CopyIsExact) {
  for (std::size_t n : {0u, 1u, 7u, 1000u, 65537u}) {
    const auto src = uniform_floats(n, 11, 0);
    std::vector<float> dst(n, -7.0f);
    membw::copy(dst.data(), src.data(), n);
    const Validation v = validate("copy", dst, src, Tolerance::exact());
    EXPECT_TRUE(v.ok) << "n=" << n << ": " << v.message();
  }
}

TEST(Membw, TriadMatchesReference) {
  // Odd sizes exercise the vector loop's scalar tail.
  for (std::size_t n : {1u, 15u, 16u, 17u, 100003u}) {
    const auto b = uniform_floats(n, 5, 1);
    const auto c = uniform_floats(n, 5, 2);
    std::vector<float> a(n, 0.0f);
    std::vector<double> ref(n);
    membw::triad(a.data(), b.data(), c.data(), 3.0f, n);
    membw::triad_reference(b.data(), c.data(), 3.0f, n, ref.data());
    // One multiply-add in float32: two roundings (one with FMA) of values up to 4 in size.
    const Validation v = validate("triad", a, ref, {1e-6, 2e-7});
    EXPECT_TRUE(v.ok) << "n=" << n << ": " << v.message();
  }
}

TEST(Membw, ReadSumMatchesReference) {
  // Around the 1024-element block: below, at, and past it with a tail.
  for (std::size_t n : {0u, 5u, 1023u, 1024u, 1025u, 300007u}) {
    const auto x = uniform_floats(n, 9, 3, 0.0f, 1.0f);
    const double got = membw::read_sum(x.data(), n);
    const double ref = membw::read_sum_reference(x.data(), n);
    const Validation v = validate("read_sum", &got, &ref, 1, {1e-12, 64 * 0x1.0p-24});
    EXPECT_TRUE(v.ok) << "n=" << n << ": " << v.message();
  }
  const std::vector<float> ones(4096 + 3, 1.0f);
  EXPECT_EQ(membw::read_sum(ones.data(), ones.size()), 4099.0);
}

// The buffer outgrows the cache the measuring cores reach four times over, 256 MiB on the small
// machines.
TEST(Membw, StreamingBufferOutgrowsTheReachableCache) {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  EXPECT_EQ(membw::streaming_buffer_mib(0), 256u);              // unknown
  EXPECT_EQ(membw::streaming_buffer_mib(32 * kMiB), 256u);      // a 2-core VM of a Zen 4
  EXPECT_EQ(membw::streaming_buffer_mib(64 * kMiB + 1), 512u);  // just over 256 / 4
  EXPECT_EQ(membw::streaming_buffer_mib(256 * kMiB), 1024u);    // 64-core EPYC, 8 x 32 MiB
  EXPECT_EQ(membw::streaming_buffer_mib(480 * kMiB), 2048u);    // a 480 MiB Xeon's socket
  EXPECT_EQ(membw::streaming_buffer_mib(1152 * kMiB), 8192u);   // Genoa-X, 3D V-Cache
}

// No figure wraps round: 2^64 - 1 bytes gave 256 MiB, and past 2^61 the doubling reached 0.
TEST(Membw, StreamingBufferNeverWrapsRound) {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  const std::size_t most = std::numeric_limits<std::size_t>::max();
  for (const std::size_t bytes : {most, most - kMiB, (most >> 2) + 1, std::size_t{1} << 62}) {
    const std::size_t mib = membw::streaming_buffer_mib(bytes);
    EXPECT_GE(mib, std::size_t{1} << 43) << bytes;
    EXPECT_EQ(mib & (mib - 1), 0u) << bytes;  // a power of two
    EXPECT_LE(mib, most / kMiB) << bytes;     // its bytes fit in a size_t
  }
  EXPECT_EQ(membw::streaming_buffer_mib(std::size_t{1} << 40), std::size_t{1} << 22);
}

}  // namespace
}  // namespace gapbench
