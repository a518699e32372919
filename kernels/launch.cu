// Op `launch`, GPU side: the one-thread tick kernel, then its launchers.
#include <cuda_runtime.h>

#include "kernels/launch.h"

namespace gapbench::launch {

namespace {

__global__ void tick_kernel(unsigned* counter) {
  if (counter != nullptr) ++*counter;
}

}  // namespace

cudaError_t tick_gpu(unsigned* counter, cudaStream_t stream) {
  tick_kernel<<<1, 1, 0, stream>>>(counter);
  return cudaGetLastError();
}

cudaError_t ticks_gpu(unsigned* counter, std::size_t count, cudaStream_t stream) {
  for (std::size_t i = 0; i < count; ++i) {
    tick_kernel<<<1, 1, 0, stream>>>(counter);
    const cudaError_t status = cudaGetLastError();
    if (status != cudaSuccess) return status;
  }
  return cudaSuccess;
}

}  // namespace gapbench::launch
