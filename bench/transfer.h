// Family `transfer`: what the CPU and GPU variants share.
#pragma once

#include <cstddef>
#include <string>

#include "fixtures/harness.h"

namespace gapbench::transfer {

enum class Memory { pageable, pinned, device };
enum class Direction { h2d, d2h, d2d };
enum class Mode { sync, async };

inline const char* name_of(Memory m) {
  return m == Memory::pageable ? "pageable" : m == Memory::pinned ? "pinned" : "device";
}
inline const char* name_of(Direction d) {
  return d == Direction::h2d ? "h2d" : d == Direction::d2h ? "d2h" : "d2d";
}
inline const char* name_of(Mode m) { return m == Mode::sync ? "sync" : "async"; }

// GPU body, defined in bench/transfer_gpu.cpp (CUDA builds only; see GAPBENCH_GPU_BODY).
Body copy_gpu(Memory memory, Direction direction, Mode mode, std::size_t bytes);

}  // namespace gapbench::transfer
