// `gapbench doctor`: the machine facts (fixtures/machine.h) and findings (fixtures/doctor_rules.h)
// as a readable report, or as JSON with --json. main() calls it when argv[1] is "doctor".
#pragma once

namespace gapbench {

// argv holds the arguments after the word "doctor" (argc of them); `stdout_closed`: standard
// output was closed at start-up. Returns 0, also when there is no GPU (that is a finding, not an
// error), 3 when a finding invalidates GPU results, or 2 for an unknown argument or a report that
// could not be written.
int run_doctor(int argc, char** argv, bool stdout_closed);

}  // namespace gapbench
