// Shapes and seeded cases shared by the conv unit tests (test_conv.cpp, test_conv_gpu.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "fixtures/data.h"
#include "fixtures/validate.h"
#include "kernels/conv.h"

namespace gapbench::conv::cases {

// Small shapes with odd and unequal sizes, padding, strides 1-3, 1x1, even and non-square
// filters, and an input smaller than the filter (padding makes it fit).
//                                   n  c   h   w  k  r  s  stride pad
inline const ConvShape kSmallShapes[] = {
    {1, 1, 5, 5, 1, 3, 3, 1, 0},   {2, 3, 7, 9, 4, 3, 3, 1, 1},   {1, 2, 8, 8, 3, 3, 3, 2, 1},
    {2, 3, 9, 7, 5, 3, 3, 2, 0},   {1, 4, 6, 6, 3, 1, 1, 1, 0},   {2, 3, 9, 9, 4, 1, 1, 2, 0},
    {2, 5, 11, 13, 6, 5, 5, 2, 2}, {1, 3, 15, 15, 8, 7, 7, 2, 3}, {1, 2, 5, 7, 2, 1, 3, 1, 0},
    {3, 4, 4, 4, 2, 2, 2, 1, 1},   {1, 1, 2, 2, 1, 3, 3, 1, 1},   {2, 6, 10, 11, 3, 3, 2, 3, 1},
    {1, 17, 12, 10, 9, 3, 3, 1, 1}};

// One shape's seeded input and filter, its float64 reference and magnitude bound.
struct Case {
  ConvShape shape;
  std::vector<float> x, w;
  std::vector<double> ref;
  double magnitude = 0.0;

  Validation check(const char* what, const std::vector<float>& got,
                   Arithmetic arithmetic = Arithmetic::float32) const {
    return validate(what, got, ref, tolerance(shape, magnitude, arithmetic));
  }
};

inline Case make_case(const ConvShape& s, std::uint64_t seed = 5) {
  Case c{s, uniform_floats(s.input_size(), seed, 1), uniform_floats(s.filter_size(), seed, 2),
         std::vector<double>(s.output_size()), 0.0};
  reference(s, c.x.data(), c.w.data(), c.ref.data());
  c.magnitude = magnitude_bound(s, c.x.data(), c.w.data());
  return c;
}

}  // namespace gapbench::conv::cases
