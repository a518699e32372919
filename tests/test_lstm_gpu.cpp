// kernels/lstm.cu, kernels/lstm_gpu.{h,cpp} and kernels/lstm_cudnn{.h,_gpu.cpp}: the pointwise
// kernel, the cuBLAS sequence and step (eager and captured as a CUDA graph) and cuDNN's sequence
// and one-step run (float32, tf32 and fp16, with the algorithm the frameworks choose: persistent
// kernels at small hidden sizes and for float16 at multiples of 128, STANDARD otherwise), each
// against the float64 reference on small random shapes (batch 1, hidden not a multiple of 32,
// one time step). Skipped with the reason where no GPU can run them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/base/cuda_check.h"
#include "kernels/base/cuda_graph.h"
#include "kernels/base/gpu_memory.h"
#include "kernels/lstm.h"
#include "kernels/lstm_cudnn.h"
#include "kernels/lstm_gpu.h"
#include "tests/gpu_test.h"

namespace gapbench::lstm {
namespace {

const Shape kShapes[] = {{1, 3, 5, 2},   {1, 7, 37, 1},   {3, 16, 37, 5}, {2, 5, 33, 1},
                         {5, 37, 37, 3}, {4, 50, 64, 10}, {1, 1, 1, 4},   {6, 70, 9, 7}};

Reference full_reference(const Problem& p) {
  return reference(p.shape, p.weights, p.x.data(), p.h0.data(), p.c0.data(),
                   sample_rows(p.shape.batch, p.shape.batch));
}

// Copies go on the test's (non-blocking) stream, ordered with its work; each waits.
void upload(float* dst, const std::vector<float>& src, std::size_t n, const Stream& stream) {
  GAPBENCH_CHECK(
      cudaMemcpyAsync(dst, src.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream.get()));
  stream.synchronize();
}

std::vector<float> download(const float* src, std::size_t n, const Stream& stream) {
  std::vector<float> host(n);
  GAPBENCH_CHECK(
      cudaMemcpyAsync(host.data(), src, n * sizeof(float), cudaMemcpyDeviceToHost, stream.get()));
  stream.synchronize();
  return host;
}

// NaN everywhere (kernels/base/gpu_memory.h's poison): an output never written fails.
void poison_floats(float* dst, std::size_t n, const Stream& stream) {
  poison(dst, n * sizeof(float), stream.get());
}

template <class Lstm>
void upload_inputs(Lstm& lstm, const Problem& p, const Shape& run_shape, const Stream& stream) {
  upload(lstm.x(), p.x, run_shape.x_size(), stream);
  upload(lstm.h0(), p.h0, run_shape.state_size(), stream);
  upload(lstm.c0(), p.c0, run_shape.state_size(), stream);
}

// ---- the pointwise kernel ----

TEST(LstmGpu, PointwiseKernelMatchesCpuPointwise) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  const Stream stream;
  // 1000 x 37: more elements than one block, hidden off the warp width; z over -30..30.
  const Shape s{1000, 1, 37, 1};
  const std::size_t G = s.gates();
  const auto gates = uniform_floats(s.batch * G, 3, 1, -30.0f, 30.0f);
  const auto xproj = uniform_floats(s.batch * G, 3, 2);
  const auto b = uniform_floats(G, 3, 3);
  const auto c_prev = uniform_floats(s.state_size(), 3, 4, -5.0f, 5.0f);
  std::vector<float> h_cpu(s.state_size()), c_cpu(s.state_size());
  pointwise(s, gates.data(), xproj.data(), b.data(), c_prev.data(), h_cpu.data(), c_cpu.data());

  DeviceBuffer<float> d_gates(gates.size()), d_xproj(xproj.size()), d_b(b.size());
  DeviceBuffer<float> d_c(s.state_size()), d_h(s.state_size());
  upload(d_gates.data(), gates, gates.size(), stream);
  upload(d_xproj.data(), xproj, xproj.size(), stream);
  upload(d_b.data(), b, b.size(), stream);
  upload(d_c.data(), c_prev, c_prev.size(), stream);
  poison_floats(d_h.data(), s.state_size(), stream);
  // c in place (c_prev aliases c), as the CPU variant allows.
  GAPBENCH_CHECK(pointwise_gpu(s.batch, s.hidden, d_gates.data(), d_xproj.data(), d_b.data(),
                               d_c.data(), d_h.data(), d_c.data(), stream.get()));
  const auto h = download(d_h.data(), s.state_size(), stream);
  const auto c = download(d_c.data(), s.state_size(), stream);
  // Different exp/tanh implementations: a few ulp of |c| <= 6.
  const Validation vh = validate("h", h, h_cpu, {16 * kFloat32Roundoff, 0.0});
  const Validation vc = validate("c", c, c_cpu, {64 * kFloat32Roundoff, 0.0});
  EXPECT_TRUE(vh.ok) << vh.message();
  EXPECT_TRUE(vc.ok) << vc.message();
}

// ---- cuBLAS: sequence and step, eager and as a graph ----

// The cuBLAS LSTM on every shape: the whole sequence, or one step after the input projection,
// run eagerly, or captured once as a CUDA graph (capturing runs nothing) and replayed twice (a
// second replay must give the same again). Outputs are poisoned before every run.
enum class Scope { sequence, one_step };
enum class Run { eager, graph };

void expect_cublas_matches_reference(Scope scope, Run mode, std::uint64_t seed) {
  const bool one_step = scope == Scope::one_step;
  const std::string what =
      std::string("cublas") + (mode == Run::graph ? "_graph" : "") + (one_step ? " step" : "");
  for (const Shape& s : kShapes) {
    const Stream stream;
    const Problem p(s, seed);
    CublasLstm lstm(s, p.weights, stream.get());
    upload_inputs(lstm, p, s, stream);
    if (one_step) lstm.enqueue_projection();
    stream.synchronize();  // a capture starts on an idle stream
    const auto enqueue = [&] { one_step ? lstm.enqueue_step(0) : lstm.enqueue_sequence(); };
    std::optional<CapturedGraph> graph;
    if (mode == Run::graph) graph.emplace(stream.get(), enqueue);
    const std::size_t h_size = one_step ? s.state_size() : s.h_seq_size();
    float* const c_last = lstm.c_after(one_step ? 0 : s.steps - 1);
    const Reference ref = full_reference(p);
    for (int run = 0; run < (graph ? 2 : 1); ++run) {
      poison_floats(lstm.h_seq(), h_size, stream);
      poison_floats(c_last, s.state_size(), stream);
      if (graph) {
        graph->launch(stream.get());
      } else {
        enqueue();
      }
      const auto h = download(lstm.h_seq(), h_size, stream);
      const auto c = download(c_last, s.state_size(), stream);
      const Validation v = one_step ? check_step(what, s, ref, h.data(), c.data())
                                    : check_sequence(what, s, ref, h.data(), c.data());
      EXPECT_TRUE(v.ok) << s.key() << " run " << run << ": " << v.message();
    }
  }
}

TEST(LstmGpu, CublasSequenceMatchesReference) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  expect_cublas_matches_reference(Scope::sequence, Run::eager, 31);
}

TEST(LstmGpu, CublasStepMatchesReferenceFirstStep) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  expect_cublas_matches_reference(Scope::one_step, Run::eager, 37);
}

TEST(LstmGpu, CublasGraphReplaysTheSequence) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  expect_cublas_matches_reference(Scope::sequence, Run::graph, 41);
}

TEST(LstmGpu, CublasGraphReplaysOneStep) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  expect_cublas_matches_reference(Scope::one_step, Run::graph, 43);
}

TEST(LstmGpu, CublasRejectsMismatchedWeights) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  const Shape s{2, 5, 33, 3};
  Problem p(s, 47);
  p.weights.w.pop_back();
  const Stream stream;
  EXPECT_THROW(CublasLstm(s, p.weights, stream.get()), std::invalid_argument);
}

// ---- cuDNN ----

#if GAPBENCH_WITH_CUDNN
// float32 (FMA math), tf32 (default math: TF32 tensor cores allowed) and fp16 (tensor-core
// math, fp16 data); an arithmetic this GPU lacks is said and left out.
const Arithmetic kCudnnArithmetics[] = {Arithmetic::float32, Arithmetic::tf32, Arithmetic::fp16};

// kShapes all have hidden <= 192, where the frameworks run PERSIST_STATIC_SMALL_H. These take
// the other algorithms too: STANDARD (hidden 200) and, for fp16 on a large GPU, PERSIST_STATIC
// (hidden 256, input 128, batch 8).
const Shape kAlgorithmShapes[] = {{4, 50, 64, 10}, {2, 20, 200, 3}, {8, 128, 256, 3}};

// One line naming where each buffer handed to cuDNN lies (all poisoned before they were filled),
// so that an initcheck report inside a cuDNN kernel can be placed: on memory gapbench gave cuDNN,
// or on cuDNN's own (ci/gapbench_ci/gpu_sanitizer.py reads this line).
void say_buffers(const CudnnLstm& lstm) {
  std::string line = "gapbench buffers for cuDNN:";
  for (const CudnnLstm::DeviceRange& b : lstm.device_buffers()) {
    char part[128];
    std::snprintf(part, sizeof part, " %s 0x%llx+%zu", b.name,
                  static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(b.data)),
                  b.bytes);
    line += part;
  }
  std::printf("%s\n", line.c_str());
}

GpuFacts this_gpu() {
  GpuFacts gpu;
  GAPBENCH_CHECK(cudaDeviceGetAttribute(&gpu.major, cudaDevAttrComputeCapabilityMajor, 0));
  GAPBENCH_CHECK(cudaDeviceGetAttribute(&gpu.minor, cudaDevAttrComputeCapabilityMinor, 0));
  GAPBENCH_CHECK(cudaDeviceGetAttribute(&gpu.multiprocessors, cudaDevAttrMultiProcessorCount, 0));
  return gpu;
}

TEST(LstmGpu, CudnnRunsTheFrameworksAlgorithmAndMatchesReference) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  const GpuFacts gpu = this_gpu();
  for (const Arithmetic arithmetic : kCudnnArithmetics) {
    if (arithmetic_unavailable_reason(arithmetic)) continue;
    for (const Shape& s : kAlgorithmShapes) {
      const Stream stream;
      const Problem p(s, 67);
      CudnnLstm lstm(s, p.weights, stream.get(), arithmetic);
      say_buffers(lstm);
      const RnnAlgorithm wanted = framework_rnn_algorithm(s, arithmetic, gpu);
      const std::string what = s.key() + " " + math_name(arithmetic) + " " + lstm.description();
      std::printf("%s\n", what.c_str());
      // The frameworks' algorithm, or STANDARD with cuDNN's refusal named in the description.
      if (lstm.algorithm() != wanted) {
        EXPECT_EQ(lstm.algorithm(), RnnAlgorithm::standard) << what;
        EXPECT_NE(lstm.description().find(rnn_algorithm_name(wanted)), std::string::npos) << what;
      }
      lstm.set_inputs(p.x.data(), p.h0.data(), p.c0.data());
      lstm.poison_outputs();
      lstm.enqueue();
      const CudnnLstm::Outputs out = lstm.outputs();
      const Validation v = check_sequence("cudnn", s, full_reference(p), out.h_seq.data(),
                                          out.c_last.data(), lstm.precision());
      EXPECT_TRUE(v.ok) << what << ": " << v.message();
      // A second run of the same descriptors gives the same answer (a persistent kernel keeps
      // no state between calls).
      lstm.poison_outputs();
      lstm.enqueue();
      EXPECT_EQ(lstm.outputs().h_seq, out.h_seq) << what;
    }
  }
}

TEST(LstmGpu, CudnnTf32StoresFloat32AndSaysItsMath) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  if (const auto reason = arithmetic_unavailable_reason(Arithmetic::tf32)) GTEST_SKIP() << *reason;
  const Stream stream;
  const Problem p(Shape{3, 16, 37, 5}, 71);
  const CudnnLstm tf32(p.shape, p.weights, stream.get(), Arithmetic::tf32);
  say_buffers(tf32);
  EXPECT_EQ(tf32.precision().h_stored, Arithmetic::float32);
  EXPECT_EQ(tf32.precision().c_stored, Arithmetic::float32);
  EXPECT_NE(tf32.description().find("math:default"), std::string::npos) << tf32.description();
  const CudnnLstm fp32(p.shape, p.weights, stream.get(), Arithmetic::float32);
  say_buffers(fp32);
  EXPECT_NE(fp32.description().find("math:fma"), std::string::npos) << fp32.description();
}

TEST(LstmGpu, CudnnSequenceMatchesReference) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  for (const Arithmetic arithmetic : kCudnnArithmetics) {
    if (const auto reason = arithmetic_unavailable_reason(arithmetic)) {
      std::printf("skipped %s: %s\n", math_name(arithmetic), reason->c_str());
      continue;
    }
    for (const Shape& s : kShapes) {
      const Stream stream;
      const Problem p(s, 53);
      CudnnLstm lstm(s, p.weights, stream.get(), arithmetic);
      say_buffers(lstm);
      lstm.set_inputs(p.x.data(), p.h0.data(), p.c0.data());
      lstm.poison_outputs();
      lstm.enqueue();
      const CudnnLstm::Outputs out = lstm.outputs();
      const std::string what = s.key() + " " + math_name(arithmetic);
      const Validation v = check_sequence("cudnn", s, full_reference(p), out.h_seq.data(),
                                          out.c_last.data(), lstm.precision());
      EXPECT_TRUE(v.ok) << what << ": " << v.message();
      // cuDNN's own last h is the sequence's last h_t.
      const std::vector<float> last(out.h_seq.end() - static_cast<std::ptrdiff_t>(s.state_size()),
                                    out.h_seq.end());
      EXPECT_EQ(out.h_last, last) << what;
    }
  }
}

TEST(LstmGpu, CudnnOneStepMatchesReferenceFirstStep) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  for (const Arithmetic arithmetic : kCudnnArithmetics) {
    if (arithmetic_unavailable_reason(arithmetic)) continue;
    for (const Shape& s : kShapes) {
      const Stream stream;
      const Problem p(s, 59);
      CudnnLstm lstm(s.one_step(), p.weights, stream.get(), arithmetic);
      say_buffers(lstm);
      lstm.set_inputs(p.x.data(), p.h0.data(), p.c0.data());
      lstm.poison_outputs();
      lstm.enqueue();
      const CudnnLstm::Outputs out = lstm.outputs();
      const Validation v = check_step("cudnn step", s, full_reference(p), out.h_last.data(),
                                      out.c_last.data(), lstm.precision());
      EXPECT_TRUE(v.ok) << s.key() << " " << math_name(arithmetic) << ": " << v.message();
    }
  }
}

// Host only: each arithmetic's RNN math type, as PyTorch sets it. float32 is FMA: cuDNN's
// default math would let the plain (float32) rows use TF32 on compute capability 8.0 and later.
TEST(LstmGpu, CudnnMathTypeOfEachArithmetic) {
  EXPECT_EQ(cudnn_rnn_math_type(Arithmetic::float32), CUDNN_FMA_MATH);
  EXPECT_EQ(cudnn_rnn_math_type(Arithmetic::tf32), CUDNN_DEFAULT_MATH);
  EXPECT_EQ(cudnn_rnn_math_type(Arithmetic::fp16), CUDNN_TENSOR_OP_MATH);
  EXPECT_THROW(cudnn_rnn_math_type(Arithmetic::bf16), std::invalid_argument);
}

TEST(LstmGpu, CudnnRejectsArithmeticsItHasNoVariantFor) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  const Problem p(Shape{2, 5, 8, 2}, 1);
  const Stream stream;
  EXPECT_THROW(CudnnLstm(p.shape, p.weights, stream.get(), Arithmetic::bf16),
               std::invalid_argument);
}

TEST(LstmGpu, CudnnRejectsMismatchedWeights) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  const Shape s{2, 5, 33, 3};
  Problem p(s, 61);
  p.weights.b.push_back(0.0f);
  const Stream stream;
  EXPECT_THROW(CudnnLstm(s, p.weights, stream.get()), std::invalid_argument);
}
#endif

}  // namespace
}  // namespace gapbench::lstm
