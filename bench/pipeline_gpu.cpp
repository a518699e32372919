// Family `pipeline`, GPU variants (built only with CUDA). The producer is the CPU one; the
// consumer copies each batch to the device and runs the step of kGpuStep with cuBLAS.
//
//   none               as naive training code: the batch sits in pageable memory, is copied
//                      with a synchronous copy (cudaMemcpyAsync then a stream sync, as a
//                      framework's blocking .to(device) does), and the step is waited for.
//   prefetch, parallel the producers fill pinned staging buffers; the copy runs on its own
//                      stream into one of two device buffers (double buffering) while the
//                      previous batch computes on another stream, ordered by events.
//
// Time: host wall time around whole batches (manual time), each iteration ending when its last
// batch's step is done. idle_fraction is the share of that wall time the compute stream was not
// computing (event-timed), whatever kept it waiting: the producer or the copy.
//
// Every wait the consumer makes sleeps (events made with cudaEventBlockingSync, no stream
// synchronize): by default a waiting host thread spins, and on a machine with few cores (Colab
// has two) a spinning consumer takes the core the producers need, so prefetch and parallel
// would measure that contention instead of overlap. (`none`'s pageable copy waits inside the
// driver as the driver chooses: that is the naive loop's cost, as a framework pays it.) So the
// ideal leaves the cores to the producers: its core bound is cores / t_produce
// (ConsumerCost::device).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "bench/pipeline.h"
#include "fixtures/device_probe.h"
#include "fixtures/gpu_timer.h"
#include "fixtures/setup_cache.h"
#include "kernels/base/cuda_libraries.h"
#include "kernels/base/gpu_memory.h"

namespace gapbench::pipeline {
namespace {

// Events whose synchronize sleeps instead of spinning (see the top of this file).
constexpr unsigned kSleep = cudaEventBlockingSync;

class GpuConsumer {
 public:
  GpuConsumer(std::size_t batch_floats, const StepShape& shape)
      : shape_(shape),
        batch_floats_(reserve(batch_floats, shape)),
        w1_host_(step_weights(shape.features, shape.hidden, 1)),
        w2_host_(step_weights(shape.hidden, shape.hidden, 2)),
        blas_(compute_.get()),
        w1_(w1_host_.size()),
        w2_(w2_host_.size()),
        f_(shape.rows * shape.hidden),
        y_(shape.rows * shape.hidden) {
    for (auto& b : batch_) b = DeviceBuffer<float>(batch_floats_);
    GAPBENCH_CHECK(cudaMemcpyAsync(w1_.data(), w1_host_.data(), w1_.bytes(), cudaMemcpyHostToDevice,
                                   compute_.get()));
    GAPBENCH_CHECK(cudaMemcpyAsync(w2_.data(), w2_host_.data(), w2_.bytes(), cudaMemcpyHostToDevice,
                                   compute_.get()));
    compute_.synchronize();
  }

  void set_repeats(std::size_t r) { repeats_ = r; }
  std::size_t repeats() const { return repeats_; }

  // prefetch and parallel: `pinned` (a page-locked batch) is copied on the copy stream while
  // the previous batch computes. Returns once the copy is done, so the caller may refill it.
  void step_overlapped(const float* pinned) {
    const std::size_t s = next_slot_;
    next_slot_ ^= 1;
    if (pending_[s]) {
      // Batch i-2 computed from this device buffer: the copy waits for it on the device. The
      // host waits for it too, to read its time; batch i-1's step is queued behind it, so the
      // compute stream stays busy meanwhile.
      GAPBENCH_CHECK(cudaStreamWaitEvent(copy_.get(), computed_[s].get(), 0));
      collect(s);
    }
    GAPBENCH_CHECK(
        cudaMemcpyAsync(batch_[s].data(), pinned, bytes(), cudaMemcpyHostToDevice, copy_.get()));
    copied_[s].record(copy_.get());
    GAPBENCH_CHECK(cudaStreamWaitEvent(compute_.get(), copied_[s].get(), 0));
    enqueue_step(s);
    copied_[s].synchronize();
  }

  // none: a pageable batch, a blocking copy, the step, and a wait for its result.
  void step_naive(const float* pageable) {
    finish();  // nothing of an overlapped step may still use device buffer 0
    GAPBENCH_CHECK(cudaMemcpyAsync(batch_[0].data(), pageable, bytes(), cudaMemcpyHostToDevice,
                                   compute_.get()));
    drain(compute_);
    enqueue_step(0);
    finish();
  }

  // Waits for everything queued and counts the compute time not yet counted.
  void finish() {
    drain(copy_);
    drain(compute_);
    for (std::size_t s = 0; s < 2; ++s) {
      if (pending_[s]) collect(s);
    }
  }

  // Seconds the compute stream spent on steps since the last call.
  double take_compute_seconds() { return std::exchange(compute_seconds_, 0.0); }

  // One step's compute alone, on what device buffer 0 holds (for calibration).
  double time_step() {
    finish();
    take_compute_seconds();
    enqueue_step(0);
    finish();
    return take_compute_seconds();
  }

  // The last step's outputs against the reference, `batch` being its input (after finish()).
  Validation check(const float* batch) {
    std::vector<float> f(f_.size()), y(y_.size());
    GAPBENCH_CHECK(
        cudaMemcpyAsync(f.data(), f_.data(), f_.bytes(), cudaMemcpyDeviceToHost, compute_.get()));
    GAPBENCH_CHECK(
        cudaMemcpyAsync(y.data(), y_.data(), y_.bytes(), cudaMemcpyDeviceToHost, compute_.get()));
    drain(compute_);
    return check_step(shape_, batch, w1_host_.data(), f.data(), w2_host_.data(), y.data());
  }

 private:
  static std::size_t reserve(std::size_t batch_floats, const StepShape& s) {
    const std::size_t floats =
        2 * batch_floats + s.features * s.hidden + s.hidden * s.hidden + 2 * s.rows * s.hidden;
    require_free_device_memory(floats * sizeof(float));
    return batch_floats;
  }
  std::size_t bytes() const { return batch_floats_ * sizeof(float); }

  // Waits, sleeping, until everything queued on `stream` so far is done.
  void drain(const Stream& stream) {
    drained_.record(stream.get());
    drained_.synchronize();
  }

  // F = X · W1 then `repeats` times Y = F · W2 on device buffer s, on the compute stream.
  // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: the right-hand matrix goes first.
  void enqueue_step(std::size_t s) {
    const int m = static_cast<int>(shape_.rows), d = static_cast<int>(shape_.features),
              h = static_cast<int>(shape_.hidden);
    const float one = 1.0f, zero = 0.0f;
    started_[s].record(compute_.get());
    GAPBENCH_CHECK(cublasSgemm(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, h, m, d, &one, w1_.data(), h,
                               batch_[s].data(), d, &zero, f_.data(), h));
    for (std::size_t r = 0; r < repeats_; ++r) {
      GAPBENCH_CHECK(cublasSgemm(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, h, m, h, &one, w2_.data(),
                                 h, f_.data(), h, &zero, y_.data(), h));
    }
    computed_[s].record(compute_.get());
    pending_[s] = true;
  }

  void collect(std::size_t s) {
    compute_seconds_ += elapsed_seconds(started_[s], computed_[s]);  // waits for computed_[s]
    pending_[s] = false;
  }

  StepShape shape_;
  std::size_t batch_floats_;
  std::vector<float> w1_host_, w2_host_;
  Stream copy_, compute_;
  CublasHandle blas_;  // bound to compute_
  DeviceBuffer<float> batch_[2];
  DeviceBuffer<float> w1_, w2_, f_, y_;
  Event copied_[2] = {Event(kSleep), Event(kSleep)};
  Event started_[2] = {Event(kSleep), Event(kSleep)};
  Event computed_[2] = {Event(kSleep), Event(kSleep)};
  Event drained_{kSleep};
  bool pending_[2] = {false, false};  // a step on buffer s whose time is not yet counted
  std::size_t next_slot_ = 0;
  std::size_t repeats_ = 1;
  double compute_seconds_ = 0.0;
};

// Everything one case needs on the GPU, calibrated once and shared by its variants.
struct GpuSetup {
  explicit GpuSetup(const Case& c) {
    const Calibrated p = calibrate_producer(producer, c.produce_ms);
    consumer = std::make_unique<GpuConsumer>(producer.floats(), kGpuStep);
    // Two pinned batches, to run the consumer alone the way prefetch runs it.
    for (auto& b : staged) b = PinnedBuffer<float>(producer.floats());
    for (std::size_t i = 0; i < 2; ++i) producer.produce(i, staged[i].data(), scratch.data());
    consumer->step_overlapped(staged[0].data());
    consumer->finish();
    // Repeats from the step's compute time (the copy overlaps it, when it is shorter)...
    const Calibrated r =
        calibrate_count(c.consume_ms * 1e-3, 0, 16, 1, 100000, [&](std::size_t repeats) {
          consumer->set_repeats(repeats);
          return median_of(3, [&] { return consumer->time_step(); });
        });
    consumer->set_repeats(r.count);
    // ...and the consumer's cost alone as prefetch sees it: copies overlapping steps, measured
    // in steady state after a warm-up.
    constexpr int kWarm = 2, kBatches = 6;
    auto run = [&](int n) {
      for (int i = 0; i < n; ++i) consumer->step_overlapped(staged[i % 2].data());
      consumer->finish();
    };
    run(kWarm);
    const double consume_seconds = wall_seconds([&] { run(kBatches); }) / kBatches;
    consumer->take_compute_seconds();
    plan = {producer.images(), consumer->repeats(), p.seconds, consume_seconds,
            ConsumerCost::device};
  }
  Producer producer;
  std::unique_ptr<GpuConsumer> consumer;
  PinnedBuffer<float> staged[2];
  std::vector<std::uint8_t> scratch = std::vector<std::uint8_t>(kImage.bytes());
  Plan plan;
};

// The batch buffers of one variant: pinned for prefetch and parallel, pageable for none.
class GpuSlots {
 public:
  GpuSlots(std::size_t floats, std::size_t slots, bool pinned) {
    for (std::size_t s = 0; s < slots; ++s) {
      if (pinned) {
        pinned_.emplace_back(floats);
      } else {
        pageable_.emplace_back(floats);
      }
      scratch_.emplace_back(kImage.bytes());
    }
  }
  float* out(std::size_t s) { return pinned_.empty() ? pageable_[s].data() : pinned_[s].data(); }
  std::uint8_t* scratch(std::size_t s) { return scratch_[s].data(); }

 private:
  std::vector<PinnedBuffer<float>> pinned_;
  std::vector<std::vector<float>> pageable_;
  std::vector<std::vector<std::uint8_t>> scratch_;
};

void bench_gpu(State& state, const Case& c, const Config& config, std::size_t batches) {
  GpuSetup& setup = cached<GpuSetup>(c.key(Device::gpu), c);
  const bool naive = config.mode == Mode::none;
  GpuSlots& slots =
      cached<GpuSlots>(c.key(Device::gpu) + "/slots:" + std::to_string(config.slots()) +
                           (naive ? "/pageable" : "/pinned"),
                       setup.producer.floats(), config.slots(), !naive);
  GpuConsumer& consumer = *setup.consumer;
  consumer.finish();
  // The producer alone around the run (its cost is host time, which drifts on a shared
  // machine); the consumer's steady-state cost is device time, measured at set-up.
  AloneSamples alone;
  std::uint64_t sample_index = 0;
  auto sample_alone = [&] {
    alone.add(kAloneRuns,
              [&] {
                setup.producer.produce(sample_index++, setup.staged[0].data(),
                                       setup.scratch.data());
              },
              {});
  };
  sample_alone();
  double wall = 0.0, computing = 0.0;
  {
    Pipeline pipe(config, [&](std::uint64_t index, std::size_t slot) {
      setup.producer.produce(index, slots.out(slot), slots.scratch(slot));
    });
    auto consume = [&](std::uint64_t, std::size_t slot) {
      if (naive) {
        consumer.step_naive(slots.out(slot));
      } else {
        consumer.step_overlapped(slots.out(slot));
      }
    };
    // The first batch, untimed: checks the batch that came through the queue and the step on
    // the device, and lets the queue reach its steady state.
    pipe.consume_next([&](std::uint64_t index, std::size_t slot) {
      consume(index, slot);
      validate_once([&] {
        consumer.finish();
        const Validation v = setup.producer.check(index, slots.out(slot));
        return v.ok ? consumer.check(slots.out(slot)) : v;
      });
    });
    consumer.finish();
    consumer.take_compute_seconds();
    for (auto _ : state) {
      const double seconds = wall_seconds([&] {
        for (std::size_t b = 0; b < batches; ++b) pipe.consume_next(consume);
        consumer.finish();  // the iteration's last steps are part of its time
      });
      state.SetIterationTime(seconds);
      wall += seconds;
    }
    computing = consumer.take_compute_seconds();
  }  // producers joined: the producer runs alone again
  sample_alone();
  const double idle = wall > 0.0 ? std::clamp(1.0 - computing / wall, 0.0, 1.0) : 0.0;
  set_pipeline_counters(state, batches, idle, alone.apply(setup.plan), config.workers);
}

}  // namespace

Body pipeline_gpu(Case c, Config config, std::size_t batches) {
  return [=](State& st) { bench_gpu(st, c, config, batches); };
}

}  // namespace gapbench::pipeline
