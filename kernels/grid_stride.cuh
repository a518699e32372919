// Launch geometry shared by the grid-stride kernels (preprocess, dense, conv, lstm). CUDA
// sources only.
#pragma once

#include <algorithm>
#include <cstddef>

namespace gapbench::grid {

inline constexpr unsigned kWarp = 32;
inline constexpr unsigned kFullMask = 0xffffffffu;
// Grid-stride kernels never need more blocks than this to fill any current GPU (an H100 holds
// 132 SMs x 2048 threads = 1056 blocks of 256); well under gridDim.x's limit of 2^31 - 1.
inline constexpr std::size_t kMaxBlocks = 65535;

// Blocks for `items` work items at `per_block` per block, at least 1, capped for grid-stride
// loops.
inline std::size_t blocks_for(std::size_t items, std::size_t per_block) {
  return std::max<std::size_t>(1, std::min(kMaxBlocks, (items + per_block - 1) / per_block));
}

}  // namespace gapbench::grid
