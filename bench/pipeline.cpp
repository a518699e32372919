// Family `pipeline`: a training loop's input pipeline with and without prefetch.
//
// Names: pipeline/<variant>/<cpu|gpu>/produce_ms:<p>/consume_ms:<c>/depth:<d>/workers:<w>
//   variant  none      produce then consume, one batch after the other (depth:0/workers:1: no
//                      queue, the consumer's own thread produces)
//            prefetch  one producer thread ahead of the consumer, `depth` ready batches queued
//            parallel  `workers` producer threads feeding the queue of `depth`
//   produce_ms, consume_ms  nominal cost of one batch in each stage; a set-up calibrates the
//            images per batch and the consumer's layer repeats to them on this machine
// Producer: decode a batch of 64 x 64 x 3 images from their stored form (kernels/image_codec.h)
//   and run the preprocess family's normalize + random brightness + flip on each.
// Consumer: on the CPU, OpenBLAS GEMMs on the batch (bench/pipeline.h: StepShape), on one thread:
//   OpenBLAS's own threads would compete with the producer's for the cores (the number of
//   threads is restored after each benchmark, for the families that use them all). On the GPU
//   (bench/pipeline_gpu.cpp): the batch's copy to the device, then cuBLAS SGEMMs.
// Timing: CPU real time; GPU manual time holding host wall time around whole batches.
// Counters: items_per_second (batches/s); idle_fraction (the consumer's share of time spent
//   waiting for input; on the GPU, the share of wall time its compute stream did not compute);
//   ideal_items_per_second = min(workers / t_produce, 1 / t_consume, cores / t_cpu), each stage
//   measured alone on the benchmark's thread just before and after the timed run (AloneSamples;
//   the GPU consumer's steady-state cost at set-up): `workers` producers in perfect overlap with
//   the consumer on the `cores` this process may use (its CPU affinity), t_cpu being the CPU
//   time of one batch: t_produce + t_consume on the CPU, where the producers and the consumer
//   are workers + 1 busy threads (Colab's 2 cores hold 2 producers and a consumer only at
//   2 / (t_produce + t_consume)); t_produce on the GPU, whose consumer thread sleeps while the
//   device computes (fixtures/pipeline.h: ideal_items_per_second); cores (that count, from
//   which the report tells which bound limits); produce_ms_measured, consume_ms_measured (those
//   costs, which the report holds against the nominal produce_ms and consume_ms);
//   images_per_batch, gemm_repeats (what the calibration chose).
#include "bench/pipeline.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "fixtures/machine.h"
#include "fixtures/setup_cache.h"
#include "kernels/base/data.h"
#include "kernels/gemm.h"
#include "kernels/library_threads.h"
#include "kernels/preprocess.h"

namespace gapbench::pipeline {

namespace {

// Stream ids ("pipeaugm", "pipeweig"): independent of the other families' data.
constexpr std::uint64_t kAugmentationStream = 0x7069706561756775ull;
constexpr std::uint64_t kWeightStream = 0x7069706577656967ull;
constexpr std::size_t kCheckSamples = 256;

preprocess::ImageShape batch_shape(std::size_t n) { return {n, kImage.h, kImage.w, kImage.c}; }

// The batch's augmentation: a function of the run's seed and the batch index only, so the
// reference can redraw it.
preprocess::Augmentation augmentation_of(std::uint64_t index, std::size_t n) {
  return preprocess::random_augmentation(n, element_hash(run_seed(), kAugmentationStream, index));
}

std::size_t dataset_image(std::uint64_t index, std::size_t n, std::size_t j) {
  return static_cast<std::size_t>((index * n + j) % kDatasetImages);
}

std::string format_ms(double ms) {
  std::ostringstream s;
  s << ms;  // 0.5, 1, 16
  return s.str();
}

// The CPU consumer: the step of StepShape with OpenBLAS.
class CpuConsumer {
 public:
  explicit CpuConsumer(const StepShape& s)
      : shape_(s),
        w1_(step_weights(s.features, s.hidden, 1)),
        w2_(step_weights(s.hidden, s.hidden, 2)),
        f_(s.rows * s.hidden),
        y_(s.rows * s.hidden) {}
  void set_repeats(std::size_t r) { repeats_ = r; }
  std::size_t repeats() const { return repeats_; }

  void step(const float* batch) {
    gemm::sgemm_cpu(batch, w1_.data(), f_.data(), shape_.rows, shape_.hidden, shape_.features);
    for (std::size_t r = 0; r < repeats_; ++r) {
      gemm::sgemm_cpu(f_.data(), w2_.data(), y_.data(), shape_.rows, shape_.hidden, shape_.hidden);
    }
  }
  // The last step's outputs (for a step with at least one repeat).
  Validation check(const float* batch) const {
    return check_step(shape_, batch, w1_.data(), f_.data(), w2_.data(), y_.data());
  }

 private:
  StepShape shape_;
  std::vector<float> w1_, w2_, f_, y_;
  std::size_t repeats_ = 0;
};

// Everything one case needs on the CPU, calibrated once and shared by its variants.
struct CpuSetup {
  explicit CpuSetup(const Case& c) : consumer(kCpuStep) {
    const Calibrated p = calibrate_producer(producer, c.produce_ms);
    std::vector<float> batch(producer.floats());
    std::vector<std::uint8_t> scratch(kImage.bytes());
    producer.produce(0, batch.data(), scratch.data());
    const Calibrated r =
        calibrate_count(c.consume_ms * 1e-3, 0, 16, 1, 100000, [&](std::size_t repeats) {
          consumer.set_repeats(repeats);
          return median_seconds(5, [&] { consumer.step(batch.data()); });
        });
    consumer.set_repeats(r.count);  // at least 1: validation checks a Y
    plan = {producer.images(), consumer.repeats(), p.seconds, r.seconds};
  }
  Producer producer;
  CpuConsumer consumer;
  Plan plan;
};

// The batch buffers of one variant: one per pipeline slot.
struct CpuSlots {
  CpuSlots(std::size_t floats, std::size_t slots)
      : out(slots, std::vector<float>(floats)),
        scratch(slots, std::vector<std::uint8_t>(kImage.bytes())) {}
  std::vector<std::vector<float>> out;
  std::vector<std::vector<std::uint8_t>> scratch;
};

void bench_cpu(State& state, const Case& c, const Config& config, std::size_t batches) {
  const LibraryThreads one_thread(ThreadedLibrary::openblas, 1);
  CpuSetup& setup = cached<CpuSetup>(c.key(Device::cpu), c);
  CpuSlots& slots =
      cached<CpuSlots>(c.key(Device::cpu) + "/slots:" + std::to_string(config.slots()),
                       setup.producer.floats(), config.slots());
  AloneSamples alone;
  std::uint64_t sample_index = 0;
  auto sample_alone = [&] {
    alone.add(
        kAloneRuns,
        [&] {
          setup.producer.produce(sample_index++, slots.out[0].data(), slots.scratch[0].data());
        },
        [&] { setup.consumer.step(slots.out[0].data()); });
  };
  sample_alone();
  double idle = 0.0;
  {
    Pipeline pipe(config, [&](std::uint64_t index, std::size_t slot) {
      setup.producer.produce(index, slots.out[slot].data(), slots.scratch[slot].data());
    });
    auto consume = [&](std::uint64_t, std::size_t slot) {
      setup.consumer.step(slots.out[slot].data());
    };
    // The first batch, untimed: checks the batch that came through the queue and the step on
    // it, and lets the queue reach its steady state.
    pipe.consume_next([&](std::uint64_t index, std::size_t slot) {
      consume(index, slot);
      validate_once([&] {
        const Validation v = setup.producer.check(index, slots.out[slot].data());
        return v.ok ? setup.consumer.check(slots.out[slot].data()) : v;
      });
    });
    pipe.reset_stats();
    for (auto _ : state) {
      for (std::size_t b = 0; b < batches; ++b) pipe.consume_next(consume);
    }
    idle = pipe.stats().idle_fraction();
  }  // producers joined: the stages run alone again
  sample_alone();
  set_pipeline_counters(state, batches, idle, alone.apply(setup.plan), config.workers);
}

}  // namespace

std::string Case::key(Device device) const {
  return std::string(device == Device::cpu ? "cpu" : "gpu") +
         "/produce_ms:" + format_ms(produce_ms) + "/consume_ms:" + format_ms(consume_ms);
}

Producer::Producer()
    : originals_(codec::synthetic_images(kDatasetImages, kImage, run_seed())),
      stored_(codec::encode(originals_.data(), kDatasetImages, kImage)) {}

void Producer::set_images(std::size_t n) { images_ = std::clamp(n, kMinImages, kMaxImages); }

void Producer::produce(std::uint64_t index, float* out, std::uint8_t* scratch) const {
  const preprocess::Augmentation aug = augmentation_of(index, images_);
  const preprocess::ImageShape one = batch_shape(1);
  // One image at a time, decoded into a buffer that stays in L1 and preprocessed from there,
  // as a per-element map(decode, augment) does.
  for (std::size_t j = 0; j < images_; ++j) {
    codec::decode(stored_, dataset_image(index, images_, j), scratch);
    preprocess::image_vectorized(scratch, one, &aug.delta[j], &aug.flip[j],
                                 out + j * kImage.bytes());
  }
}

Validation Producer::check(std::uint64_t index, const float* out) const {
  const std::size_t n = images_;
  std::vector<std::uint8_t> raw(n * kImage.bytes());
  for (std::size_t j = 0; j < n; ++j) {
    const std::uint8_t* src = originals_.data() + dataset_image(index, n, j) * kImage.bytes();
    std::copy(src, src + kImage.bytes(), raw.begin() + j * kImage.bytes());
  }
  const preprocess::Augmentation aug = augmentation_of(index, n);
  std::vector<double> ref(raw.size());
  preprocess::image_reference(raw.data(), batch_shape(n), aug.delta.data(), aug.flip.data(),
                              ref.data());
  return validate("decode+preprocess", out, ref.data(), ref.size(),
                  {preprocess::kImageAtol, preprocess::kImageRtol});
}

void AloneSamples::add(int runs, const std::function<void()>& produce,
                       const std::function<void()>& consume) {
  // Stage by stage, after one untimed run: interleaved, each stage would evict the other's
  // data from the caches, which in the pipeline each keeps warm on its own core.
  auto sample = [runs](const std::function<void()>& stage, std::vector<double>& into) {
    if (!stage) return;
    stage();
    for (int i = 0; i < runs; ++i) into.push_back(median_seconds(1, stage));
  };
  sample(produce, produce_);
  sample(consume, consume_);
}

Plan AloneSamples::apply(Plan plan) const {
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  if (!produce_.empty()) plan.produce_seconds = median(produce_);
  if (!consume_.empty()) plan.consume_seconds = median(consume_);
  return plan;
}

Calibrated calibrate_producer(Producer& producer, double produce_ms) {
  std::vector<float> out;
  std::vector<std::uint8_t> scratch(kImage.bytes());
  const Calibrated c = calibrate_count(
      produce_ms * 1e-3, kMinImages, 16, kMinImages, kMaxImages, [&](std::size_t n) {
        producer.set_images(n);
        out.resize(producer.floats());
        std::uint64_t index = 0;
        return median_seconds(5, [&] { producer.produce(index++, out.data(), scratch.data()); });
      });
  producer.set_images(c.count);
  return c;
}

Validation check_step(const StepShape& s, const float* x, const float* w1, const float* f,
                      const float* w2, const float* y) {
  const Validation first = gemm::validate_sampled("step F = X W1", f, x, w1, s.rows, s.hidden,
                                                  s.features, kCheckSamples);
  if (!first.ok) return first;
  return gemm::validate_sampled("step Y = F W2", y, f, w2, s.rows, s.hidden, s.hidden,
                                kCheckSamples);
}

std::vector<float> step_weights(std::size_t rows, std::size_t cols, std::uint64_t stream) {
  // Uniform in +-1/sqrt(rows): each output is a sum of `rows` terms of O(1) inputs.
  const float scale = 1.0f / std::sqrt(static_cast<float>(rows));
  return uniform_floats(rows * cols, run_seed(), kWeightStream + stream, -scale, scale);
}

std::size_t batches_per_iteration(const Profile& profile) { return profile.full() ? 8 : 4; }

void set_pipeline_counters(State& state, std::size_t batches, double idle_fraction,
                           const Plan& plan, std::size_t workers) {
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * batches));
  state.counters["idle_fraction"] = idle_fraction;
  const std::size_t cores = usable_cores();
  state.counters["ideal_items_per_second"] = ideal_items_per_second(
      plan.produce_seconds, plan.consume_seconds, workers, cores, plan.consumer);
  state.counters["cores"] = static_cast<double>(cores);
  state.counters["produce_ms_measured"] = plan.produce_seconds * 1e3;
  state.counters["consume_ms_measured"] = plan.consume_seconds * 1e3;
  state.counters["images_per_batch"] = static_cast<double>(plan.images);
  state.counters["gemm_repeats"] = static_cast<double>(plan.repeats);
}

}  // namespace gapbench::pipeline

namespace gapbench {

GAPBENCH_FAMILY(pipeline) {
  using pipeline::Case;
  using pipeline::Config;
  using pipeline::Mode;
  // Quick: loading dominates, compute dominates, the two balance. Full: a sweep of the
  // producer's cost against three consumer costs.
  std::vector<Case> cases;
  if (profile.full()) {
    for (double consume : {1.0, 4.0, 16.0})
      for (double produce : {0.5, 1.0, 2.0, 4.0, 8.0, 16.0}) cases.push_back({produce, consume});
  } else {
    cases = {{4.0, 1.0}, {1.0, 4.0}, {2.0, 2.0}};
  }
  const std::vector<Config> configs =
      profile.full()
          ? std::vector<Config>{{Mode::none, 0, 1},     {Mode::prefetch, 1, 1},
                                {Mode::prefetch, 2, 1}, {Mode::prefetch, 4, 1},
                                {Mode::parallel, 2, 2}, {Mode::parallel, 2, 4}}
          : std::vector<Config>{{Mode::none, 0, 1}, {Mode::prefetch, 2, 1}, {Mode::parallel, 2, 2}};
  const std::size_t batches = pipeline::batches_per_iteration(profile);
  for (const Case& c : cases) {
    for (const Config& config : configs) {
      const BenchName name = BenchName("pipeline", pipeline::name_of(config.mode))
                                 .axis("produce_ms", pipeline::format_ms(c.produce_ms))
                                 .axis("consume_ms", pipeline::format_ms(c.consume_ms))
                                 .axis("depth", static_cast<long long>(config.depth))
                                 .axis("workers", static_cast<long long>(config.workers));
      add_cpu(name, [=](State& st) { pipeline::bench_cpu(st, c, config, batches); });
      add_gpu(name, GAPBENCH_GPU_BODY(pipeline::pipeline_gpu(c, config, batches)));
    }
  }
}

}  // namespace gapbench
