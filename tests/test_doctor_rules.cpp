#include "fixtures/doctor_rules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "fixtures/machine.h"
#include "tests/healthy_facts.h"

namespace gapbench {

// gtest prints a Severity by its name.
void PrintTo(Severity severity, std::ostream* out) { *out << severity_name(severity); }

namespace {

bool any_contains(const std::vector<Finding>& findings, const std::string& part) {
  return std::any_of(findings.begin(), findings.end(),
                     [&](const Finding& f) { return f.text.find(part) != std::string::npos; });
}

std::vector<std::string> ids(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const Finding& f : findings) out.push_back(f.id + ":" + severity_name(f.severity));
  return out;
}

// ---- severities -------------------------------------------------------------------------------

// The words are what doctor prints and the results files carry; the order is the report's
// (gapbench_report.core.catalogue.SEVERITIES), and machine_findings lists findings in it.
TEST(DoctorSeverity, NamesAndOrderAreTheReports) {
  EXPECT_EQ(severity_name(Severity::problem), "problem");
  EXPECT_EQ(severity_name(Severity::warning), "warning");
  EXPECT_EQ(severity_name(Severity::info), "info");
  EXPECT_LT(Severity::problem, Severity::warning);
  EXPECT_LT(Severity::warning, Severity::info);
}

// ---- findings ---------------------------------------------------------------------------------

TEST(MachineFindings, HealthyMachineHasNone) {
  const std::vector<Finding> findings = machine_findings(healthy_facts());
  EXPECT_TRUE(findings.empty()) << findings.front().text;
}

TEST(MachineFindings, NoGpuOnThisMachineIsExplained) {
  const std::vector<Fact> facts = machine_facts();
  const std::string status = fact(facts, "gpu.status");
  if (status == "ok") GTEST_SKIP() << "this machine has a usable GPU";
  const std::vector<Finding> findings = machine_findings(facts);
  EXPECT_TRUE(any_contains(findings, "CPU variants still run"))
      << ::testing::PrintToString(ids(findings));
  if (status != "built without CUDA") {
    EXPECT_TRUE(any_contains(findings, status)) << ::testing::PrintToString(ids(findings));
  }
}

// A runtime that could not load has no version: the one compiled against stands in. (The report
// once judged without this fallback; the rule now lives here alone and the report quotes it.)
TEST(MachineFindings, DriverOlderThanRuntimeNamesBoth) {
  for (const char* loaded : {"13.0", ""}) {
    std::vector<Fact> facts = healthy_facts();
    set(facts, "cuda.driver_version", "12.4");
    set(facts, "cuda.runtime_version", loaded);
    const auto findings = machine_findings(facts);
    ASSERT_EQ(findings.size(), 1u) << "runtime loaded: " << loaded;
    EXPECT_EQ(findings[0].id, "driver_older_than_runtime");
    EXPECT_NE(findings[0].text.find("12.4"), std::string::npos) << findings[0].text;
    EXPECT_NE(findings[0].text.find("runtime 13.0"), std::string::npos) << findings[0].text;
  }
}

TEST(MachineFindings, AGpuWithoutTensorCoresIsToldWhatColabsHas) {
  std::vector<Fact> facts = healthy_facts();
  set(facts, "gpu.name", "NVIDIA GeForce GTX 1080");
  set(facts, "gpu.compute_capability", "6.1");
  set(facts, "gpu.tensor_cores", tensor_core_precisions(6, 1));
  const auto findings = machine_findings(facts);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].id, "no_tensor_cores");
  EXPECT_NE(findings[0].text.find("6.1"), std::string::npos) << findings[0].text;
  EXPECT_NE(findings[0].text.find("T4"), std::string::npos) << findings[0].text;
  // Silent with tensor cores (healthy_facts' H100) and without a usable GPU.
  set(facts, "gpu.status", "no NVIDIA driver (libcuda.so.1 not found)");
  for (const auto& f : machine_findings(facts)) EXPECT_NE(f.id, "no_tensor_cores");
}

TEST(MachineFindings, LibraryMismatchNamesBothVersions) {
  std::vector<Fact> facts = healthy_facts();
  set(facts, "cudnn.version_loaded", "9.1.0");
  const auto findings = machine_findings(facts);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NE(findings[0].text.find("cuDNN"), std::string::npos);
  EXPECT_NE(findings[0].text.find("9.1.0"), std::string::npos);
  EXPECT_NE(findings[0].text.find("9.19.0"), std::string::npos);
}

TEST(MachineFindings, DownshiftedPcieLinkQuotesBothAndSaysRecheckUnderLoad) {
  std::vector<Fact> facts = healthy_facts();
  set(facts, "pcie.gen_current", "1");
  set(facts, "pcie.bandwidth_current_gbps", "4.00");
  const auto findings = machine_findings(facts);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NE(findings[0].text.find("gen 1 x16"), std::string::npos) << findings[0].text;
  EXPECT_NE(findings[0].text.find("gen 5 x16"), std::string::npos) << findings[0].text;
  EXPECT_NE(findings[0].text.find("idle"), std::string::npos) << findings[0].text;

  std::vector<Fact> narrow = healthy_facts();
  set(narrow, "pcie.width_current", "4");
  EXPECT_TRUE(any_contains(machine_findings(narrow), "x4"));
}

TEST(MachineFindings, ThrottlingOtherThanIdleIsReported) {
  std::vector<Fact> idle = healthy_facts();
  set(idle, "gpu.throttle_reasons", "GpuIdle");
  EXPECT_TRUE(machine_findings(idle).empty());

  std::vector<Fact> capped = healthy_facts();
  set(capped, "gpu.throttle_reasons", "GpuIdle,SwPowerCap,HwSlowdown");
  const auto findings = machine_findings(capped);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NE(findings[0].text.find("SwPowerCap, HwSlowdown"), std::string::npos) << findings[0].text;
  EXPECT_EQ(findings[0].text.find("GpuIdle"), std::string::npos) << findings[0].text;
}

TEST(MachineFindings, CpuGovernorAndBuildTypes) {
  std::vector<Fact> facts = healthy_facts();
  set(facts, "cpu.governor", "powersave");
  set(facts, "gbench.library_build_type", "debug");
  set(facts, "gapbench.build_type", "debug");
  const auto findings = machine_findings(facts);
  ASSERT_EQ(findings.size(), 3u) << ::testing::PrintToString(ids(findings));
  EXPECT_TRUE(any_contains(findings, "\"powersave\""));
  EXPECT_TRUE(any_contains(findings, "Library was built as DEBUG"));
  EXPECT_TRUE(any_contains(findings, "-DCMAKE_BUILD_TYPE=Release"));

  std::vector<Fact> no_cpufreq = healthy_facts();
  set(no_cpufreq, "cpu.governor", "unavailable (no cpufreq)");
  EXPECT_TRUE(machine_findings(no_cpufreq).empty());
  set(no_cpufreq, "cpu.frequency_scaling", "enabled");
  EXPECT_TRUE(any_contains(machine_findings(no_cpufreq), "frequency scaling enabled"));
}

TEST(MachineFindings, CappedCpuLibrariesAreAWarningThatNamesTheCaps) {
  std::vector<Fact> facts = healthy_facts();
  set(facts, "cpu.isa", "sse4_2 avx avx2 fma avx512f avx512_vnni");
  set(facts, "onednn.isa", "avx2");
  set(facts, "onednn.isa_cap", "AVX2");
  set(facts, "openblas.coretype", "Haswell");
  set(facts, "openblas.core", "Haswell");
  const auto findings = machine_findings(facts);
  ASSERT_EQ(ids(findings), std::vector<std::string>{"cpu_library_capped:warning"});
  EXPECT_TRUE(any_contains(findings, "DNNL_MAX_CPU_ISA=AVX2 holds oneDNN at avx2"));
  EXPECT_TRUE(any_contains(findings, "OPENBLAS_CORETYPE=Haswell gives OpenBLAS the Haswell"));
}

// A cap that holds oneDNN nowhere is no warning: misspelt (oneDNN ignores it), above the CPU's
// best or at it. Each is said, as information.
TEST(MachineFindings, ACapThatBindsNothingIsNoWarning) {
  for (const char* cap : {"bad", "AVX512_CORE_AMX", "AVX2", "avx2"}) {
    std::vector<Fact> facts = healthy_facts();
    set(facts, "cpu.isa", "sse4_2 avx avx2 fma");
    set(facts, "onednn.isa", "avx2");
    set(facts, "onednn.isa_cap", cap);
    const auto findings = machine_findings(facts);
    ASSERT_EQ(ids(findings), std::vector<std::string>{"cpu_library_cap_ignored:info"}) << cap;
    const bool misspelt = std::string(cap) == "bad";
    EXPECT_TRUE(any_contains(findings, misspelt ? "names no instruction set oneDNN knows"
                                                : "holds oneDNN at nothing below"))
        << cap;
  }
}

// A container's quota and a process's affinity, as the machine facts record them on a 2-CPU
// Every CPU usable, but OMP_NUM_THREADS=64 (oneDNN) or OPENBLAS_NUM_THREADS=64 on 2 of them: more
// threads than there is CPU time for, said (it was said only when fewer CPUs than cores were
// usable). Threads that fit, or facts not known, say nothing.
TEST(MachineFindings, MoreLibraryThreadsThanUsableCpusAreAFinding) {
  std::vector<Fact> facts = healthy_facts();
  set(facts, "cpu.cores", "2");
  set(facts, "cpu.usable_cpus", "2");
  set(facts, "openblas.threads", "2");
  set(facts, "onednn.threads", "64");
  auto findings = machine_findings(facts);
  ASSERT_EQ(ids(findings), std::vector<std::string>{"threads_oversubscribed:warning"});
  EXPECT_EQ(findings[0].text,
            "oneDNN will run 64 threads on the 2 CPUs this process may use, more than there is "
            "CPU time for (set OPENBLAS_NUM_THREADS and OMP_NUM_THREADS to the CPUs it may use).");
  set(facts, "openblas.threads", "3");
  EXPECT_TRUE(any_contains(machine_findings(facts),
                           "OpenBLAS will run 3 threads and oneDNN will run 64 threads on the 2"));
  set(facts, "openblas.threads", "2");
  set(facts, "onednn.threads", "2");
  EXPECT_TRUE(machine_findings(facts).empty());
  set(facts, "onednn.threads", "unknown (TBB runtime: its arena decides)");
  EXPECT_TRUE(machine_findings(facts).empty());
}

// machine: one finding, naming what limits the CPUs and the files or the affinity that say so.
TEST(MachineFindings, FewerUsableCpusNameTheQuotaOrTheAffinity) {
  std::vector<Fact> quota = healthy_facts();
  set(quota, "cpu.cores", "2");
  set(quota, "cpu.affinity_cpus", "2");
  set(quota, "cpu.affinity_list", "0-1");
  set(quota, "cpu.quota_cpus", "1");
  set(quota, "cpu.quota_source", "cgroup v1 cpu.cfs_quota_us");
  set(quota, "cpu.quota_setting",
      "cgroup v1 cpu.cfs_quota_us 100000 / cpu.cfs_period_us 100000 in /sys/fs/cgroup/cpu/q");
  set(quota, "cpu.usable_cpus", "1");
  set(quota, "openblas.threads", "2");
  set(quota, "onednn.threads", "2");
  auto findings = machine_findings(quota);
  ASSERT_EQ(ids(findings), std::vector<std::string>{"fewer_usable_cpus:warning"});
  EXPECT_TRUE(any_contains(findings,
                           "process may use 1 CPU of 2 (a container quota: cgroup v1 "
                           "cpu.cfs_quota_us 100000 / cpu.cfs_period_us 100000)"))
      << findings[0].text;
  // The libraries that count the CPUs themselves start 2 threads on the 1 CPU of time.
  EXPECT_TRUE(any_contains(findings, "OpenBLAS will run 2 threads and oneDNN will run 2 threads"))
      << findings[0].text;

  std::vector<Fact> pinned = healthy_facts();
  set(pinned, "cpu.cores", "2");
  set(pinned, "cpu.affinity_cpus", "1");
  set(pinned, "cpu.affinity_list", "0");
  set(pinned, "cpu.usable_cpus", "1");
  set(pinned, "openblas.threads", "1");
  set(pinned, "onednn.threads", "1");
  findings = machine_findings(pinned);
  ASSERT_EQ(ids(findings), std::vector<std::string>{"fewer_usable_cpus:warning"});
  EXPECT_TRUE(any_contains(findings,
                           "process may use 1 CPU of 2 (its CPU affinity allows CPU 0 "
                           "only, as `taskset -c 0`"))
      << findings[0].text;
  EXPECT_FALSE(any_contains(findings, "will run")) << findings[0].text;  // threads fit

  // A quota of 1.5 CPUs on 16: "1.5 CPUs". All 16 usable, or facts from before they were
  // recorded: nothing.
  std::vector<Fact> fractional = healthy_facts();
  set(fractional, "cpu.quota_cpus", "1.5");
  set(fractional, "cpu.quota_setting", "cgroup v2 cpu.max 150000 100000 in /sys/fs/cgroup/a");
  set(fractional, "cpu.usable_cpus", "1.5");
  EXPECT_TRUE(any_contains(machine_findings(fractional),
                           "may use 1.5 CPUs of 16 (a container quota: cgroup v2 cpu.max 150000 "
                           "100000)"));
  std::vector<Fact> old = healthy_facts();
  for (const char* key : {"cpu.usable_cpus", "cpu.affinity_cpus", "cpu.quota_cpus"})
    set(old, key, "");
  EXPECT_TRUE(machine_findings(old).empty());
}

TEST(MachineFindings, BusyGpuMemoryIsReported) {
  std::vector<Fact> facts = healthy_facts();
  set(facts, "gpu.memory_free_bytes", "4294967296");
  const auto findings = machine_findings(facts);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NE(findings[0].text.find("4.0 GiB"), std::string::npos) << findings[0].text;
}

TEST(MachineFindings, CarryStableIdsAndSeveritiesProblemsFirst) {
  std::vector<Fact> facts = healthy_facts();
  set(facts, "gpu.status", "CUDA driver too old (cudaErrorInsufficientDriver)");
  set(facts, "cuda.driver_version", "12.4");
  set(facts, "gbench.library_build_type", "debug");
  set(facts, "cpu.governor", "powersave");
  const auto findings = machine_findings(facts);
  EXPECT_EQ(ids(findings), (std::vector<std::string>{
                               "no_gpu:problem", "driver_older_than_runtime:problem",
                               "cpu_frequency_scaling:warning", "gbench_debug_library:info"}));
  EXPECT_TRUE(findings[0].invalidates_gpu_results);
  EXPECT_TRUE(findings[1].invalidates_gpu_results);
  EXPECT_FALSE(findings[2].invalidates_gpu_results);
}

// A GPU that runs through CUDA's minor-version compatibility: the old driver is worth an update,
// not a reason to distrust its results (the report's rule says the same).
TEST(MachineFindings, AnOldDriverThatStillRunsIsAWarning) {
  std::vector<Fact> facts = healthy_facts();
  set(facts, "cuda.driver_version", "12.4");
  const auto findings = machine_findings(facts);
  EXPECT_EQ(ids(findings), (std::vector<std::string>{"driver_older_than_runtime:warning"}));
  EXPECT_FALSE(findings[0].invalidates_gpu_results);
  EXPECT_NE(findings[0].text.find("minor-version compatibility"), std::string::npos);
}

TEST(MachineFindings, NoGpuIsAProblemOnlyWhereADriverIsInstalled) {
  std::vector<Fact> cpu_machine = healthy_facts();
  set(cpu_machine, "gpu.status", "no NVIDIA driver (libcuda.so.1 not found)");
  set(cpu_machine, "nvml.status", "unloadable: libnvidia-ml.so.1");
  auto findings = machine_findings(cpu_machine);
  ASSERT_FALSE(findings.empty());
  EXPECT_EQ(findings[0].id, "no_gpu");
  EXPECT_EQ(findings[0].severity, Severity::info);
  EXPECT_FALSE(findings[0].invalidates_gpu_results);

  std::vector<Fact> broken = healthy_facts();
  set(broken, "gpu.status", "no CUDA device (cudaErrorNoDevice)");
  findings = machine_findings(broken);
  ASSERT_FALSE(findings.empty());
  EXPECT_EQ(findings[0].id, "no_gpu");
  EXPECT_EQ(findings[0].severity, Severity::problem);
  EXPECT_TRUE(findings[0].invalidates_gpu_results);
  EXPECT_TRUE(cpu_only_machine("built without CUDA"));
  EXPECT_FALSE(cpu_only_machine("no CUDA device (cudaErrorNoDevice)"));

  // Every GPU hidden on purpose is a choice, not a fault.
  broken.push_back({"cuda.visible_devices", ""});
  findings = machine_findings(broken);
  ASSERT_FALSE(findings.empty());
  EXPECT_EQ(findings[0].severity, Severity::info);
  EXPECT_FALSE(findings[0].invalidates_gpu_results);
}

// The report's rule and doctor's agree: application clocks an administrator set are no slowdown.
TEST(MachineFindings, ApplicationClocksAreNoThrottling) {
  std::vector<Fact> facts = healthy_facts();
  set(facts, "gpu.throttle_reasons", "GpuIdle,ApplicationsClocksSetting");
  EXPECT_TRUE(machine_findings(facts).empty())
      << ::testing::PrintToString(ids(machine_findings(facts)));
}

TEST(MachineFindings, OtherProcessesOnTheGpuAndAProhibitedComputeMode) {
  std::vector<Fact> facts = healthy_facts();
  facts.push_back({"gpu.compute_processes", "1"});  // doctor's own context
  EXPECT_TRUE(machine_findings(facts).empty());
  set(facts, "gpu.compute_processes", "3");
  facts.push_back({"gpu.compute_mode", "Prohibited"});
  const auto findings = machine_findings(facts);
  EXPECT_EQ(ids(findings),
            (std::vector<std::string>{"gpu_compute_prohibited:problem", "gpu_shared:warning"}));
  EXPECT_TRUE(findings[0].invalidates_gpu_results);
}

}  // namespace
}  // namespace gapbench
