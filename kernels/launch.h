// Family `overhead`, op `launch`: the kernel whose launch cost is measured. It has nothing to
// compute, so no CPU reference: what can be checked is that every launch ran, which the counter
// argument makes visible.
#pragma once

#if GAPBENCH_WITH_CUDA
#include <cuda_runtime_api.h>

#include <cstddef>

namespace gapbench::launch {

// One launch of a one-thread kernel that does nothing when `counter` is null (the empty kernel
// of the launch benchmarks) and adds one to *counter otherwise (launches on one stream run in
// order, so the count is exact). Returns the launch status for the caller's GAPBENCH_CHECK.
cudaError_t tick_gpu(unsigned* counter, cudaStream_t stream);

// `count` such launches back to back; stops at the first failed launch and returns its status.
cudaError_t ticks_gpu(unsigned* counter, std::size_t count, cudaStream_t stream);

}  // namespace gapbench::launch
#endif
