#include "kernels/launch.h"

#include <gtest/gtest.h>

#include "kernels/base/cuda_check.h"
#include "kernels/base/gpu_memory.h"
#include "tests/gpu_test.h"

namespace gapbench::launch {
namespace {

TEST(LaunchGpu, EveryLaunchRunsOnceInOrder) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  const Stream stream;
  const DeviceBuffer<unsigned> counter(1);
  GAPBENCH_CHECK(cudaMemsetAsync(counter.data(), 0, sizeof(unsigned), stream.get()));
  GAPBENCH_CHECK(tick_gpu(counter.data(), stream.get()));
  GAPBENCH_CHECK(ticks_gpu(counter.data(), 2500, stream.get()));
  GAPBENCH_CHECK(ticks_gpu(counter.data(), 0, stream.get()));
  // The empty form (no counter) launches too, and touches nothing.
  GAPBENCH_CHECK(ticks_gpu(nullptr, 100, stream.get()));
  unsigned count = 0;
  GAPBENCH_CHECK(
      cudaMemcpyAsync(&count, counter.data(), sizeof count, cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  EXPECT_EQ(count, 2501u);
}

}  // namespace
}  // namespace gapbench::launch
