// RAII owners, on a device (skipped with the reason without one).
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "kernels/base/cuda_libraries.h"
#include "kernels/base/data.h"
#include "kernels/base/gpu_memory.h"
#include "kernels/base/validate.h"
#include "tests/gpu_test.h"

namespace gapbench {
namespace {

TEST(GpuMemory, PinnedAndDeviceRoundTripIsExact) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  const std::size_t n = 1 << 20;
  const std::vector<float> src = uniform_floats(n, 1, 0);
  PinnedBuffer<float> pinned(n);
  DeviceBuffer<float> device(n);
  std::vector<float> back(n, 0.0f);
  Stream stream;
  GAPBENCH_CHECK(cudaMemcpyAsync(device.data(), src.data(), device.bytes(), cudaMemcpyHostToDevice,
                                 stream.get()));
  GAPBENCH_CHECK(cudaMemcpyAsync(pinned.data(), device.data(), device.bytes(),
                                 cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  std::copy(pinned.data(), pinned.data() + n, back.begin());
  const Validation v = validate("round trip", back, src, Tolerance::exact());
  EXPECT_TRUE(v.ok) << v.message();
}

TEST(GpuMemory, MovedBufferOwnsTheMemoryOnce) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  DeviceBuffer<int> a(1000);
  int* p = a.data();
  DeviceBuffer<int> b = std::move(a);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.size(), 1000u);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state
}

TEST(GpuMemory, AllocationFailureThrowsCudaError) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  EXPECT_THROW(DeviceBuffer<char>(std::size_t{1} << 60), CudaError);
  // A failed allocation is not sticky: the device still works.
  DeviceBuffer<char> ok(16);
  EXPECT_NE(ok.data(), nullptr);
}

TEST(CudaLibraries, HandlesCreateOnTheStream) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  Stream stream;
  CublasHandle cublas(stream.get());
  cudaStream_t bound = nullptr;
  GAPBENCH_CHECK(cublasGetStream(cublas.get(), &bound));
  EXPECT_EQ(bound, stream.get());
#if GAPBENCH_WITH_CUDNN
  CudnnHandle cudnn(stream.get());
  GAPBENCH_CHECK(cudnnGetStream(cudnn.get(), &bound));
  EXPECT_EQ(bound, stream.get());
#endif
}

}  // namespace
}  // namespace gapbench
