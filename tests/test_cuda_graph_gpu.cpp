#include "kernels/base/cuda_graph.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "kernels/base/gpu_memory.h"
#include "kernels/launch.h"
#include "tests/gpu_test.h"

namespace gapbench {
namespace {

unsigned read_counter(const DeviceBuffer<unsigned>& counter, const Stream& stream) {
  unsigned count = 0;
  GAPBENCH_CHECK(
      cudaMemcpyAsync(&count, counter.data(), sizeof count, cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  return count;
}

void reset_counter(const DeviceBuffer<unsigned>& counter, const Stream& stream) {
  GAPBENCH_CHECK(cudaMemsetAsync(counter.data(), 0, sizeof(unsigned), stream.get()));
}

TEST(CudaGraph, ReplaysWhatWasCapturedWithoutRunningItWhileCapturing) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  const Stream stream;
  const DeviceBuffer<unsigned> counter(1);
  reset_counter(counter, stream);
  const CapturedGraph graph(
      stream.get(), [&] { GAPBENCH_CHECK(launch::ticks_gpu(counter.data(), 10, stream.get())); });
  EXPECT_EQ(read_counter(counter, stream), 0u);  // captured, not run
  for (int i = 0; i < 3; ++i) graph.launch(stream.get());
  EXPECT_EQ(read_counter(counter, stream), 30u);
}

TEST(CudaGraph, AThrowWhileCapturingLeavesTheStreamUsable) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  const Stream stream;
  const DeviceBuffer<unsigned> counter(1);
  reset_counter(counter, stream);
  EXPECT_THROW(CapturedGraph(stream.get(),
                             [&] {
                               GAPBENCH_CHECK(launch::tick_gpu(counter.data(), stream.get()));
                               throw std::runtime_error("enqueue failed");
                             }),
               std::runtime_error);
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusActive;
  GAPBENCH_CHECK(cudaStreamIsCapturing(stream.get(), &capturing));
  EXPECT_EQ(capturing, cudaStreamCaptureStatusNone);
  GAPBENCH_CHECK(launch::tick_gpu(counter.data(), stream.get()));
  EXPECT_EQ(read_counter(counter, stream), 1u);  // only the launch after the failed capture ran
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
}  // namespace gapbench
