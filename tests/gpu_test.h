// GPU unit tests register always and skip, with the reason, where no GPU can run them.
#pragma once

#include <gtest/gtest.h>

#include "fixtures/device_probe.h"

#define GAPBENCH_SKIP_WITHOUT_GPU()                           \
  do {                                                        \
    if (auto reason = ::gapbench::gpu_unavailable_reason()) { \
      GTEST_SKIP() << "skipped: " << *reason;                 \
    }                                                         \
  } while (0)
