// Family `overhead`: what the CPU and GPU files share, and the child side of the start-up probe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fixtures/harness.h"
#include "kernels/base/validate.h"
#include "kernels/dense.h"

namespace gapbench::overhead {

// The `what:` values of overhead/launch (see bench/overhead.cpp).
enum class LaunchWhat { launch, launch_sync, sync, graph, graph_sync };
const char* name_of(LaunchWhat what);
// Launches per timed batch of the throughput variants (launch, graph): enough that the one
// synchronize after the batch costs well under 1% of it.
inline constexpr std::size_t kLaunchBatch = 1000;

// The start-up costs measured in a child process (`gapbench startup-probe <what>`).
inline constexpr const char* kProbeContext = "context";
inline constexpr const char* kProbeFirstLaunch = "first_launch";
// Children per repetition of first_launch (see the family's registration).
inline constexpr int kFirstLaunchChildren = 3;
// Generous: a context on a large GPU takes well under a second, a hung driver forever.
inline constexpr double kProbeTimeoutSeconds = 120.0;

// The CPU's square float32 SGEMM (OpenBLAS, its threads as they are set), validated as `what`,
// then timed; counter `flops`. overhead's op:matmul, peak's sgemm and the threads family's
// matmul rows.
void sgemm_cpu_body(State& state, std::size_t n, const std::string& what);

// GPU bodies, defined in bench/overhead_gpu.cpp (CUDA builds only; see GAPBENCH_GPU_BODY).
Body matmul_gpu(std::size_t n, GpuTiming timing, Arithmetic arithmetic);
Body dense_gpu(std::size_t batch, GpuTiming timing);
Body launch_gpu(LaunchWhat what);
Body startup_child_gpu(const std::string& what);  // one child process per iteration
Body cublas_handle_gpu();
Body cudnn_handle_gpu();
Body cudnn_find_conv_gpu();  // cuDNN's algorithm search for a typical convolution

// `gapbench startup-probe <context|first_launch>`, the hidden subcommand bench/main.cpp hands
// to (argv after the subcommand): measures in this fresh process and prints the one line of
// fixtures/child_probe.h. Exit 0, 3 (skipped), 1 (failed) or 2 (bad arguments).
int run_startup_probe(int argc, char** argv);
// Its measurement (bench/overhead_gpu.cpp): seconds, or throws Skip / an error.
double startup_probe_gpu(const std::string& what);

}  // namespace gapbench::overhead
