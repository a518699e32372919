// The fault rules of DESIGN.md, proven on the real gapbench executable: bad flags, a filter that
// matches nothing, an unwritable results path, a failing benchmark, and a run killed half-way.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "fixtures/device_probe.h"
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
      if (file_exists(out + ".partial") &&
          read_file(dir_ + "/stdout").find("peak/read/cpu") != std::string::npos) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  TempDir temp_;
  const std::string dir_ = temp_.path();
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
  EXPECT_FALSE(file_exists(out + ".partial"));
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
  // The family list grows with every family; the message names the registered ones.
  EXPECT_NE(r.err.find("matches no benchmark (families: "), std::string::npos) << r.err;
  for (const char* family : {"peak", "preprocess", "transfer"}) {
    EXPECT_NE(r.err.find(family), std::string::npos) << r.err;
  }
  EXPECT_EQ(read_file(out), "previous");
  EXPECT_FALSE(file_exists(out + ".partial"));
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
  EXPECT_FALSE(file_exists(out + ".partial"));
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
  EXPECT_FALSE(file_exists(out + ".partial"));
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
