// Shapes and the seed shared by the conv unit tests (test_conv.cpp, test_conv_gpu.cpp).
#pragma once

#include <cstdint>

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

// The tests' seed for a shape's Problem (kernels/conv.h).
inline constexpr std::uint64_t kSeed = 5;

}  // namespace gapbench::conv::cases
