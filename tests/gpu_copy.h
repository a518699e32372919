// Host <-> device copies for GPU unit tests. Every copy goes on the test's (non-blocking) stream,
// so it is ordered with the launches there (the legacy default stream that plain cudaMemcpy uses
// would not be), and waits for itself, so host vectors may be temporaries.
#pragma once

#include <limits>
#include <vector>

#include "kernels/base/cuda_check.h"
#include "kernels/base/gpu_memory.h"

namespace gapbench::testing_gpu {

template <class T>
DeviceBuffer<T> to_device(const std::vector<T>& host, const Stream& stream) {
  DeviceBuffer<T> dev(host.size());
  if (!host.empty()) {
    GAPBENCH_CHECK(cudaMemcpyAsync(dev.data(), host.data(), dev.bytes(), cudaMemcpyHostToDevice,
                                   stream.get()));
    stream.synchronize();
  }
  return dev;
}

// A device buffer of NaN, so an element a kernel never writes fails validation.
template <class T>
DeviceBuffer<T> nan_buffer(std::size_t n, const Stream& stream) {
  return to_device(std::vector<T>(n, std::numeric_limits<T>::quiet_NaN()), stream);
}

// Waits for the stream (the work that wrote `dev`), then copies it back.
template <class T>
std::vector<T> to_host(const DeviceBuffer<T>& dev, const Stream& stream) {
  std::vector<T> host(dev.size());
  if (!host.empty()) {
    GAPBENCH_CHECK(cudaMemcpyAsync(host.data(), dev.data(), dev.bytes(), cudaMemcpyDeviceToHost,
                                   stream.get()));
  }
  stream.synchronize();
  return host;
}

}  // namespace gapbench::testing_gpu
