// Family `threads`: threads that fight for the cores. A threaded library's op with one thread
// and with one thread per CPU online, as twin rows timed back to back. On a shared machine (a
// 2-vCPU cloud VM, Colab) other work takes the CPUs, or the host hands work between the two
// vCPUs slowly: a thread that waits for another at each of the op's barriers then waits a whole
// scheduler slice, and all threads run slower than one. On a quiet machine with whole cores,
// all threads win. CPU only: the GPU's side of this cause is the host thread that feeds it
// (`overhead`).
//
// Names: threads/<onednn|openblas>/cpu/op:<op>/<the op's axes>/lib_threads:<1|all>
//   onednn    op:conv       oneDNN's convolution primitive on the conv family's smallest layer
//                           (n 1, c 1, 28 x 28, k 1, 3 x 3): a few microseconds of work between
//                           barriers (kernels/conv_onednn.h)
//             op:lstm_step  oneDNN's LSTM on a 1-step sequence: the lstm family's Keras layer
//                           (batch 64, input 50, hidden 64; kernels/lstm_onednn.h)
//   openblas  op:matmul     square float32 SGEMM, n 128 and 1024 (kernels/gemm.h)
//   lib_threads:1    one thread
//   lib_threads:all  one per CPU online (sysconf), which is what OpenBLAS, oneDNN and PyTorch
//                    start in a container whose CPU quota is smaller; a job pinned to one CPU
//                    runs that many threads on it. Set for the row and restored after
//                    (kernels/library_threads.h); oneDNN's primitive is created under it.
// Counters: flops (2 per multiply-add, a rate), lib_threads (the threads the row ran).
// Every row is validated against the float64 reference first, as in its own family.
#include <limits>
#include <string>
#include <vector>

#include "bench/conv.h"
#include "bench/lstm.h"
#include "bench/overhead.h"
#include "fixtures/device_probe.h"
#include "fixtures/harness.h"
#include "fixtures/machine.h"
#include "fixtures/setup_cache.h"
#include "kernels/base/data.h"
#include "kernels/conv_onednn.h"
#include "kernels/library_threads.h"
#include "kernels/lstm_onednn.h"

namespace gapbench::threads {
namespace {

// "all": what a library that counts the machine's CPUs starts.
int thread_count(bool all) { return all ? static_cast<int>(cpus_online()) : 1; }

// The row's threads for the life of its body, or a clean skip where the library's cannot be set.
LibraryThreads row_threads(ThreadedLibrary library, int threads) {
  if (const auto why = threads_unsettable(library)) throw Skip(*why);
  return LibraryThreads(library, threads);
}

// lib_threads and the label; each body sets its own flops.
void set_thread_counters(State& state, int threads) {
  state.counters["lib_threads"] = threads;
  state.SetLabel(std::to_string(threads) + (threads == 1 ? " thread" : " threads"));
}

const conv::ConvShape kConv{1, 1, 28, 28, 1, 3, 3, 1, 0};
const lstm::Shape kLstm{64, 50, 64, 1};

void conv_body(State& state, int threads) {
  const LibraryThreads scope = row_threads(ThreadedLibrary::onednn, threads);
  const conv::Problem& data = conv::cached_problem(kConv);
  std::vector<float> y(kConv.output_size(), std::numeric_limits<float>::quiet_NaN());
  // One primitive per thread count: oneDNN sizes its kernel to the team it is created under.
  conv::OnednnConvolution& dnn =
      cached<conv::OnednnConvolution>(kConv.key() + ":threads" + std::to_string(threads), kConv,
                                      data.w.data(), Arithmetic::float32);
  dnn.load_input(data.x.data());
  validate_once([&] {
    dnn.forward();
    dnn.read_output(y.data());
    return data.check("threads onednn conv", y, Arithmetic::float32);
  });
  for (auto _ : state) {
    dnn.forward();
    benchmark::ClobberMemory();
  }
  set_flops_counter(state, kConv.flops());
  set_thread_counters(state, threads);
}

void lstm_step_body(State& state, int threads) {
  const LibraryThreads scope = row_threads(ThreadedLibrary::onednn, threads);
  const lstm::LstmData& d = cached<lstm::LstmData>(kLstm.key(), kLstm);
  const lstm::Problem& p = d.problem;
  lstm::OnednnLstm& step =
      cached<lstm::OnednnLstm>(current_benchmark(), kLstm, p.weights, Arithmetic::float32);
  step.set_inputs(p.x.data(), p.h0.data(), p.c0.data());
  validate_once([&] {
    step.run();
    return lstm::check_step("threads onednn lstm step", kLstm, d.ref, step.h_last().data(),
                            step.c_last().data(), step.precision());
  });
  for (auto _ : state) {
    step.run();
    benchmark::ClobberMemory();
  }
  set_flops_counter(state, kLstm.cell_flops());
  set_thread_counters(state, threads);
}

void matmul_body(State& state, std::size_t n, int threads) {
  const LibraryThreads scope = row_threads(ThreadedLibrary::openblas, threads);
  overhead::sgemm_cpu_body(state, n, "threads openblas matmul");
  set_thread_counters(state, threads);
}

const char* twin_name(bool all) { return all ? "all" : "1"; }

}  // namespace
}  // namespace gapbench::threads

namespace gapbench {

GAPBENCH_FAMILY(threads) {
  using namespace threads;
  // Each op's twins are registered one after the other, so both meet the same other work.
  for (bool all : {false, true}) {
    add_cpu(conv::with_shape_axes(BenchName("threads", "onednn").axis("op", "conv"), kConv)
                .axis("lib_threads", twin_name(all)),
            [all](State& st) { conv_body(st, thread_count(all)); })
        ->Unit(benchmark::kMicrosecond);
  }
  for (bool all : {false, true}) {
    add_cpu(BenchName("threads", "onednn")
                .axis("op", "lstm_step")
                .axis("batch", static_cast<long long>(kLstm.batch))
                .axis("input", static_cast<long long>(kLstm.input))
                .axis("hidden", static_cast<long long>(kLstm.hidden))
                .axis("lib_threads", twin_name(all)),
            [all](State& st) { lstm_step_body(st, thread_count(all)); })
        ->Unit(benchmark::kMicrosecond);
  }
  for (std::size_t n : {128, 1024}) {
    for (bool all : {false, true}) {
      add_cpu(BenchName("threads", "openblas")
                  .axis("op", "matmul")
                  .axis("n", static_cast<long long>(n))
                  .axis("lib_threads", twin_name(all)),
              [n, all](State& st) { matmul_body(st, n, thread_count(all)); })
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace gapbench
