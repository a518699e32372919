// The one error macro over CUDA, cuBLAS and cuDNN statuses. Turning a status into a message
// needs no device, so these tests run everywhere CUDA is built.
#include <gtest/gtest.h>

#include <string>

#include "kernels/base/cuda_check.h"
#include "kernels/base/cuda_libraries.h"

namespace gapbench {
namespace {

cudaError_t returns(cudaError_t status) { return status; }

TEST(CudaCheck, SuccessPassesThrough) {
  EXPECT_TRUE(GAPBENCH_CHECK(returns(cudaSuccess)));
  EXPECT_TRUE(GAPBENCH_CHECK(CUBLAS_STATUS_SUCCESS));
}

TEST(CudaCheck, CudaErrorNamesFileLineStatusAndCall) {
  try {
    GAPBENCH_CHECK(returns(cudaErrorMemoryAllocation));
    FAIL() << "no exception";
  } catch (const CudaError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.status_name(), "cudaErrorMemoryAllocation");
    EXPECT_NE(what.find("test_cuda_check_gpu.cpp:"), std::string::npos) << what;
    EXPECT_NE(what.find("cudaErrorMemoryAllocation (out of memory)"), std::string::npos) << what;
    EXPECT_NE(what.find("in `returns(cudaErrorMemoryAllocation)`"), std::string::npos) << what;
  }
}

TEST(CudaCheck, CublasStatusIsNamed) {
  try {
    GAPBENCH_CHECK(CUBLAS_STATUS_INVALID_VALUE);
    FAIL() << "no exception";
  } catch (const CudaError& e) {
    EXPECT_EQ(e.status_name(), "CUBLAS_STATUS_INVALID_VALUE");
  }
}

#if GAPBENCH_WITH_CUDNN
TEST(CudaCheck, CudnnStatusIsNamed) {
  try {
    GAPBENCH_CHECK(CUDNN_STATUS_BAD_PARAM);
    FAIL() << "no exception";
  } catch (const CudaError& e) {
    EXPECT_EQ(e.status_name(), "CUDNN_STATUS_BAD_PARAM");
    EXPECT_NE(std::string(e.what()).find("in `CUDNN_STATUS_BAD_PARAM`"), std::string::npos);
    EXPECT_TRUE(is_cudnn_status(e, CUDNN_STATUS_BAD_PARAM));
    EXPECT_FALSE(is_cudnn_status(e, CUDNN_STATUS_NOT_SUPPORTED));
  }
}

#ifdef CUDNN_STATUS_CATEGORY
// cuDNN 9's finer codes still match their category, and only it.
TEST(CudaCheck, CudnnSubCodeMatchesItsCategory) {
  try {
    GAPBENCH_CHECK(CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
    FAIL() << "no exception";
  } catch (const CudaError& e) {
    EXPECT_EQ(e.status_name(), "CUDNN_STATUS_BAD_PARAM_NULL_POINTER");
    EXPECT_TRUE(is_cudnn_status(e, CUDNN_STATUS_BAD_PARAM));
    EXPECT_FALSE(is_cudnn_status(e, CUDNN_STATUS_INTERNAL_ERROR));
  }
  // A CUDA runtime error with the same number is not a cuDNN status.
  try {
    GAPBENCH_CHECK(static_cast<cudaError_t>(CUDNN_STATUS_BAD_PARAM));
    FAIL() << "no exception";
  } catch (const CudaError& e) {
    EXPECT_FALSE(is_cudnn_status(e, CUDNN_STATUS_BAD_PARAM));
  }
}
#endif
#endif

TEST(CudaCheck, NoThrowVariantReportsAndReturnsFalse) {
  testing::internal::CaptureStderr();
  const bool ok = GAPBENCH_CHECK_NOTHROW(returns(cudaErrorInvalidValue));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(ok);
  EXPECT_NE(err.find("gapbench: "), std::string::npos);
  EXPECT_NE(err.find("cudaErrorInvalidValue"), std::string::npos) << err;
}

}  // namespace
}  // namespace gapbench
