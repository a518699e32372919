// gapbench's fault rules, proven on the real gapbench executable: bad flags, a filter that
// matches nothing, an unwritable results path, a failing benchmark, and a run killed half-way.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "fixtures/child_probe.h"
#include "fixtures/device_probe.h"
#include "fixtures/machine.h"
#include "tests/temp_dir.h"

extern char** environ;

namespace {

using namespace gapbench::testing_files;

class Cli : public ::testing::Test {
 protected:
  struct Result {
    int status = -1;  // exit status, or 128 + signal
    std::string out, err;
  };

  // Starts gapbench with `args`; stdout and stderr go to files in the test's directory.
  pid_t start(const std::vector<std::string>& args) {
    std::vector<std::string> all = {GAPBENCH_EXE};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, (dir_ + "/stdout").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, (dir_ + "/stderr").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    EXPECT_EQ(rc, 0) << "cannot start " << GAPBENCH_EXE;
    return pid;
  }

  Result wait_for(pid_t pid) {
    int raw = 0;
    waitpid(pid, &raw, 0);
    Result r;
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
    r.out = read_file(dir_ + "/stdout");
    r.err = read_file(dir_ + "/stderr");
    return r;
  }

  Result run(const std::vector<std::string>& args) { return wait_for(start(args)); }

  // Like run(), with stdout and stderr in `dir` (beside a run that is under way in dir_).
  Result run_in(const std::string& dir, const std::vector<std::string>& args) {
    const std::string saved = dir_;
    dir_ = dir;
    Result r = wait_for(start(args));
    dir_ = saved;
    return r;
  }

  // A run that is half-way for long: one short benchmark (peak/read, families run in name
  // order), whose printed result shows the run is under way with its results file open, then
  // 10^8 floats through the element-wise pass, 30 times.
  pid_t start_long_run(const std::string& out) {
    return start(
        {"--benchmark_filter=^(peak/read/cpu/mib:256/real_time/threads:1|"
         "preprocess/elementwise/cpu/op:sumsq)",
         "--benchmark_repetitions=30", "--benchmark_out=" + out});
  }

  // Waits (up to 120 s) until the long run has finished its first benchmark.
  bool wait_until_running(const std::string& out) {
    for (int i = 0; i < 1200; ++i) {
      if (!partial_files(out).empty() &&
          read_file(dir_ + "/stdout").find("peak/read/cpu") != std::string::npos) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  TempDir temp_;
  std::string dir_ = temp_.path();
};

constexpr const char* kTinyFilter = "--benchmark_filter=^transfer/memcpy/cpu/bytes:4096/";
constexpr const char* kOneRepetition = "--benchmark_repetitions=1";

TEST_F(Cli, UnknownFlagIsOneMessageAndExit2) {
  const Result r = run({"--benchmark_bogus=1"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("unrecognized command-line flag: --benchmark_bogus=1"), std::string::npos)
      << r.err;
}

TEST_F(Cli, BadFormatIsRefusedAndLeavesNoPartialFile) {
  const std::string out = dir_ + "/results.json";
  const Result r = run({kTinyFilter, "--benchmark_out_format=yaml", "--benchmark_out=" + out});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--benchmark_out_format must be console, json or csv, got 'yaml'"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(partial_files(out).empty());
  EXPECT_FALSE(file_exists(out));
}

TEST_F(Cli, ListingFollowsGoogleBenchmarksBooleans) {
  const std::string out = dir_ + "/results.json";
  Result r = run({kTinyFilter, "--benchmark_list_tests=true", "--benchmark_out=" + out});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "transfer/memcpy/cpu/bytes:4096/real_time\n");
  EXPECT_FALSE(file_exists(out));  // a listing writes no results
  r = run({kTinyFilter, "--benchmark_list_tests=no", kOneRepetition, "--benchmark_out=" + out});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(file_exists(out));  // "no" is false: it ran and wrote its results
}

TEST_F(Cli, BadProfileAndSeedAreRefused) {
  Result r = run({"--profile=huge"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("unknown profile 'huge' (use quick or full)"), std::string::npos) << r.err;
  r = run({"--seed=-3"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--seed needs a non-negative integer"), std::string::npos) << r.err;
}

TEST_F(Cli, FilterMatchingNothingIsAnErrorAndKeepsThePreviousResults) {
  const std::string out = dir_ + "/results.json";
  write_file(out, "previous");
  const Result r = run({"--benchmark_filter=^no_such_family/", "--benchmark_out=" + out});
  EXPECT_EQ(r.status, 2);
  // The families registered so far, in a list that grows with each new family.
  const auto at = r.err.find("matches no benchmark (families: ");
  ASSERT_NE(at, std::string::npos) << r.err;
  for (const char* family : {"peak", "preprocess", "transfer"}) {
    EXPECT_NE(r.err.find(family, at), std::string::npos) << r.err;
  }
  EXPECT_EQ(read_file(out), "previous");
  EXPECT_TRUE(partial_files(out).empty());
}

TEST_F(Cli, UnwritableResultsPathIsRefusedBeforeRunning) {
  const Result r = run({kTinyFilter, "--benchmark_out=" + dir_ + "/no/such/dir/results.json"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("cannot write results to '" + dir_ + "/no/such/dir/results.json'"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out.find("transfer/memcpy"), std::string::npos) << "ran before refusing";
}

TEST_F(Cli, SuccessfulRunReplacesTheResultsFileWhole) {
  const std::string out = dir_ + "/results.json";
  write_file(out, "previous");
  const Result r = run({kTinyFilter, kOneRepetition, "--benchmark_out=" + out, "--seed=7"});
  EXPECT_EQ(r.status, 0) << r.err;
  const std::string json = read_file(out);
  EXPECT_NE(json.find("\"gapbench.seed\": \"7\""), std::string::npos);
  EXPECT_NE(json.find("\"gapbench.profile\": \"quick\""), std::string::npos);
  EXPECT_NE(json.find("\"name\": \"transfer/memcpy/cpu/bytes:4096/real_time\""), std::string::npos);
  EXPECT_EQ(json.back(), '\n');
  EXPECT_TRUE(partial_files(out).empty());
}

// The first value of `key` in a results file's JSON, a counter's bare number or a context
// entry's quoted one (a failure if it has none).
double first_number(const std::string& json, const std::string& key) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(json, m, std::regex("\"" + key + "\": \"?([-+0-9.eE]+)"))) << key;
  return m.empty() ? 0.0 : std::stod(m[1]);
}

// The byte convention: a copy's bytes_per_second is the bytes copied; its traffic, each byte read
// and written once, is twice that.
TEST_F(Cli, HostCopyCountsBytesCopiedAndTwiceThatAsTraffic) {
  const std::string out = dir_ + "/results.json";
  const Result r = run({kTinyFilter, kOneRepetition, "--benchmark_out=" + out});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string json = read_file(out);
  auto counter = [&](const std::string& key) { return first_number(json, key); };
  const double copied = counter("bytes_per_second");
  const double traffic = counter("traffic_bytes_per_second");
  EXPECT_GT(copied, 0.0);
  EXPECT_NEAR(traffic / copied, 2.0, 1e-6);
}

// The pipeline's ideal counts its producers and the cores it may use: min(workers / t_produce,
// 1 / t_consume, cores / (t_produce + t_consume)) from the stage costs measured beside the run.
// gapbench runs on one core of this process's affinity here (a child inherits it), whatever the
// machine has: the ideal of 2 producers and the consumer is then one core's, 1 / (t_p + t_c).
TEST_F(Cli, PipelineIdealCountsItsWorkersAndTheCoresItMayUse) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &saved)) {
      CPU_SET(cpu, &one);
      break;
    }
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  const std::string out = dir_ + "/results.json";
  const Result r =
      run({"--benchmark_filter=^pipeline/parallel/cpu/produce_ms:4/consume_ms:1/depth:2/workers:2/",
           kOneRepetition, "--benchmark_min_time=0.01", "--benchmark_out=" + out});
  ASSERT_EQ(sched_setaffinity(0, sizeof saved, &saved), 0);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string json = read_file(out);
  auto counter = [&](const std::string& key) { return first_number(json, key); };
  const double produce = counter("produce_ms_measured") * 1e-3;
  const double consume = counter("consume_ms_measured") * 1e-3;
  ASSERT_GT(produce, 0.0);
  ASSERT_GT(consume, 0.0);
  EXPECT_EQ(counter("cores"), 1.0);
  EXPECT_NEAR(counter("ideal_items_per_second"), 1.0 / (produce + consume),
              1e-6 * counter("ideal_items_per_second"));
}

// A run that includes peak/ probes the ceilings at its start and end, into the context; one
// that does not, does not pay for it.
TEST_F(Cli, RunsWithPeakRecordTheCeilingsAtTheirStartAndEnd) {
  const std::string out = dir_ + "/results.json";
  Result r = run({"--benchmark_filter=^peak/read/cpu/mib:256/real_time/threads:1$", kOneRepetition,
                  "--benchmark_min_time=0.01", "--benchmark_out=" + out});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string json = read_file(out);
  for (const char* key : {"stability.sgemm_gflops_start", "stability.sgemm_gflops_end",
                          "stability.read_gbps_start", "stability.read_gbps_end"}) {
    EXPECT_GT(first_number(json, key), 0.0) << key;
  }
  r = run({kTinyFilter, kOneRepetition, "--benchmark_out=" + out});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read_file(out).find("stability."), std::string::npos);
}

// The machine findings are judged once: a results file carries exactly doctor's, id and
// severity, as "finding.<id>": "<severity>: <text>" (the report quotes them from there).
TEST_F(Cli, ResultsCarryDoctorsFindings) {
  const std::string out = dir_ + "/results.json";
  const Result r = run({kTinyFilter, kOneRepetition, "--benchmark_out=" + out});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string json = read_file(out);
  const auto findings = gapbench::machine_findings(gapbench::machine_facts());
  for (const auto& f : findings) {
    const std::string entry = "\"finding." + f.id + "\": \"" + f.severity + ": ";
    EXPECT_NE(json.find(entry), std::string::npos) << entry;
  }
  std::size_t carried = 0;
  for (std::size_t at = json.find("\"finding."); at != std::string::npos;
       at = json.find("\"finding.", at + 1))
    ++carried;
  EXPECT_EQ(carried, findings.size());
}

TEST_F(Cli, GpuVariantsSkipWithAReasonAndDoNotFailTheRun) {
  if (!gapbench::gpu_unavailable_reason()) GTEST_SKIP() << "a GPU is usable here";
  const Result r = run(
      {"--benchmark_filter=^transfer/pinned/gpu/dir:h2d/mode:sync/bytes:4096/", kOneRepetition});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("skipped: "), std::string::npos) << r.out;
}

TEST_F(Cli, FailedBenchmarkExits1AndItsErrorIsInTheResults) {
  const std::string out = dir_ + "/results.json";
  setenv("GAPBENCH_INJECT_FAILURE", "bytes:4096", 1);
  const Result r = run({kTinyFilter, kOneRepetition, "--benchmark_out=" + out});
  unsetenv("GAPBENCH_INJECT_FAILURE");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("benchmark run(s) failed"), std::string::npos) << r.err;
  EXPECT_NE(read_file(out).find("injected failure"), std::string::npos);
}

TEST_F(Cli, RunKilledHalfWayLeavesThePreviousResults) {
  const std::string out = dir_ + "/results.json";
  write_file(out, "previous");
  const pid_t pid = start_long_run(out);
  ASSERT_TRUE(wait_until_running(out));
  kill(pid, SIGKILL);
  const Result r = wait_for(pid);
  EXPECT_EQ(r.status, 128 + SIGKILL);
  EXPECT_EQ(read_file(out), "previous");
}

TEST_F(Cli, InterruptedRunRemovesItsPartialFile) {
  const std::string out = dir_ + "/results.json";
  write_file(out, "previous");
  const pid_t pid = start_long_run(out);
  ASSERT_TRUE(wait_until_running(out));
  kill(pid, SIGTERM);
  const Result r = wait_for(pid);
  EXPECT_EQ(r.status, 128 + SIGTERM);
  EXPECT_EQ(read_file(out), "previous");
  EXPECT_TRUE(partial_files(out).empty());
}

// Two runs writing the same results file: each has its own partial file, so neither damages
// the other's; the one that finishes writes the file whole, and a killed one leaves it alone.
TEST_F(Cli, ConcurrentWritersNeverCorruptTheResultsFile) {
  const std::string out = dir_ + "/same.json";
  write_file(out, "previous");
  const pid_t slow = start_long_run(out);
  ASSERT_TRUE(wait_until_running(out));
  const std::string quick_dir = dir_ + "/quick";
  ASSERT_EQ(mkdir(quick_dir.c_str(), 0755), 0);
  // The second run's output goes elsewhere; only the results file is shared.
  const Result quick = run_in(quick_dir, {kTinyFilter, kOneRepetition, "--benchmark_out=" + out});
  EXPECT_EQ(quick.status, 0) << quick.err;
  std::string json = read_file(out);
  EXPECT_EQ(json.rfind("{", 0), 0u) << json.substr(0, 200);
  EXPECT_EQ(json.substr(json.size() - 2), "}\n");
  EXPECT_NE(json.find("transfer/memcpy/cpu/bytes:4096"), std::string::npos);
  EXPECT_EQ(json.find("preprocess/elementwise"), std::string::npos) << "the slow run's data";
  EXPECT_EQ(partial_files(out).size(), 1u) << "the slow run's own partial file is still there";
  kill(slow, SIGTERM);
  EXPECT_EQ(wait_for(slow).status, 128 + SIGTERM);
  EXPECT_EQ(read_file(out), json) << "the killed run changed the finished run's file";
  EXPECT_TRUE(partial_files(out).empty());
}

TEST_F(Cli, InvalidFormatInTheEnvironmentIsRefusedAndKeepsTheResults) {
  const std::string out = dir_ + "/f.json";
  for (const char* var : {"BENCHMARK_OUT_FORMAT", "BENCHMARK_FORMAT"}) {
    write_file(out, "previous");
    setenv(var, "xml", 1);
    const Result r = run({kTinyFilter, kOneRepetition, "--benchmark_out=" + out});
    unsetenv(var);
    EXPECT_EQ(r.status, 2) << var;
    EXPECT_EQ(r.out, "") << var;
    EXPECT_NE(r.err.find(std::string(var) + " must be console, json or csv, got 'xml'"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(read_file(out), "previous");
    EXPECT_TRUE(partial_files(out).empty());
  }
}

TEST_F(Cli, ARunThatRunsNothingExits2AndKeepsTheResults) {
  const std::string out = dir_ + "/r.json";
  write_file(out, "previous");
  Result r = run({kTinyFilter, "--benchmark_repetitions=0", "--benchmark_out=" + out});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--benchmark_repetitions needs a whole number of at least 1, got '0'"),
            std::string::npos)
      << r.err;
  setenv("BENCHMARK_REPETITIONS", "0", 1);
  r = run({kTinyFilter, "--benchmark_out=" + out});
  unsetenv("BENCHMARK_REPETITIONS");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("environment variable BENCHMARK_REPETITIONS needs a whole number"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(read_file(out), "previous");
  EXPECT_TRUE(partial_files(out).empty());
}

TEST_F(Cli, NumericFlagsAreCheckedWithOneLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--benchmark_repetitions=-1", "--benchmark_repetitions needs a whole number of at least 1"},
      {"--benchmark_repetitions=two", "--benchmark_repetitions needs a whole number"},
      {"--benchmark_min_time=-1", "--benchmark_min_time needs a time in seconds above 0"},
      {"--benchmark_min_time=0", "--benchmark_min_time needs a time in seconds above 0"},
      {"--benchmark_min_time=soon", "--benchmark_min_time needs a time in seconds above 0"},
      {"--benchmark_min_warmup_time=-1",
       "--benchmark_min_warmup_time needs a time in seconds of 0 or more"},
  };
  for (const auto& [flag, message] : cases) {
    const Result r = run({kTinyFilter, flag});
    EXPECT_EQ(r.status, 2) << flag;
    EXPECT_NE(r.err.find(message), std::string::npos) << flag << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "") << flag;
  }
  EXPECT_EQ(run({kTinyFilter, kOneRepetition, "--benchmark_min_time=0.01"}).status, 0);
}

// Short of host memory (here a process limit) for a size: that size is skipped, naming both.
// The limit is the smallest (in steps of 100 MB) under which gapbench starts at all, which leaves
// less than the 0.4 GiB the sum of squares needs.
TEST_F(Cli, TooLittleHostMemoryIsASkipThatNamesTheSizes) {
  for (int kib = 300000; kib <= 3000000; kib += 100000) {
    // One OpenBLAS thread: its worker threads retry a failed mmap forever under such a limit.
    const std::string cmd = "ulimit -v " + std::to_string(kib) +
                            " && OPENBLAS_NUM_THREADS=1 exec timeout 120 '" +
                            std::string(GAPBENCH_EXE) +
                            "' --benchmark_filter=^preprocess/vectorized/cpu/op:sumsq "
                            "--benchmark_repetitions=1 >'" +
                            dir_ + "/stdout' 2>'" + dir_ + "/stderr'";
    const int raw = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(raw) && WEXITSTATUS(raw) != 124) << "hung under ulimit -v " << kib;
    if (WEXITSTATUS(raw) != 0) continue;  // did not start under this limit
    const std::string out = read_file(dir_ + "/stdout");
    EXPECT_NE(out.find("skipped: needs 0.4 GiB of host memory, "), std::string::npos)
        << "ulimit -v " << kib << ": " << out;
    EXPECT_NE(out.find(" GiB available"), std::string::npos) << out;
    return;
  }
  FAIL() << "gapbench did not start under any limit up to 3 GB: " << read_file(dir_ + "/stderr");
}

// overhead/startup times CUDA start-up in a child, `gapbench startup-probe <what>`: hidden from
// --help, and where no GPU can run it, a skip line with the same reason the benchmarks give.
TEST_F(Cli, StartupProbeIsHiddenAndSaysWhyItCannotRun) {
  Result r = run({"--help"});
  EXPECT_EQ(r.out.find("startup-probe"), std::string::npos);
  r = run({"startup-probe", "bogus"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("usage: gapbench startup-probe context|first_launch"), std::string::npos)
      << r.err;
  const auto reason = gapbench::gpu_unavailable_reason();
  for (const char* what : {"context", "first_launch"}) {
    r = run({"startup-probe", what});
    gapbench::ChildResult child;
    child.exit_status = r.status;
    child.out = r.out;
    child.err = r.err;
    if (!reason) {
      EXPECT_GT(gapbench::probe::read_seconds(what, child), 0.0) << r.out << r.err;
      continue;
    }
    EXPECT_EQ(r.status, gapbench::probe::kExitSkipped) << what;
    EXPECT_NE(r.err.find("gapbench startup-probe: skipped: " + *reason), std::string::npos)
        << r.err;
    try {
      gapbench::probe::read_seconds(what, child);
      ADD_FAILURE() << what << ": no Skip from " << r.out;
    } catch (const gapbench::Skip& skip) {
      EXPECT_EQ(skip.what(), *reason);
    }
  }
}

TEST_F(Cli, StartupBenchmarksSkipWithAReasonWithoutAGpu) {
  const auto reason = gapbench::gpu_unavailable_reason();
  if (!reason) GTEST_SKIP() << "a GPU is usable here";
  const Result r = run({"--benchmark_filter=^overhead/startup/", kOneRepetition});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("overhead/startup/gpu/what:context"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("skipped: " + *reason), std::string::npos) << r.out;
}

TEST_F(Cli, HelpAndDoctor) {
  Result r = run({"--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("--profile=quick|full"), std::string::npos);
  r = run({"doctor", "--bogus"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("unknown argument '--bogus'"), std::string::npos) << r.err;
  r = run({"doctor", "--json"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("\"facts\""), std::string::npos);
}

}  // namespace
