// Test only: the known slowdown that ci/gate-proof injects to prove the nightly gate works.
//
// Compiled in only with -DGAPBENCH_TEST_INJECT=ON. A hooked kernel then does the first share
// `fraction()` of its work a second time (real, proportional work with the same result), the
// share read once from the environment variable GAPBENCH_INJECT_FRACTION (0 when unset). In an
// ordinary build this header declares nothing, so the hook cannot be reached or switched on.
// Hooked: preprocess::image_elementwise and preprocess::image_vectorized (the first image rows).
#pragma once

#if GAPBENCH_TEST_INJECT
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>

namespace gapbench::inject {

inline constexpr const char* kFractionVariable = "GAPBENCH_INJECT_FRACTION";

inline double fraction() {
  static const double value = [] {
    const char* text = std::getenv(kFractionVariable);
    if (text == nullptr || *text == '\0') return 0.0;
    char* end = nullptr;
    const double f = std::strtod(text, &end);
    if (*end != '\0' || !(f >= 0.0 && f <= 1.0)) {
      // A typo must not pass for "no slowdown": the proof would then measure nothing.
      std::fprintf(stderr, "gapbench: %s must be a number in [0, 1], got '%s'\n", kFractionVariable,
                   text);
      std::exit(2);
    }
    return f;
  }();
  return value;
}

// How many of `units` units of work to do again.
inline std::size_t extra(std::size_t units) {
  return static_cast<std::size_t>(std::llround(fraction() * static_cast<double>(units)));
}

}  // namespace gapbench::inject
#endif
