// gapbench's fault rules, proven on the real gapbench executable: bad flags, a filter that
// matches nothing or that the matcher cannot take, an unwritable results path, a full disk, closed
// streams, devices and FIFOs as results, a failing benchmark, and a run killed half-way.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fixtures/child_probe.h"
#include "fixtures/device_probe.h"
#include "fixtures/doctor_rules.h"
#include "fixtures/machine.h"
#include "fixtures/results_file.h"
#include "tests/temp_dir.h"

namespace {

using namespace gapbench::testing_files;

class Cli : public ::testing::Test {
 protected:
  struct Result {
    int status = -1;  // exit status, or 128 + signal
    std::string out, err;
  };

  // Starts gapbench with `args`; stdout and stderr go to files in the test's directory.
  // `in_child` runs in the child just before gapbench starts: limits, closed descriptors.
  pid_t start(const std::vector<std::string>& args, const std::function<void()>& in_child = {}) {
    std::vector<std::string> all = {GAPBENCH_EXE};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string out = dir_ + "/stdout", err = dir_ + "/stderr";
    const pid_t pid = fork();
    if (pid == 0) {
      const int out_fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int err_fd = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(out_fd, 1);
      dup2(err_fd, 2);
      close(out_fd);
      close(err_fd);
      // Whatever the test runner ignores, gapbench meets each signal as a shell would give it.
      for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
      const rlimit no_core{0, 0};  // the signal tests end runs with core-dumping signals
      setrlimit(RLIMIT_CORE, &no_core);
      if (in_child) in_child();
      execv(argv[0], argv.data());
      _exit(127);
    }
    EXPECT_GT(pid, 0) << "cannot start " << GAPBENCH_EXE;
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

  // A run that is half-way for long: one short benchmark (a 16x16 matmul; families run in name
  // order), whose printed result shows the run is under way with its results file open, then
  // 10^8 floats through the element-wise pass, 30 times. Not peak/: its buffer is four times the
  // last-level cache, 2 GiB on a CPU with 480 MiB of L3, and a run with peak/ also probes the
  // ceilings first.
  pid_t start_long_run(const std::string& out, const std::function<void()>& in_child = {}) {
    return start({"--benchmark_filter=^(overhead/openblas/cpu/op:matmul/n:16/real_time|"
                  "preprocess/elementwise/cpu/op:sumsq)",
                  "--benchmark_repetitions=30", "--benchmark_out=" + out},
                 in_child);
  }

  // Waits (up to 120 s) until the long run has finished its first benchmark.
  bool wait_until_running(const std::string& out) {
    for (int i = 0; i < 1200; ++i) {
      if (!partial_files(out).empty() &&
          read_file(dir_ + "/stdout").find("overhead/openblas/cpu/op:matmul/n:16/") !=
              std::string::npos) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  // Waits (up to 60 s) until a run has its partial file and has begun: Google Benchmark has
  // printed its context ("Running ...") to stderr.
  bool wait_until_started(const std::string& out) {
    for (int i = 0; i < 600; ++i) {
      if (!partial_files(out).empty() &&
          read_file(dir_ + "/stderr").find("Running ") != std::string::npos) {
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

// The peak family's variables: a bad value is refused before anything runs, naming it, whatever
// the filter; --peak must name a file that is there, beside the results.
TEST_F(Cli, BadPeakSettingsAreRefused) {
  setenv("GAPBENCH_MAX_CPU_ISA", "AVX2", 1);
  Result r = run({"--benchmark_filter=^conv/naive/"});
  unsetenv("GAPBENCH_MAX_CPU_ISA");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("environment variable GAPBENCH_MAX_CPU_ISA must be sse41, avx2, avx512, "
                       "avx512_bf16 or amx, got 'AVX2'"),
            std::string::npos)
      << r.err;
  // Past 1 TiB the buffers' size overflowed: 2^61 + 1 ended peak/read by SIGFPE, with no line.
  for (const char* bad : {"480M", "2305843009213693953", "18446744073709551615"}) {
    setenv("GAPBENCH_CACHE_BYTES", bad, 1);
    r = run({"--benchmark_filter=^peak/read/"});
    unsetenv("GAPBENCH_CACHE_BYTES");
    EXPECT_EQ(r.status, 2) << bad;
    EXPECT_NE(r.err.find("environment variable GAPBENCH_CACHE_BYTES needs a whole number of bytes "
                         "from 1 to 1 TiB (480 MiB: 503316480), got '" +
                         std::string(bad) + "'"),
              std::string::npos)
        << r.err;
  }
  const std::string out = dir_ + "/conv.json";
  r = run({"--benchmark_filter=^conv/naive/", "--peak=peak.json", "--benchmark_out=" + out});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--peak=peak.json: " + dir_ + "/peak.json cannot be read"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(file_exists(out));
  r = run({"--peak="});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--peak needs a file name"), std::string::npos) << r.err;
}

// A family's run judged against a peak/ run beside it names that file in its context.
// This machine's id, as doctor --json gives it.
std::string this_machine_id(const std::string& doctor_json) {
  const std::string key = "\"machine.id\": \"";
  const auto at = doctor_json.find(key);
  if (at == std::string::npos) return "";
  return doctor_json.substr(at + key.size(),
                            doctor_json.find('"', at + key.size()) - at - key.size());
}

TEST_F(Cli, AFamilyRunNamesThePeakRunItIsJudgedAgainst) {
  const std::string id = this_machine_id(run({"doctor", "--json"}).out);
  ASSERT_FALSE(id.empty());
  write_file(dir_ + "/peak.json",
             "{\"context\": {\"machine.id\": \"" + id + "\"}, \"benchmarks\": []}");
  const std::string out = dir_ + "/conv.json";
  const Result r =
      run({"--benchmark_filter=^conv/naive/cpu/n:1/", "--peak=peak.json",
           "--benchmark_repetitions=1", "--benchmark_min_time=0.001", "--benchmark_out=" + out});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string text = read_file(out);
  EXPECT_NE(text.find("\"peak.results_file\": \"peak.json\""), std::string::npos);
  EXPECT_EQ(text.find("\"peak/"), std::string::npos) << "no peak/ row of its own";
  EXPECT_NE(text.find("\"stability.sgemm_gflops_start\""), std::string::npos);
}

// --peak must name peak/'s results file of this machine: a folder, a FIFO, a device, another
// machine's file or one that is no gapbench results file was taken (a FIFO would have waited),
// and each is refused before anything runs, with no results file written.
TEST_F(Cli, APeakFileThatIsNotThisMachinesResultsIsRefused) {
  const std::string out = dir_ + "/conv.json";
  mkdir((dir_ + "/folder").c_str(), 0755);
  ASSERT_EQ(mkfifo((dir_ + "/fifo").c_str(), 0644), 0);
  write_file(dir_ + "/other.json",
             "{\"context\": {\"machine.id\": \"0123456789abcdef\"}, \"benchmarks\": []}");
  write_file(dir_ + "/bare.json", "{}");
  const std::string id = this_machine_id(run({"doctor", "--json"}).out);
  for (const auto& [peak, words] : std::vector<std::pair<std::string, std::string>>{
           {"folder", dir_ + "/folder is a folder, not a results file"},
           {"fifo", dir_ + "/fifo is a FIFO, not a results file"},
           {"/dev/zero", "/dev/zero is a device, not a results file"},
           {"other.json", dir_ +
                              "/other.json is another machine's results file (machine.id "
                              "0123456789abcdef; this machine's is " +
                              id + ")"},
           {"bare.json", dir_ + "/bare.json is not a gapbench results file (no machine.id"},
       }) {
    const Result r = run(
        {"--benchmark_filter=^conv/naive/cpu/n:1/", "--peak=" + peak, "--benchmark_out=" + out});
    EXPECT_EQ(r.status, 2) << peak;
    EXPECT_NE(r.err.find("--peak=" + peak + ": " + words), std::string::npos) << r.err;
    EXPECT_FALSE(file_exists(out)) << peak;
  }
}

TEST_F(Cli, BadProfileAndSeedAreRefused) {
  Result r = run({"--profile=huge"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("unknown profile 'huge' (use quick or full)"), std::string::npos) << r.err;
  r = run({"--seed=-3"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--seed needs a non-negative integer"), std::string::npos) << r.err;
  // From the environment, the message names the variable, not the flag.
  setenv("GAPBENCH_SEED", "abc", 1);
  r = run({});
  unsetenv("GAPBENCH_SEED");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(
      r.err.find("environment variable GAPBENCH_SEED needs a non-negative integer, got 'abc'"),
      std::string::npos)
      << r.err;
  setenv("GAPBENCH_PROFILE", "huge", 1);
  r = run({});
  unsetenv("GAPBENCH_PROFILE");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("environment variable GAPBENCH_PROFILE: unknown profile 'huge'"),
            std::string::npos)
      << r.err;
}

// OMP_NUM_THREADS=100000 ended the first oneDNN row by SIGSEGV with no line; one OpenMP cannot read
// it dropped with a warning. Each is refused before anything runs; a list of levels is taken.
TEST_F(Cli, AnOmpThreadCountOpenMpCannotTakeIsRefused) {
  const char* kOneDnnRow =
      "--benchmark_filter=^conv/onednn/cpu/n:1/c:1/hw:28/k:1/r:3/stride:1/pad:0/real_time$";
  for (const char* bad : {"999999", "8193", "0", "abc", "-2", "4,", "4,,2", "1e3", " "}) {
    setenv("OMP_NUM_THREADS", bad, 1);
    const Result r = run({kOneDnnRow});
    unsetenv("OMP_NUM_THREADS");
    EXPECT_EQ(r.status, 2) << bad;
    EXPECT_NE(r.err.find("environment variable OMP_NUM_THREADS needs a whole number of threads "
                         "from 1 to 8192 (or a list of them, one per nesting level, as OpenMP "
                         "reads it), got '" +
                         std::string(bad) + "'"),
              std::string::npos)
        << r.err;
  }
  for (const char* good : {"2", "8192", "2,1", " 2 , 1"}) {
    setenv("OMP_NUM_THREADS", good, 1);
    const Result r = run({kOneDnnRow, "--benchmark_list_tests=true"});
    unsetenv("OMP_NUM_THREADS");
    EXPECT_EQ(r.status, 0) << good << ": " << r.err;
  }
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

// A family's run that includes peak/ probes the ceilings at its start and end, into the context;
// a run of peak/ alone (its rows are those ceilings) and one without peak/ do not pay for it.
TEST_F(Cli, FamilyRunsWithPeakRecordTheCeilingsAtTheirStartAndEnd) {
  const std::string out = dir_ + "/results.json";
  Result r =
      run({"--benchmark_filter=^(peak/read/cpu/mib:[0-9]+/real_time/threads:1|"
           "conv/naive/cpu/n:1/.*)$",
           kOneRepetition, "--benchmark_min_time=0.01", "--benchmark_out=" + out});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string json = read_file(out);
  for (const char* key :
       {"stability.sgemm_gflops_start", "stability.sgemm_gflops_end", "stability.read_gbps_start",
        "stability.read_gbps_end", "stability.fma_one_gflops_start",
        "stability.fma_all_gflops_start", "stability.fma_one_gflops_end",
        "stability.fma_all_gflops_end", "stability.fma_threads"}) {
    EXPECT_GT(first_number(json, key), 0.0) << key;
  }
  for (const std::string& filter :
       {std::string(kTinyFilter),
        std::string("--benchmark_filter=^peak/read/cpu/mib:[0-9]+/real_time/threads:1$")}) {
    r = run({filter, kOneRepetition, "--benchmark_min_time=0.01", "--benchmark_out=" + out});
    ASSERT_EQ(r.status, 0) << filter << ": " << r.err;
    const std::string text = read_file(out);
    for (const char* probed : {"stability.sgemm_gflops", "stability.fma_"}) {
      EXPECT_EQ(text.find(probed), std::string::npos) << filter << ": " << probed;
    }
    // What other work took of the CPUs is recorded in every run: it costs two reads.
    EXPECT_GT(first_number(text, "stability.window_s"), 0.0) << filter;
    EXPECT_GE(first_number(text, "stability.other_cpus"), 0.0) << filter;
    EXPECT_GE(first_number(text, "stability.steal"), 0.0) << filter;
    EXPECT_NE(text.find("\"gapbench.schema\""), std::string::npos) << filter;
  }
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
    const std::string entry =
        "\"finding." + f.id + "\": \"" + gapbench::severity_name(f.severity) + ": ";
    EXPECT_NE(json.find(entry), std::string::npos) << entry;
  }
  std::size_t carried = 0;
  for (std::size_t at = json.find("\"finding."); at != std::string::npos;
       at = json.find("\"finding.", at + 1))
    ++carried;
  EXPECT_EQ(carried, findings.size());
  // And every fact doctor gathers, these among them.
  for (const char* key : {"\"host.hypervisor\": ", "\"cpu.frequency_nominal_mhz\": "})
    EXPECT_NE(json.find(key), std::string::npos) << key;
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

// Each signal that ends a run removes its partial file, and the run still ends by that signal
// (the exit status a shell shows), not by an exit of its own.
TEST_F(Cli, EveryTerminatingSignalRemovesThePartialFile) {
  const std::string out = dir_ + "/results.json";
  for (int sig : {SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGXFSZ, SIGPIPE, SIGTERM}) {
    write_file(out, "previous");
    const pid_t pid = start_long_run(out);
    ASSERT_TRUE(wait_until_started(out)) << strsignal(sig);
    kill(pid, sig);
    const Result r = wait_for(pid);
    EXPECT_EQ(r.status, 128 + sig) << strsignal(sig) << ": " << r.err;
    EXPECT_EQ(read_file(out), "previous") << strsignal(sig);
    EXPECT_TRUE(partial_files(out).empty()) << strsignal(sig);
  }
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
  EXPECT_NE(r.err.find("--benchmark_repetitions needs a whole number from 1 to 999999999, got '0'"),
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
      {"--benchmark_repetitions=-1", "--benchmark_repetitions needs a whole number from 1 to"},
      // Past 9 digits it was told "at least 1", which it is.
      {"--benchmark_repetitions=3000000000",
       "--benchmark_repetitions needs a whole number from 1 to 999999999, got '3000000000'"},
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
  // The host facts that tell two machines apart, always there; a frequency is a JSON number, or
  // a string that says why there is none.
  for (const char* key : {"cpu.signature", "cpu.frequency_nominal_mhz", "cpu.frequency_max_mhz",
                          "host.hypervisor", "host.clocksource"}) {
    EXPECT_NE(r.out.find("\"" + std::string(key) + "\": "), std::string::npos) << key;
  }
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex("\"cpu\\.frequency_max_mhz\": ([0-9]+|\"unavailable \\(.+\\)\"),")))
      << r.out;
  r = run({"doctor"});
  EXPECT_EQ(r.status, 0) << r.err;
  for (const char* row : {"  Hypervisor ", "  Clock source (host timers) ", "  Signature ",
                          "  Frequency, nominal ", "  Frequency, max "}) {
    EXPECT_NE(r.out.find(row), std::string::npos) << row;
  }
}

// doctor shows gapbench's settings in force and flags one a run would refuse with the run's own
// line (GAPBENCH_MAX_CPU_ISA=bad: it said nothing, and showed no GAPBENCH_* setting at all).
TEST_F(Cli, DoctorShowsTheSettingsInForceAndFlagsABadOne) {
  setenv("GAPBENCH_MAX_CPU_ISA", "bad", 1);
  setenv("GAPBENCH_SEED", "7", 1);
  setenv("GAPBENCH_CACHE_BYTES", "18446744073709551615", 1);
  const Result text = run({"doctor"});
  const Result json = run({"doctor", "--json"});
  unsetenv("GAPBENCH_MAX_CPU_ISA");
  unsetenv("GAPBENCH_SEED");
  unsetenv("GAPBENCH_CACHE_BYTES");
  EXPECT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("\nSettings from the environment (GAPBENCH_*, OMP_NUM_THREADS)\n"),
            std::string::npos)
      << text.out;
  EXPECT_TRUE(std::regex_search(
      text.out, std::regex(R"(\n  GAPBENCH_MAX_CPU_ISA +bad \(refused: a run stops here\)\n)")))
      << text.out;
  EXPECT_TRUE(std::regex_search(text.out, std::regex(R"(\n  GAPBENCH_SEED +7\n)"))) << text.out;
  EXPECT_NE(text.out.find("  - [problem] environment variable GAPBENCH_MAX_CPU_ISA must be sse41,"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("  - [problem] environment variable GAPBENCH_CACHE_BYTES needs a whole"),
            std::string::npos)
      << text.out;
  EXPECT_EQ(json.status, 0) << json.err;
  EXPECT_NE(json.out.find("{\"name\": \"GAPBENCH_SEED\", \"value\": \"7\", \"refused\": \"\"}"),
            std::string::npos)
      << json.out;
  EXPECT_NE(json.out.find("{\"name\": \"GAPBENCH_MAX_CPU_ISA\", \"value\": \"bad\", \"refused\": "
                          "\"environment variable GAPBENCH_MAX_CPU_ISA must be"),
            std::string::npos)
      << json.out;
}

// ---- a full disk, closed streams, devices, FIFOs and links as results -----------------------

// A file-size limit (`ulimit -f` with SIGXFSZ ignored) fails the write as a full disk does: one
// line that says so, exit 2, the previous file kept and no partial file left.
TEST_F(Cli, AWriteThatFailsKeepsThePreviousResults) {
  const std::string out = dir_ + "/r.json";
  write_file(out, "previous");
  // stderr through a pipe, stdout to /dev/null: the limit is for the results file alone.
  int err_pipe[2];
  ASSERT_EQ(pipe(err_pipe), 0);
  const pid_t pid = start({kTinyFilter, kOneRepetition, "--benchmark_out=" + out}, [&] {
    dup2(err_pipe[1], 2);
    close(err_pipe[0]);
    close(err_pipe[1]);
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    close(null);
    const rlimit limit{1024, 1024};  // the document is larger (its context alone is)
    setrlimit(RLIMIT_FSIZE, &limit);
    signal(SIGXFSZ, SIG_IGN);
  });
  close(err_pipe[1]);
  std::string err;
  char chunk[4096];
  for (ssize_t n; (n = read(err_pipe[0], chunk, sizeof chunk)) > 0;) err.append(chunk, n);
  close(err_pipe[0]);
  const Result r = wait_for(pid);
  EXPECT_EQ(r.status, 2) << err;
  const std::regex said("gapbench: could not write [0-9]+ bytes to " + out + ": File too large; " +
                        out + " is left as it was\n");
  EXPECT_TRUE(std::regex_search(err, said)) << err;
  EXPECT_EQ(read_file(out), "previous");
  EXPECT_TRUE(partial_files(out).empty());
}

// Runs `script` as root in a private mount namespace (`unshare -m`), so that a tmpfs or a device
// node made there is never the machine's own. Returns false when that is not possible here.
bool run_unshared(const std::string& script) {
  if (geteuid() != 0 || std::system("unshare -m true 2>/dev/null") != 0) return false;
  const std::string command = "unshare -m sh -c '" + script + "'";
  return std::system(command.c_str()) == 0;
}

// The real thing: a full tmpfs, in a private mount namespace.
TEST_F(Cli, AFullDiskKeepsThePreviousResults) {
  const std::string disk = dir_ + "/disk";
  ASSERT_EQ(mkdir(disk.c_str(), 0755), 0);
  // One page, and the previous file holds it: the partial file gets no byte.
  const std::string script =
      "mount -t tmpfs -o size=4k gapbench-test " + disk + " || exit 1; printf previous > " + disk +
      "/r.json; \"" + GAPBENCH_EXE + "\" " + kTinyFilter + " " + kOneRepetition +
      " --benchmark_out=" + disk + "/r.json > " + dir_ + "/stdout 2> " + dir_ +
      "/stderr; echo $? > " + dir_ + "/status; cat " + disk + "/r.json > " + dir_ +
      "/after; ls -a " + disk + " > " + dir_ + "/listing";
  if (!run_unshared(script)) GTEST_SKIP() << "needs root and unshare -m (a private tmpfs)";
  EXPECT_EQ(read_file(dir_ + "/status"), "2\n");
  const std::string err = read_file(dir_ + "/stderr");
  EXPECT_TRUE(std::regex_search(err, std::regex("could not write [0-9]+ bytes to " + disk +
                                                "/r.json: No space left on device")))
      << err;
  EXPECT_EQ(read_file(dir_ + "/after"), "previous");
  EXPECT_EQ(read_file(dir_ + "/listing"), ".\n..\nr.json\n");
}

// A character device is written into, never renamed over: /dev/full (made in a private tmpfs,
// never the machine's own /dev) fails the write with one line, and stays a device.
TEST_F(Cli, ADeviceIsWrittenIntoNeverReplaced) {
  const std::string dev = dir_ + "/dev";
  ASSERT_EQ(mkdir(dev.c_str(), 0755), 0);
  const std::string script = "mount -t tmpfs gapbench-test " + dev + " && mknod " + dev +
                             "/full c 1 7 || exit 1; \"" + GAPBENCH_EXE + "\" " + kTinyFilter +
                             " " + kOneRepetition + " --benchmark_out=" + dev + "/full > " + dir_ +
                             "/stdout 2> " + dir_ + "/stderr; echo $? > " + dir_ +
                             "/status; test -c " + dev + "/full && echo device > " + dir_ +
                             "/kind; ls -a " + dev + " > " + dir_ + "/listing";
  if (!run_unshared(script)) GTEST_SKIP() << "needs root and unshare -m (a private tmpfs)";
  EXPECT_EQ(read_file(dir_ + "/status"), "2\n");
  const std::string err = read_file(dir_ + "/stderr");
  EXPECT_TRUE(std::regex_search(err, std::regex("gapbench: could not write [0-9]+ bytes to " + dev +
                                                "/full: No space left on device\n$")))
      << err;
  EXPECT_EQ(read_file(dir_ + "/kind"), "device\n");
  EXPECT_EQ(read_file(dir_ + "/listing"), ".\n..\nfull\n");
}

// A FIFO gets the document through it and stays a FIFO.
TEST_F(Cli, AFifoGetsTheResultsAndStaysAFifo) {
  const std::string fifo = dir_ + "/results.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  const int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // there before the writer
  ASSERT_GE(reader, 0);
  const Result r = run({kTinyFilter, kOneRepetition, "--benchmark_out=" + fifo});
  EXPECT_EQ(r.status, 0) << r.err;
  std::string json;
  char chunk[4096];
  for (ssize_t n; (n = read(reader, chunk, sizeof chunk)) > 0;) json.append(chunk, n);
  close(reader);
  EXPECT_TRUE(gapbench::complete_json_document(json)) << json;
  EXPECT_NE(json.find("transfer/memcpy/cpu/bytes:4096"), std::string::npos);
  struct stat st {};
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_TRUE(partial_files(fifo).empty());
}

// --benchmark_out=/dev/fd/1 (or /dev/stdout) means gapbench's own stdout, even when that is a
// file: the document follows the console output there, instead of replacing the file.
TEST_F(Cli, StdoutAsResultsFollowsTheConsoleOutput) {
  const Result r = run({kTinyFilter, kOneRepetition, "--benchmark_out=/dev/fd/1"});
  EXPECT_EQ(r.status, 0) << r.err;
  const auto table = r.out.find("transfer/memcpy/cpu/bytes:4096/real_time ");
  const auto json = r.out.find("{\n  \"context\"");
  ASSERT_NE(table, std::string::npos) << r.out;
  ASSERT_NE(json, std::string::npos) << r.out;
  EXPECT_LT(table, json);
  EXPECT_TRUE(gapbench::complete_json_document(r.out.substr(json)));
}

// With stdout or stderr closed (`>&-`), the results file must not take its descriptor: the
// console text would land inside the JSON.
TEST_F(Cli, ClosedStandardStreamsStayOutOfTheResults) {
  const std::string out = dir_ + "/r.json";
  for (const std::vector<int>& closed : std::vector<std::vector<int>>{{1}, {2}, {0, 1, 2}}) {
    std::string which;
    for (int fd : closed) which += std::to_string(fd) + " ";
    write_file(out, "previous");
    const Result r = wait_for(start({kTinyFilter, kOneRepetition, "--benchmark_out=" + out}, [&] {
      for (int fd : closed) close(fd);
    }));
    EXPECT_EQ(r.status, 0) << "closed " << which << r.err;
    const std::string json = read_file(out);
    EXPECT_TRUE(gapbench::complete_json_document(json)) << "closed " << which << json;
    EXPECT_EQ(json.find("Running "), std::string::npos) << "console text in the results";
  }
}

// ---- the filter ---------------------------------------------------------------------------------

// Google Benchmark's std::regex recurses once per character of a plain filter; a filter that
// overflows the stack is refused, with one line, before anything is written. The limit is the
// stack's, found by matching in a child: with 8 MiB a 50,000-character filter is refused; with
// 256 MiB the same filter is matched (and matches nothing).
TEST_F(Cli, AFilterTheMatcherCannotTakeIsRefusedBeforeAnythingIsWritten) {
  const std::string out = dir_ + "/r.json";
  write_file(out, "previous");
  const std::string filter = "--benchmark_filter=" + std::string(50000, 'x');
  rlimit stack{};
  ASSERT_EQ(getrlimit(RLIMIT_STACK, &stack), 0);
  const auto with_stack = [&](rlim_t bytes) {
    return [bytes, stack] {
      const rlimit limit{bytes, stack.rlim_max};
      setrlimit(RLIMIT_STACK, &limit);
    };
  };
  Result r = wait_for(start({filter, "--benchmark_out=" + out}, with_stack(8 << 20)));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("(50000 characters) is more than Google Benchmark's regex matcher can "
                       "take: matching it overflows the stack (ulimit -s: 8192 KiB)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(read_file(out), "previous");
  EXPECT_TRUE(partial_files(out).empty());

  if (stack.rlim_max != RLIM_INFINITY && stack.rlim_max < (256u << 20)) return;
  r = wait_for(start({filter, "--benchmark_out=" + out}, with_stack(256u << 20)));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("(50000 characters) matches no benchmark"), std::string::npos) << r.err;
}

// A pattern std::regex refuses is one line: no "matches no benchmark" after it.
TEST_F(Cli, AnInvalidFilterIsOneLine) {
  const std::string out = dir_ + "/r.json";
  write_file(out, "previous");
  const Result r = run({"--benchmark_filter=(", "--benchmark_out=" + out});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("gapbench: --benchmark_filter '(' cannot be used as a regular expression: "
                       "Mismatched '(' and ')'"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(read_file(out), "previous");
  EXPECT_TRUE(partial_files(out).empty());
}

// ---- doctor
// --------------------------------------------------------------------------------------

TEST_F(Cli, DoctorFailsWhenItsReportCannotBeWritten) {
  Result r = wait_for(start({"doctor"}, [] { close(1); }));
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "gapbench doctor: standard output is closed; there is nowhere to write the "
            "report\n");
  if (access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no /dev/full here";
  // Opened for writing only, as `> /dev/full` does: the device itself is untouched.
  r = wait_for(start({"doctor", "--json"}, [] {
    const int full = open("/dev/full", O_WRONLY);
    dup2(full, 1);
    close(full);
  }));
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(std::regex_match(r.err, std::regex("gapbench doctor: could not write [0-9]+ bytes to "
                                                 "standard output: No space left on device\n")))
      << r.err;
}

}  // namespace
