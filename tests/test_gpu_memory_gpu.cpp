// RAII owners, on a device (skipped with the reason without one).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/base/cuda_libraries.h"
#include "kernels/base/data.h"
#include "kernels/base/gpu_memory.h"
#include "kernels/base/narrow_gpu.h"
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

// Host only: the poison byte reads as a NaN in every format a buffer holds (float32, float16,
// bfloat16), so a poisoned value read where it mattered turns the output NaN, and validation
// refuses a NaN however wide its tolerance.
TEST(GpuMemory, PoisonIsANanInEveryFormatAndFailsValidation) {
  const std::vector<unsigned char> bytes(4 * sizeof(float),
                                         static_cast<unsigned char>(kPoisonByte));
  std::vector<float> f32(4);
  std::memcpy(f32.data(), bytes.data(), bytes.size());
  std::vector<std::uint16_t> bits16(8);
  std::memcpy(bits16.data(), bytes.data(), bytes.size());
  for (float v : f32) EXPECT_TRUE(std::isnan(v));
  for (Arithmetic a : {Arithmetic::fp16, Arithmetic::bf16}) {
    for (float v : from_16bit(bits16.data(), bits16.size(), a)) {
      EXPECT_TRUE(std::isnan(v)) << math_name(a);
    }
  }
  const std::vector<float> expected(f32.size(), 1.0f);
  EXPECT_FALSE(validate("poisoned", f32, expected, Tolerance{1e3, 1e3}).ok);
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
  // Its float32 routines compute in float32: no TF32, no emulation (cuda_libraries.h).
  cublasMath_t math = CUBLAS_TF32_TENSOR_OP_MATH;
  GAPBENCH_CHECK(cublasGetMathMode(cublas.get(), &math));
  EXPECT_EQ(math, CUBLAS_DEFAULT_MATH);
#if GAPBENCH_WITH_CUDNN
  CudnnHandle cudnn(stream.get());
  GAPBENCH_CHECK(cudnnGetStream(cudnn.get(), &bound));
  EXPECT_EQ(bound, stream.get());
#endif
}

// Host only: the compute type of each arithmetic. float32 must never be a _FAST_ (TF32, fp16,
// bf16) or _EMULATED_ type: a float32 row would then time reduced precision under its name.
TEST(CudaLibraries, CublasComputeTypeOfEachArithmetic) {
  EXPECT_EQ(cublas_compute_type(Arithmetic::float32), CUBLAS_COMPUTE_32F);
  EXPECT_EQ(cublas_compute_type(Arithmetic::tf32), CUBLAS_COMPUTE_32F_FAST_TF32);
  EXPECT_EQ(cublas_compute_type(Arithmetic::fp16), CUBLAS_COMPUTE_32F);
  EXPECT_EQ(cublas_compute_type(Arithmetic::bf16), CUBLAS_COMPUTE_32F);
}

}  // namespace
}  // namespace gapbench
