// Family `preprocess`: what the CPU and GPU variants share. Data and its float64 reference are
// built once per shape (fixtures/setup_cache.h) and validated against by every variant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fixtures/device_probe.h"
#include "fixtures/harness.h"
#include "kernels/base/data.h"
#include "kernels/base/validate.h"
#include "kernels/preprocess.h"

namespace gapbench::preprocess {

enum class Style { elementwise, vectorized };

struct SumsqShape {
  std::size_t rows = 0, cols = 0;
  std::string key() const { return std::to_string(rows) + "x" + std::to_string(cols); }
};

struct SumsqData {
  // What the set-up keeps: the input, the reference, the output.
  static std::size_t host_bytes(SumsqShape s) {
    return s.rows * s.cols * sizeof(float) + s.rows * (sizeof(double) + sizeof(float));
  }
  explicit SumsqData(SumsqShape s)
      : shape((require_host_memory(host_bytes(s)), s)),
        x(uniform_floats(s.rows * s.cols, run_seed(), 1)),
        ref(s.rows) {
    sumsq_reference(x.data(), s.rows, s.cols, ref.data());
  }
  std::size_t out_size() const { return shape.rows; }
  Validation check(const std::vector<float>& out) const {
    return validate("sumsq", out, ref, {0.0, sumsq_rtol(shape.cols)});
  }
  // Bytes the op reads and writes; items are rows.
  double bytes() const { return (shape.rows * shape.cols + shape.rows) * sizeof(float); }
  double items() const { return static_cast<double>(shape.rows); }

  SumsqShape shape;
  std::vector<float> x;
  std::vector<double> ref;
};

struct ImageData {
  // What the set-up keeps: the input bytes, the reference and the output.
  static std::size_t host_bytes(ImageShape s) {
    return s.pixels() * (sizeof(std::uint8_t) + sizeof(double) + sizeof(float));
  }
  explicit ImageData(ImageShape s)
      : shape((require_host_memory(host_bytes(s)), s)),
        in(random_bytes(s.pixels(), run_seed(), 2)),
        aug(random_augmentation(s.n, run_seed())),
        ref(s.pixels()) {
    image_reference(in.data(), s, aug.delta.data(), aug.flip.data(), ref.data());
  }
  std::size_t out_size() const { return shape.pixels(); }
  Validation check(const std::vector<float>& out) const {
    return validate("image", out, ref, {kImageAtol, kImageRtol});
  }
  // uint8 in, float out; items are images.
  double bytes() const { return shape.pixels() * (sizeof(std::uint8_t) + sizeof(float)); }
  double items() const { return static_cast<double>(shape.n); }

  ImageShape shape;
  std::vector<std::uint8_t> in;
  Augmentation aug;
  std::vector<double> ref;
};

inline std::string image_key(const ImageShape& s) {
  return std::to_string(s.n) + "x" + std::to_string(s.h) + "x" + std::to_string(s.w) + "x" +
         std::to_string(s.c);
}

// GPU bodies, defined in bench/preprocess_gpu.cpp (CUDA builds only; see GAPBENCH_GPU_BODY).
Body sumsq_gpu(SumsqShape shape, Style style, GpuTiming timing);
Body image_gpu(ImageShape shape, Style style, GpuTiming timing);

}  // namespace gapbench::preprocess
