#include "fixtures/device_probe.h"

#include <gtest/gtest.h>

namespace gapbench {
namespace {

TEST(DeviceProbe, Formats) {
  EXPECT_EQ(format_gib(12.0 * 1024 * 1024 * 1024), "12.0 GiB");
  EXPECT_EQ(format_gib(3.14 * 1024 * 1024 * 1024), "3.1 GiB");
  EXPECT_EQ(format_cuda_version(12040), "12.4");
  EXPECT_EQ(format_cuda_version(13000), "13.0");
}

TEST(DeviceProbe, RequireGpuAgreesWithTheReason) {
  const auto reason = gpu_unavailable_reason();
  if (reason) {
    EXPECT_FALSE(reason->empty());
    try {
      require_gpu();
      FAIL() << "no Skip";
    } catch (const Skip& skip) {
      EXPECT_EQ(skip.what(), *reason);
    }
    EXPECT_THROW(require_free_device_memory(1), Skip);
  } else {
    EXPECT_NO_THROW(require_gpu());
    try {
      require_free_device_memory(std::size_t{1} << 62);  // 4 EiB: more than any GPU has
      FAIL() << "no Skip";
    } catch (const Skip& skip) {
      EXPECT_NE(std::string(skip.what()).find("needs 4294967296.0 GiB, "), std::string::npos)
          << skip.what();
    }
  }
#if !GAPBENCH_WITH_CUDA
  EXPECT_EQ(reason, std::optional<std::string>("built without CUDA"));
#endif
}

}  // namespace
}  // namespace gapbench

namespace gapbench {
namespace {

TEST(HostMemory, MoreThanAvailableIsASkipNamingBoth) {
  const std::size_t left = available_host_memory();
  ASSERT_GT(left, 0u);
  EXPECT_NO_THROW(require_host_memory(1024));
  try {
    require_host_memory(left + (std::size_t{1} << 40));
    FAIL() << "no Skip";
  } catch (const Skip& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("needs ", 0), 0u) << what;
    EXPECT_NE(what.find(" GiB of host memory, "), std::string::npos) << what;
    EXPECT_NE(what.find(" GiB available"), std::string::npos) << what;
  }
}

TEST(DeviceProbe, AnArithmeticTheTensorCoresLackIsRefusedWithTheReason) {
  EXPECT_EQ(
      arithmetic_unsupported_reason(Arithmetic::fp16, 6, 1),
      std::optional<std::string>("fp16 tensor cores need compute capability 7.0, this GPU is 6.1"));
  EXPECT_EQ(
      arithmetic_unsupported_reason(Arithmetic::bf16, 7, 5),
      std::optional<std::string>("bf16 tensor cores need compute capability 8.0, this GPU is 7.5"));
  EXPECT_TRUE(arithmetic_unsupported_reason(Arithmetic::tf32, 7, 5).has_value());
  EXPECT_FALSE(arithmetic_unsupported_reason(Arithmetic::fp16, 7, 5).has_value());  // T4
  EXPECT_FALSE(arithmetic_unsupported_reason(Arithmetic::tf32, 8, 0).has_value());
  EXPECT_FALSE(arithmetic_unsupported_reason(Arithmetic::float32, 3, 0).has_value());
  if (gpu_unavailable_reason()) {
    EXPECT_THROW(require_arithmetic(Arithmetic::fp16), Skip);
  }
}

}  // namespace
}  // namespace gapbench
