// A Google Benchmark reporter that keeps the runs a benchmark reports, for a test to read its
// counters and label as the results file gets them.
#pragma once

#include <benchmark/benchmark.h>

#include <vector>

namespace gapbench {

class KeepRuns : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    this->runs.insert(this->runs.end(), runs.begin(), runs.end());
  }
  std::vector<Run> runs;
};

}  // namespace gapbench
