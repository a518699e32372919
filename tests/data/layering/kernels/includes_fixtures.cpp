// A kernels/ file that includes the harness above it: the layering must refuse it, at compile
// time (cmake/gapbench_checks.cmake, ci.layering_compile) and in the include check
// (tests/ci_checks.sh layering, ci.layering_check_catches).
#include "fixtures/harness.h"
