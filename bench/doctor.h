// `gapbench doctor`: the machine facts and findings (fixtures/machine.h) as a readable report, or
// as JSON with --json. main() calls it when argv[1] is "doctor".
#pragma once

namespace gapbench {

// argv holds the arguments after the word "doctor" (argc of them). Returns 0, also when there is
// no GPU (that is a finding, not an error), or 2 for an unknown argument.
int run_doctor(int argc, char** argv);

}  // namespace gapbench
