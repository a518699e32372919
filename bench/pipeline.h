// Family `pipeline`: what the CPU and GPU variants share. The producer (decode + preprocess of a
// batch of stored images) is the same on both devices; a set-up calibrates it, and the consumer,
// to the case's nominal milliseconds on this machine, and measures each alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fixtures/harness.h"
#include "fixtures/pipeline.h"
#include "kernels/base/validate.h"
#include "kernels/image_codec.h"

namespace gapbench::pipeline {

// One point of the sweep: the nominal cost of producing and of consuming one batch.
struct Case {
  double produce_ms = 0.0, consume_ms = 0.0;
  std::string key(Device device) const;
};

// The stored dataset: 64 x 64 x 3 images (downsampled-ImageNet sized, so one image is a small
// step of producer cost), a few dozen distinct ones that batches cycle through.
inline constexpr codec::ImageFormat kImage{64, 64, 3};
inline constexpr std::size_t kDatasetImages = 64;

// The consumer's step on a batch: F = X · W1, where X is the batch's first rows x features
// floats, then `repeats` times Y = F · W2 (hidden x hidden), a stand-in for a model's layers
// whose cost is its own axis, not the loader's. The GPU's layers are wider, so that one cuBLAS
// call is real work rather than one launch.
struct StepShape {
  std::size_t rows, features, hidden;
};
inline constexpr StepShape kCpuStep{64, 256, 256};
inline constexpr StepShape kGpuStep{64, 256, 4096};
// X must fit in a batch: 64 x 256 floats need two images.
inline constexpr std::size_t kMinImages = 2;
inline constexpr std::size_t kMaxImages = 4096;

// Decodes and preprocesses batches. Batch `index` holds images index*n .. index*n + n - 1 of
// the dataset (cyclically), with the preprocess family's random brightness and flip drawn for
// that index. Thread-safe: produce() only reads shared state.
class Producer {
 public:
  Producer();
  void set_images(std::size_t n);
  std::size_t images() const { return images_; }
  std::size_t floats() const { return images_ * kImage.bytes(); }  // one batch's output

  // Fills out[0 .. floats()) for batch `index`; `scratch` holds one decoded image.
  void produce(std::uint64_t index, float* out, std::uint8_t* scratch) const;
  // The output against the float64 reference of decode + preprocess (decoding is lossless, so
  // the reference starts from the original images).
  Validation check(std::uint64_t index, const float* out) const;

 private:
  std::vector<std::uint8_t> originals_;
  codec::EncodedImages stored_;
  std::size_t images_ = kMinImages;
};

// What a set-up chose (work per batch) and measured (each stage alone, on the benchmark's thread).
struct Plan {
  std::size_t images = 0;   // per batch, for the producer's nominal cost
  std::size_t repeats = 0;  // Y = F · W2 per step, for the consumer's nominal cost
  double produce_seconds = 0.0, consume_seconds = 0.0;
  ConsumerCost consumer = ConsumerCost::cpu;  // the GPU step's cost is the device's
};

// Each stage's cost alone, sampled on the benchmark's thread with no pipeline running: just
// before a timed run and just after it. A shared machine's speed drifts (other jobs, a VM's
// steal time), so the ideal beside a run comes from the same minutes as the run.
class AloneSamples {
 public:
  // `runs` samples of each stage given, after a warm-up run of it (an empty function: that
  // stage keeps its set-up cost).
  void add(int runs, const std::function<void()>& produce, const std::function<void()>& consume);
  // The plan with its stage costs replaced by the samples' medians (unchanged without samples).
  Plan apply(Plan plan) const;

 private:
  std::vector<double> produce_, consume_;
};

// Samples of each stage before and after a timed run.
inline constexpr int kAloneRuns = 3;

// Sets the producer's images per batch for `produce_ms` here; returns the measured cost.
Calibrated calibrate_producer(Producer& producer, double produce_ms);

// F = X · W1 then Y = F · W2 as validated against the float64 reference (sampled, with the
// rounding bound of kernels/gemm.h); the first failure of the two, or the second's pass.
Validation check_step(const StepShape& shape, const float* x, const float* w1, const float* f,
                      const float* w2, const float* y);

// The weights of a step: seeded, scaled so outputs stay O(1) whatever the width.
std::vector<float> step_weights(std::size_t rows, std::size_t cols, std::uint64_t stream);

// Batches each timed iteration consumes, after one untimed batch that validates and fills.
std::size_t batches_per_iteration(const Profile& profile);

// items_per_second (batches), idle_fraction, the ideal on the cores this process may use, those
// cores and the measured stage costs.
void set_pipeline_counters(State& state, std::size_t batches, double idle_fraction,
                           const Plan& plan, std::size_t workers);

// GPU body, defined in bench/pipeline_gpu.cpp (CUDA builds only; see GAPBENCH_GPU_BODY).
Body pipeline_gpu(Case c, Config config, std::size_t batches);

}  // namespace gapbench::pipeline
