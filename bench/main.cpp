// gapbench: every family's benchmarks on Google Benchmark, plus `gapbench doctor`.
//
//   gapbench [--profile=quick|full] [--seed=N] [--peak=FILE] [Google Benchmark flags]
//   gapbench doctor [--json]
//
// Exit status: 0 every benchmark ran or was skipped with a reason; 1 a benchmark failed (its
// error is in the output and the results file); 2 bad arguments, an unwritable results path or
// results that could not be written (a full disk), or a filter that matches no benchmark or that
// the matcher cannot take.
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench/doctor.h"
#include "bench/overhead.h"
#include "bench/peak.h"
#include "fixtures/cpu_accounting.h"
#include "fixtures/doctor_rules.h"
#include "fixtures/harness.h"
#include "fixtures/machine.h"
#include "fixtures/results_file.h"
#include "fixtures/settings.h"
#include "fixtures/setup_cache.h"
#include "kernels/base/data.h"

namespace {

constexpr const char* kUsage =
    R"(usage: gapbench [--profile=quick|full] [--seed=N] [--peak=FILE] [benchmark flags]
       gapbench doctor [--json]

Runs gapbench's benchmark families (CPU and GPU variants). Benchmarks are named
<family>/<variant>/<cpu|gpu>/<axis>:<value>/...; GPU variants that cannot run here
report "skipped: <reason>".

  --profile=quick|full  sizes and repetitions: quick (default; minutes on 2 cores) or full
                        (every size, 10 repetitions, for baselines). Env: GAPBENCH_PROFILE.
  --seed=N              seed of the random input data (default 42). Env: GAPBENCH_SEED.
  --peak=FILE           the results file of the peak/ run this run is judged against
                        (the bench workflow's peak.json), beside --benchmark_out's file;
                        recorded in the context as peak.results_file.
  doctor                describe this machine: GPU, driver, libraries, PCIe, clocks, CPU.

Google Benchmark's flags work as usual, e.g. --benchmark_filter=REGEX,
--benchmark_out=FILE (written atomically: a failed or killed run leaves FILE as it was;
a device or FIFO such as /dev/stdout is written into),
--benchmark_repetitions=N, --benchmark_min_time=SECONDS, --benchmark_list_tests=true.

Exit status: 0 all ran or skipped with a reason, 1 a benchmark failed, 2 usage error or
results that could not be written.
)";

struct UsageError {
  std::string message;
};

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

std::string value_of(const std::string& arg) { return arg.substr(arg.find('=') + 1); }

std::string lower_case(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// Google Benchmark's reading of a boolean flag: bare, or any value but 0/f/false/n/no.
bool flag_is_true(const std::string& arg) {
  const auto eq = arg.find('=');
  if (eq == std::string::npos) return true;
  const std::string v = lower_case(arg.substr(eq + 1));
  return !(v == "0" || v == "f" || v == "false" || v == "n" || v == "no");
}

// Google Benchmark exits on its own (status 0 or 1, no message of ours) for a bad format;
// refuse it first, like every other bad flag.
void check_format(const std::string& arg) {
  const std::string v = value_of(arg);
  if (v != "console" && v != "json" && v != "csv") {
    throw UsageError{arg.substr(0, arg.find('=')) + " must be console, json or csv, got '" + v +
                     "'"};
  }
}

// Google Benchmark also reads each flag from the environment (BENCHMARK_FORMAT for
// --benchmark_format, ...): a bad value there is refused the same way.
std::optional<std::string> from_environment(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(name) + "=" + value;
}

// A number Google Benchmark would take: all of `text`, read as a double.
std::optional<double> number(const std::string& text) {
  std::size_t used = 0;
  try {
    const double v = std::stod(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// Google Benchmark 1.8 reads --benchmark_min_time with a unit ("0.5s", "100x"); 1.7 as seconds.
constexpr bool kMinTimeTakesUnits = GAPBENCH_GBENCH_VERSION_MAJOR > 1 ||
                                    (GAPBENCH_GBENCH_VERSION_MAJOR == 1 &&
                                     GAPBENCH_GBENCH_VERSION_MINOR >= 8);

bool whole_number(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos &&
         text.size() <= 9;
}

// Google Benchmark takes negative or zero counts and times without a word, then runs nothing
// (--benchmark_repetitions=0 wrote an empty results file) or dies inside ("vector::reserve").
// `setting` is "--flag=value" or "ENV_VAR=value".
void check_number(const std::string& setting) {
  const auto eq = setting.find('=');
  const std::string name = setting.substr(0, eq), v = setting.substr(eq + 1);
  const bool is_flag = starts_with(name, "--");
  const std::string flag = is_flag ? name : "environment variable " + name;
  const std::string key = lower_case(is_flag ? name.substr(2) : name);
  if (key == "benchmark_repetitions") {
    if (!whole_number(v) || std::stol(v) < 1) {
      throw UsageError{flag + " needs a whole number from 1 to 999999999, got '" + v + "'"};
    }
  } else if (key == "benchmark_min_time") {
    // Seconds ("0.5"; from Google Benchmark 1.8 also "0.5s", or an iteration count "100x").
    const bool units = kMinTimeTakesUnits && !v.empty() && (v.back() == 's' || v.back() == 'x');
    const std::string body = units ? v.substr(0, v.size() - 1) : v;
    const auto seconds = number(body);
    const bool ok = units && v.back() == 'x' ? whole_number(body) && std::stol(body) >= 1
                                             : seconds && *seconds > 0;
    if (!ok) {
      throw UsageError{flag + " needs a time in seconds above 0 (e.g. 0.5" +
                       (kMinTimeTakesUnits ? " or 0.5s) or an iteration count (e.g. 100x)" : ")") +
                       ", got '" + v + "'"};
    }
  } else if (key == "benchmark_min_warmup_time") {
    const auto seconds = number(v);
    if (!seconds || *seconds < 0) {
      throw UsageError{flag + " needs a time in seconds of 0 or more, got '" + v + "'"};
    }
  }
}

// `setting` names where the value came from: "--seed" or "environment variable GAPBENCH_SEED".
std::uint64_t seed_setting(const std::string& text, const std::string& setting) {
  try {
    return gapbench::parse_seed(text, setting);
  } catch (const std::invalid_argument& e) {
    throw UsageError{e.what()};
  }
}

// The peak/ run this one is judged against (--peak=FILE, a path from `results_path`'s folder)
// must be there, a results file, and this machine's: a family's file that names a missing one
// would read as judged when it is not, and another machine's, or this one's under another
// DNNL_MAX_CPU_ISA or OPENBLAS_CORETYPE (which machine.id holds), judges it by ceilings not its
// own. A folder, a FIFO or a device is refused unopened (a FIFO would wait, /dev/zero never end).
void check_peak_file(const std::string& given, const std::string& results_path,
                     const std::string& this_machine) {
  const auto slash = results_path.rfind('/');
  const std::string path = given.front() == '/' || slash == std::string::npos
                               ? given
                               : results_path.substr(0, slash + 1) + given;
  const std::string refused = "--peak=" + given + ": " + path;
  struct stat st {};
  if (access(path.c_str(), R_OK) != 0 || stat(path.c_str(), &st) != 0) {
    throw UsageError{refused + " cannot be read (run peak/ into it first)"};
  }
  if (!S_ISREG(st.st_mode)) {
    const char* kind = S_ISDIR(st.st_mode)    ? "a folder"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "a device";
    throw UsageError{refused + " is " + kind + ", not a results file (give peak/'s results file)"};
  }
  // Google Benchmark writes the context first: its machine.id is within the first 1 MiB.
  std::ifstream in(path, std::ios::binary);
  std::string head(std::size_t{1} << 20, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  const std::string key = "\"machine.id\": \"";
  const auto at = head.find(key);
  const auto end = at == std::string::npos ? at : head.find('"', at + key.size());
  if (end == std::string::npos) {
    throw UsageError{refused + " is not a gapbench results file (no machine.id in its context)"};
  }
  const std::string its = head.substr(at + key.size(), end - at - key.size());
  if (its != this_machine) {
    throw UsageError{refused + " is another machine's results file (machine.id " + its +
                     "; this machine's is " + this_machine + "): run peak/ here into it first"};
  }
}

gapbench::Profile parse_profile(const std::string& text, const std::string& setting) {
  try {
    return gapbench::Profile::parse(text);
  } catch (const std::invalid_argument& e) {
    throw UsageError{setting + ": " + e.what()};
  }
}

// gapbench's own flags, taken out of argv; the rest goes to Google Benchmark.
struct Options {
  gapbench::Profile profile;
  std::uint64_t seed = gapbench::kDefaultSeed;
  std::optional<std::string> results_path;  // from --benchmark_out
  std::optional<std::string> peak_results;  // --peak: the peak/ run's file, beside results_path
  std::string results_format = "json";      // --benchmark_out_format
  bool listing = false;                     // --benchmark_list_tests: names only, nothing runs
  std::vector<std::string> benchmark_args;
};

Options parse_options(int argc, char** argv) {
  Options o;
  if (const char* env = std::getenv("GAPBENCH_PROFILE"); env && *env)
    o.profile = parse_profile(env, "environment variable GAPBENCH_PROFILE");
  if (const char* env = std::getenv("GAPBENCH_SEED"); env && *env)
    o.seed = seed_setting(env, "environment variable GAPBENCH_SEED");
  try {
    gapbench::check_omp_threads();
  } catch (const std::invalid_argument& e) {
    throw UsageError{e.what()};
  }
  // Google Benchmark would read BENCHMARK_OUT itself and write that file non-atomically.
  if (const char* env = std::getenv("BENCHMARK_OUT"); env && *env) o.results_path = env;
  unsetenv("BENCHMARK_OUT");
  for (const char* name : {"BENCHMARK_FORMAT", "BENCHMARK_OUT_FORMAT"}) {
    if (const auto setting = from_environment(name)) check_format(*setting);
  }
  if (const auto setting = from_environment("BENCHMARK_OUT_FORMAT"))
    o.results_format = value_of(*setting);
  for (const char* name :
       {"BENCHMARK_REPETITIONS", "BENCHMARK_MIN_TIME", "BENCHMARK_MIN_WARMUP_TIME"}) {
    if (const auto setting = from_environment(name)) check_number(*setting);
  }
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (starts_with(arg, "--profile=")) {
      o.profile = parse_profile(value_of(arg), "--profile");
    } else if (starts_with(arg, "--seed=")) {
      o.seed = seed_setting(value_of(arg), "--seed");
    } else if (starts_with(arg, "--peak=")) {
      o.peak_results = value_of(arg);
      if (o.peak_results->empty()) throw UsageError{"--peak needs a file name: --peak=FILE"};
    } else if (arg == "--profile" || arg == "--seed" || arg == "--peak") {
      throw UsageError{arg + " needs a value: " + arg + "=..."};
    } else if (starts_with(arg, "--benchmark_out=")) {
      o.results_path = value_of(arg);
    } else {
      if (starts_with(arg, "--benchmark_list_tests")) o.listing = flag_is_true(arg);
      if (starts_with(arg, "--benchmark_format=") || starts_with(arg, "--benchmark_out_format=")) {
        check_format(arg);
        if (starts_with(arg, "--benchmark_out_format=")) o.results_format = value_of(arg);
      }
      if (starts_with(arg, "--benchmark_repetitions") || starts_with(arg, "--benchmark_min_")) {
        check_number(arg.find('=') == std::string::npos ? arg + "=" : arg);
      }
      o.benchmark_args.push_back(arg);
    }
  }
  if (o.listing) o.results_path.reset();  // a listing writes no results
  return o;
}

std::string min_time_flag(double seconds) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "--benchmark_min_time=%g%s", seconds,
                kMinTimeTakesUnits ? "s" : "");
  return buf;
}

// stability.sgemm_gflops_<when>, stability.read_gbps_<when> and the FMA loop's
// stability.fma_one_gflops_<when> and stability.fma_all_gflops_<when> (with
// stability.fma_threads), given to `add`.
template <class Add>
void add_ceilings(const char* when, Add&& add) {
  const gapbench::Ceilings c = gapbench::probe_ceilings();
  const auto figure = [&](const std::string& key, const char* format, double value) {
    char text[32];
    std::snprintf(text, sizeof text, format, value);
    add(key + when, text);
  };
  figure("stability.sgemm_gflops_", "%.1f", c.sgemm_gflops);
  figure("stability.read_gbps_", "%.2f", c.read_gbps);
  figure("stability.fma_one_gflops_", "%.1f", c.fma_one_gflops);
  figure("stability.fma_all_gflops_", "%.1f", c.fma_all_gflops);
  if (std::string(when) == "start") add("stability.fma_threads", std::to_string(c.fma_threads));
}

// A filter as messages quote it: whole, or its start and its length when it is long.
std::string quoted(const std::string& filter) {
  constexpr std::size_t kShown = 100;
  if (filter.size() <= kShown) return "'" + filter + "'";
  return "'" + filter.substr(0, kShown) + "...' (" + std::to_string(filter.size()) + " characters)";
}

// Stops Google Benchmark after it has matched the filter, before the first benchmark runs.
class StopBeforeRunning : public benchmark::BenchmarkReporter {
 public:
  StopBeforeRunning() {
    SetOutputStream(&out_);
    SetErrorStream(&err_);
  }
  bool ReportContext(const Context&) override { return false; }
  void ReportRuns(const std::vector<Run>&) override {}
  std::string errors() const { return err_.str(); }
  std::string names() const { return out_.str(); }  // what --benchmark_list_tests printed

 private:
  std::ostringstream out_, err_;
};

// What a filter selects: how many benchmarks, and whether peak/ and other families are among them.
struct FilterMatch {
  std::size_t matched = 0;
  bool peak = false;
  bool others = false;  // a family other than peak/
};

// Refuses the filter when Google Benchmark's matcher cannot take it, before anything is written,
// and says what it selects (a filter that matches nothing: `matched` 0). The matcher is
// std::regex, which compiles recursively, a stack frame per character of a plain filter: a long
// one overflows the stack and kills gapbench (20,000 characters did with an 8 MiB stack). The
// limit depends on the pattern and on `ulimit -s`, so it is not guessed: Google Benchmark's own
// matching runs first in a child process, which has this process's stack and stack limit, and
// fails exactly where the run would. The child lists the names it matched
// (--benchmark_list_tests), so which families a run holds is known exactly, not read off the
// pattern.
FilterMatch check_filter(const std::string& filter) {
  // Where the check cannot be made, the run itself will tell; assume it holds everything.
  const FilterMatch unknown{1, true, true};
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return unknown;
  const pid_t pid = fork();
  if (pid < 0) {
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return unknown;
  }
  if (pid == 0) {
    close(pipe_fds[0]);
    const rlimit no_core{0, 0};  // a crash here is the answer, not a bug to keep a core of
    setrlimit(RLIMIT_CORE, &no_core);
    // The filter stays as parsed; listing only prints the matched names into the reporter.
    char program[] = "gapbench", list[] = "--benchmark_list_tests=true";
    char* list_args[] = {program, list, nullptr};
    int list_argc = 2;
    benchmark::Initialize(&list_argc, list_args);
    StopBeforeRunning reporter;
    const std::size_t matched = benchmark::RunSpecifiedBenchmarks(&reporter);
    bool peak = false, others = false;
    std::istringstream names(reporter.names());
    for (std::string name; std::getline(names, name);) {
      (name.rfind("peak/", 0) == 0 ? peak : others) = true;
    }
    try {
      gapbench::write_all(pipe_fds[1],
                          std::to_string(matched) + " " + (peak ? "1" : "0") + " " +
                              (others ? "1" : "0") + "\n" + reporter.errors(),
                          "");
    } catch (const std::exception&) {
    }
    _exit(0);
  }
  close(pipe_fds[1]);
  std::string said;
  char chunk[4096];
  for (ssize_t n; (n = read(pipe_fds[0], chunk, sizeof chunk)) != 0;) {
    if (n > 0) said.append(chunk, static_cast<std::size_t>(n));
    if (n < 0 && errno != EINTR) break;
  }
  close(pipe_fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    std::string why = std::string("it died of ") + strsignal(WTERMSIG(status));
    if (WTERMSIG(status) == SIGSEGV) {
      rlimit stack{};
      getrlimit(RLIMIT_STACK, &stack);
      why = "matching it overflows the stack (ulimit -s: " +
            (stack.rlim_cur == RLIM_INFINITY ? std::string("unlimited")
                                             : std::to_string(stack.rlim_cur / 1024) + " KiB") +
            "); shorten it";
    }
    throw UsageError{"--benchmark_filter " + quoted(filter) +
                     " is more than Google Benchmark's regex matcher can take: " + why};
  }
  const auto newline = said.find('\n');
  FilterMatch match;
  int peak = 0, others = 0;
  if (!WIFEXITED(status) || newline == std::string::npos ||
      std::sscanf(said.c_str(), "%zu %d %d", &match.matched, &peak, &others) != 3) {
    return unknown;
  }
  match.peak = peak != 0;
  match.others = others != 0;
  if (match.matched != 0) return match;
  std::string error = said.substr(newline + 1);
  while (!error.empty() && std::isspace(static_cast<unsigned char>(error.back()))) error.pop_back();
  // Google Benchmark says either "Failed to match any benchmarks against regex: ..." or, for a
  // pattern std::regex refuses, "Could not compile benchmark re: <why>": a syntax error, or one
  // over std::regex's own cap (100,000 automaton states, about as many characters).
  const std::string compile_error = "Could not compile benchmark re: ";
  if (const auto at = error.find(compile_error); at != std::string::npos) {
    throw UsageError{"--benchmark_filter " + quoted(filter) + " cannot be used as a regular " +
                     "expression: " + error.substr(at + compile_error.size())};
  }
  return match;
}

void say_filter_matches_nothing(const std::string& filter,
                                const std::vector<std::string>& families) {
  std::string list;
  for (const auto& f : families) list += (list.empty() ? "" : ", ") + f;
  std::fprintf(stderr, "gapbench: the filter %s matches no benchmark (families: %s)\n",
               quoted(filter).c_str(), list.c_str());
}

int run(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  gapbench::set_run_seed(options.seed);

  // The profile's defaults come first, so the user's own flags override them.
  std::vector<std::string> args = {
      argv[0], "--benchmark_repetitions=" + std::to_string(options.profile.repetitions()),
      min_time_flag(options.profile.min_time_seconds())};
  args.insert(args.end(), options.benchmark_args.begin(), options.benchmark_args.end());
  // Google Benchmark takes a file reporter only with an output file of its own, which it opens;
  // ours writes into memory (see BufferedFileReporter), so that file is /dev/null.
  if (options.results_path) args.push_back("--benchmark_out=/dev/null");
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  int cargc = static_cast<int>(cargs.size());
  benchmark::Initialize(&cargc, cargs.data());
  // Google Benchmark has printed "error: unrecognized command-line flag: ..." already.
  if (benchmark::ReportUnrecognizedArguments(cargc, cargs.data())) return 2;

  const std::vector<std::string> families = gapbench::register_families(options.profile);
  const std::string filter = benchmark::GetBenchmarkFilter();  // BENCHMARK_FILTER too
  const FilterMatch match = check_filter(filter);
  if (match.matched == 0) {
    say_filter_matches_nothing(filter, families);
    return 2;
  }
  // The partial file is made before anything runs: an unwritable place is refused up front.
  std::unique_ptr<gapbench::AtomicResultsFile> results;
  std::unique_ptr<gapbench::BufferedFileReporter> file_reporter;
  if (options.results_path) {
    try {
      results = std::make_unique<gapbench::AtomicResultsFile>(*options.results_path);
    } catch (const std::runtime_error& e) {
      throw UsageError{e.what()};
    }
    gapbench::remove_partial_if_abandoned(*results);
    file_reporter = std::make_unique<gapbench::BufferedFileReporter>(options.results_format);
  }

  const std::vector<gapbench::Fact> facts = gapbench::machine_facts();
  if (options.peak_results && !options.listing) {
    check_peak_file(*options.peak_results, options.results_path.value_or(""),
                    gapbench::fact(facts, "machine.id"));
  }
  for (const auto& f : facts) benchmark::AddCustomContext(f.key, f.value);
  // doctor's findings about this machine, as "finding.<id>": "<severity>: <text>". The report
  // quotes them rather than judging the facts again.
  for (const auto& f : gapbench::machine_findings(facts))
    benchmark::AddCustomContext("finding." + f.id,
                                gapbench::severity_name(f.severity) + ": " + f.text);
  if (options.peak_results) benchmark::AddCustomContext("peak.results_file", *options.peak_results);
  // A family's run that includes peak/, or is judged against a peak/ run (every family's bench
  // run), measures two ceilings at its start and its end, so the report can tell a machine that
  // changed speed during the run. Not in a peak/-only run, whose rows are what the probes would
  // measure again (a third of its time).
  bool probe = results && !options.listing && match.others && (match.peak || options.peak_results);
  if (probe) {
    try {
      add_ceilings("start", [](const std::string& k, const std::string& v) {
        benchmark::AddCustomContext(k, v);
      });
    } catch (const std::exception& e) {  // never the reason a run does not happen
      std::fprintf(stderr, "gapbench: warning: the ceilings were not probed: %s\n", e.what());
      probe = false;
    }
  }
  benchmark::AddCustomContext("gapbench.profile", options.profile.name());
  benchmark::AddCustomContext("gapbench.seed", std::to_string(options.seed));
  // The version of gapbench's additions to Google Benchmark's JSON; the report checks it.
  benchmark::AddCustomContext("gapbench.schema", "2");

  // What other processes and the hypervisor took of the CPUs while the benchmarks ran.
  const gapbench::CpuClock run_start = gapbench::read_cpu_clock();
  const std::size_t ran = benchmark::RunSpecifiedBenchmarks(nullptr, file_reporter.get());
  const gapbench::CpuClock run_end = gapbench::read_cpu_clock();
  benchmark::Shutdown();
  gapbench::release_setup_cache();

  if (ran == 0) {
    say_filter_matches_nothing(filter, families);
    return 2;
  }
  // Every benchmark matched but none ran a body (no repetitions): nothing to replace results with.
  if (!options.listing && gapbench::run_count() == 0) {
    std::fprintf(stderr, "gapbench: no benchmark ran (%zu matched, none was run)%s\n", ran,
                 results ? ("; " + results->path() + " is left as it was").c_str() : "");
    return 2;
  }
  if (results) {
    std::string text = file_reporter->text();
    if (const auto share = gapbench::cpu_share(run_start, run_end)) {
      text = gapbench::with_context(text, gapbench::cpu_share_context(*share));
    }
    if (probe) {
      try {  // the run's results matter more than the probe: a failure here only warns
        std::vector<std::pair<std::string, std::string>> end;
        add_ceilings("end",
                     [&](const std::string& k, const std::string& v) { end.emplace_back(k, v); });
        text = gapbench::with_context(text, end);
      } catch (const std::exception& e) {
        std::fprintf(stderr,
                     "gapbench: warning: the ceilings at the run's end were not recorded: %s\n",
                     e.what());
      }
    }
    results->commit(text, options.results_format == "json");
  }
  if (const int failed = gapbench::failure_count(); failed > 0) {
    std::fprintf(stderr,
                 "gapbench: %d benchmark run(s) failed; their errors are in the output above%s\n",
                 failed, results ? (" and in " + results->path()).c_str() : "");
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Before any file is opened: a closed stdout would otherwise be the results file's descriptor.
  const std::vector<int> closed = gapbench::reopen_closed_standard_streams();
  if (argc > 1 && std::string(argv[1]) == "doctor") {
    const bool stdout_closed = std::find(closed.begin(), closed.end(), 1) != closed.end();
    return gapbench::run_doctor(argc - 2, argv + 2, stdout_closed);
  }
  // Hidden, not in --help: the child process overhead/startup runs to time CUDA start-up.
  if (argc > 1 && std::string(argv[1]) == "startup-probe") {
    return gapbench::overhead::run_startup_probe(argc - 2, argv + 2);
  }
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
  }
  // Each result line reaches a pipe or file as soon as it is printed (`gapbench | tee log`).
  std::cout.setf(std::ios::unitbuf);
  try {
    return run(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "gapbench: %s (try --help)\n", e.message.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gapbench: %s\n", e.what());
    return 2;
  }
}
