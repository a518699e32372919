#include "fixtures/machine.h"

#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>
#include <vector>

#include "fixtures/device_probe.h"
#include "fixtures/nvml.h"
#include "kernels/onednn_isa.h"

namespace gapbench {
namespace {

bool has_key(const std::vector<Fact>& facts, const std::string& key) {
  return std::any_of(facts.begin(), facts.end(), [&](const Fact& f) { return f.key == key; });
}

bool is_hex16(const std::string& s) {
  return s.size() == 16 && std::all_of(s.begin(), s.end(), [](unsigned char c) {
           return std::isdigit(c) || (c >= 'a' && c <= 'f');
         });
}

bool any_contains(const std::vector<Finding>& findings, const std::string& part) {
  return std::any_of(findings.begin(), findings.end(),
                     [&](const Finding& f) { return f.text.find(part) != std::string::npos; });
}

std::vector<std::string> ids(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const Finding& f : findings) out.push_back(f.id + ":" + f.severity);
  return out;
}

// A healthy GPU machine, as machine_facts() would report it.
std::vector<Fact> healthy_facts() {
  return {
      {"gapbench.build_type", "release"},
      {"cpu.model", "AMD EPYC 7B13"},
      {"cpu.isa", "sse4_2 avx avx2 fma"},
      {"cpu.cores", "16"},
      {"openblas.core", "Zen"},
      {"onednn.isa", "avx2"},
      {"cpu.memory_total_bytes", "135089704960"},
      {"cpu.governor", "performance"},
      {"cpu.frequency_scaling", "disabled"},
      {"gbench.library_build_type", "release"},
      {"gpu.status", "ok"},
      {"gpu.name", "NVIDIA H100 80GB HBM3"},
      {"gpu.uuid", "GPU-00000000-0000-0000-0000-000000000001"},
      {"gpu.memory_total_bytes", "84929216512"},
      {"gpu.memory_free_bytes", "84402438144"},
      {"cuda.driver_version", "13.0"},
      {"cuda.runtime_version", "13.0"},
      {"cuda.runtime_compiled", "13.0"},
      {"nvidia.driver_release", "580.65.06"},
      {"cublas.status", "ok"},
      {"cublas.version_loaded", "13.1.0"},
      {"cublas.version_compiled", "13.1.0"},
      {"cudnn.status", "ok"},
      {"cudnn.version_loaded", "9.19.0"},
      {"cudnn.version_compiled", "9.19.0"},
      {"nvml.status", "ok"},
      {"pcie.gen_current", "5"},
      {"pcie.gen_max", "5"},
      {"pcie.width_current", "16"},
      {"pcie.width_max", "16"},
      {"pcie.bandwidth_current_gbps", "63.02"},
      {"pcie.bandwidth_max_gbps", "63.02"},
      {"gpu.clock_sm_mhz", "1980"},
      {"gpu.clock_sm_max_mhz", "1980"},
      {"gpu.throttle_reasons", "none"},
      {"gpu.compute_capability", "9.0"},
      {"gpu.tensor_cores", "fp16 bf16 tf32 fp8"},
  };
}

void set(std::vector<Fact>& facts, const std::string& key, const std::string& value) {
  for (Fact& f : facts) {
    if (f.key == key) {
      f.value = value;
      return;
    }
  }
  facts.push_back({key, value});
}

// ---- machine_facts on this machine ------------------------------------------------------------

TEST(MachineFacts, HasPlausibleCpuFacts) {
  const std::vector<Fact> facts = machine_facts();
  EXPECT_EQ(fact(facts, "gapbench.version"), GAPBENCH_VERSION);
  EXPECT_EQ(fact(facts, "gapbench.with_cuda"), GAPBENCH_WITH_CUDA ? "yes" : "no");
  EXPECT_FALSE(fact(facts, "cpu.model").empty());
  const int cores = std::stoi(fact(facts, "cpu.cores"));
  EXPECT_GE(cores, 1);
  EXPECT_LE(cores, 4096);
  const double memory = std::stod(fact(facts, "cpu.memory_total_bytes"));
  EXPECT_GE(memory, 256.0 * 1024 * 1024);  // at least 256 MiB
  EXPECT_FALSE(fact(facts, "cpu.governor").empty());
  const std::string scaling = fact(facts, "cpu.frequency_scaling");
  EXPECT_TRUE(scaling == "enabled" || scaling == "disabled" || scaling.rfind("unknown", 0) == 0)
      << scaling;
  EXPECT_NE(fact(facts, "openblas.config").find("OpenBLAS"), std::string::npos);
  EXPECT_NE(fact(facts, "openblas.version").find('.'), std::string::npos);
  EXPECT_GE(std::stoi(fact(facts, "openblas.threads")), 1);
  EXPECT_FALSE(fact(facts, "openblas.core").empty());
  const std::string onednn = fact(facts, "onednn.version");
  EXPECT_EQ(std::count(onednn.begin(), onednn.end(), '.'), 2) << onednn;
  // What the libraries use, after any cap: a capped run is told apart from a real one.
  EXPECT_EQ(fact(facts, "onednn.isa"), onednn_isa());
  const char* cap = std::getenv("DNNL_MAX_CPU_ISA");
  EXPECT_EQ(fact(facts, "onednn.isa_cap"), cap ? cap : "");
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  EXPECT_EQ(fact(facts, "openblas.coretype"), coretype ? coretype : "");
  const std::string gbench = fact(facts, "gbench.library_build_type");
  EXPECT_TRUE(gbench == "release" || gbench == "debug") << gbench;
}

TEST(MachineFacts, KeysAreUniqueAndStatusesAlwaysPresent) {
  const std::vector<Fact> facts = machine_facts();
  std::vector<std::string> keys;
  for (const Fact& f : facts) keys.push_back(f.key);
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(std::adjacent_find(keys.begin(), keys.end()), keys.end());
  for (const char* key : {"gpu.status", "cublas.status", "cudnn.status", "nvml.status"}) {
    EXPECT_FALSE(fact(facts, key).empty()) << key;
  }
  EXPECT_EQ(fact(facts, "no.such.key"), "");
}

TEST(MachineFacts, GpuStatusMatchesTheDeviceProbe) {
  const std::vector<Fact> facts = machine_facts();
  const std::string status = fact(facts, "gpu.status");
  ASSERT_FALSE(status.empty());
  if (const auto reason = gpu_unavailable_reason()) {
    // This machine (no GPU): the reason, and no device facts.
    EXPECT_EQ(status, *reason);
    EXPECT_NE(status, "ok");
    EXPECT_FALSE(has_key(facts, "gpu.name"));
    EXPECT_FALSE(has_key(facts, "pcie.gen_current"));
  } else {
    EXPECT_EQ(status, "ok");
    EXPECT_FALSE(fact(facts, "gpu.name").empty());
    EXPECT_FALSE(fact(facts, "gpu.compute_capability").empty());
  }
#if !GAPBENCH_WITH_CUDA
  EXPECT_EQ(status, "built without CUDA");
  EXPECT_EQ(fact(facts, "cublas.status"), "built without CUDA");
#endif
}

TEST(MachineFacts, LeavesGoogleBenchmarkStateAsItFoundIt) {
  using Context = benchmark::BenchmarkReporter::Context;
  const char* before = Context::executable_name;
  machine_facts();
  EXPECT_EQ(Context::executable_name, before);
}

TEST(MachineFacts, MachineIdIsSixteenHexDigitsAndStable) {
  const std::vector<Fact> first = machine_facts();
  const std::vector<Fact> second = machine_facts();
  const std::string id = fact(first, "machine.id");
  EXPECT_TRUE(is_hex16(id)) << id;
  EXPECT_EQ(id, fact(second, "machine.id"));
  EXPECT_EQ(id, machine_id(first));
}

TEST(MachineFacts, MachineIdChangesWithWhatChangesTheNumbers) {
  std::vector<Fact> facts = healthy_facts();
  const std::string id = machine_id(facts);
  EXPECT_EQ(id.size(), 16u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;

  // Free memory and a driver reserving a little more total memory are no other machine.
  std::vector<Fact> same = facts;
  set(same, "gpu.memory_free_bytes", "1");
  set(same, "gpu.memory_total_bytes", "84900000000");
  // oneDNN's own ISA, uncapped, follows from cpu.isa: an id from before it was known still holds.
  set(same, "onednn.isa", "avx512_core_bf16");
  EXPECT_EQ(machine_id(same), id);

  // Everything that changes the numbers changes the id: another GPU of the same model, another
  // driver, OpenBLAS choosing other kernels, other ISA extensions, another CPU count.
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"gpu.name", "Tesla T4"},
           {"gpu.uuid", "GPU-00000000-0000-0000-0000-000000000002"},
           {"nvidia.driver_release", "590.10.01"},
           {"openblas.core", "Cooperlake"},
           {"onednn.isa_cap", "AVX2"},
           {"cpu.isa", "avx2 fma"},
           {"cpu.cores", "8"}}) {
    std::vector<Fact> other = facts;
    set(other, key, value);
    EXPECT_NE(machine_id(other), id) << key;
  }
  // A second GPU is part of the machine.
  std::vector<Fact> two_gpus = facts;
  two_gpus.push_back({"gpu.1.name", "NVIDIA H100 80GB HBM3"});
  two_gpus.push_back({"gpu.1.uuid", "GPU-00000000-0000-0000-0000-000000000003"});
  EXPECT_NE(machine_id(two_gpus), id);
}

// ---- PCIe bandwidth ---------------------------------------------------------------------------

TEST(MachinePcie, BandwidthPerDirectionMatchesPublishedFigures) {
  EXPECT_DOUBLE_EQ(pcie_bandwidth_gbps(1, 1), 0.25);     // 2.5 GT/s, 8b/10b
  EXPECT_DOUBLE_EQ(pcie_bandwidth_gbps(2, 16), 8.0);     // 5 GT/s, 8b/10b
  EXPECT_NEAR(pcie_bandwidth_gbps(3, 16), 15.75, 0.01);  // 8 GT/s, 128b/130b
  EXPECT_NEAR(pcie_bandwidth_gbps(4, 16), 31.5, 0.02);
  EXPECT_NEAR(pcie_bandwidth_gbps(5, 16), 63.0, 0.05);
  EXPECT_DOUBLE_EQ(pcie_bandwidth_gbps(6, 16), 128.0);  // 64 GT/s, FLIT, no line code
  EXPECT_NEAR(pcie_bandwidth_gbps(4, 8), pcie_bandwidth_gbps(4, 16) / 2, 1e-12);
}

TEST(MachinePcie, UnknownGenerationIsZero) {
  EXPECT_EQ(pcie_bandwidth_gbps(0, 16), 0.0);
  EXPECT_EQ(pcie_bandwidth_gbps(99, 16), 0.0);
}

// ---- cuDNN version numbers --------------------------------------------------------------------

TEST(MachineCudnn, DecodesBothVersionSchemes) {
  EXPECT_EQ(format_cudnn_version(90100), "9.1.0");
  EXPECT_EQ(format_cudnn_version(91900), "9.19.0");
  EXPECT_EQ(format_cudnn_version(90501), "9.5.1");
  EXPECT_EQ(format_cudnn_version(8907), "8.9.7");
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

TEST(MachinePrecisions, TensorCoresFollowTheComputeCapability) {
  EXPECT_EQ(tensor_core_precisions(6, 1), "none");  // GTX 10xx
  EXPECT_EQ(tensor_core_precisions(7, 0), "fp16");  // V100
  EXPECT_EQ(tensor_core_precisions(7, 5), "fp16");  // T4
  EXPECT_EQ(tensor_core_precisions(8, 6), "fp16 bf16 tf32");
  EXPECT_EQ(tensor_core_precisions(8, 9), "fp16 bf16 tf32 fp8");
  EXPECT_EQ(tensor_core_precisions(9, 0), "fp16 bf16 tf32 fp8");
  EXPECT_NE(framework_tf32_default(7).find("no"), std::string::npos);
  EXPECT_NE(framework_tf32_default(8).find("TensorFlow: yes"), std::string::npos);
  EXPECT_EQ(cpu_bf16("avx2 fma avx512f avx512_bf16"), "avx512_bf16");
  EXPECT_EQ(cpu_bf16("avx512f avx512_bf16 amx_tile amx_bf16"), "amx_bf16");
  EXPECT_EQ(cpu_bf16("asimd bf16"), "bf16");
  EXPECT_EQ(cpu_bf16("sse4_2 avx avx2 fma"), "none");
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
  set(facts, "onednn.isa_cap", "AVX2");
  set(facts, "openblas.coretype", "Haswell");
  set(facts, "openblas.core", "Haswell");
  const auto findings = machine_findings(facts);
  ASSERT_EQ(ids(findings), std::vector<std::string>{"cpu_library_capped:warning"});
  EXPECT_TRUE(any_contains(findings, "DNNL_MAX_CPU_ISA=AVX2 holds oneDNN at avx2"));
  EXPECT_TRUE(any_contains(findings, "OPENBLAS_CORETYPE=Haswell gives OpenBLAS the Haswell"));
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
  EXPECT_EQ(findings[0].severity, "info");
  EXPECT_FALSE(findings[0].invalidates_gpu_results);

  std::vector<Fact> broken = healthy_facts();
  set(broken, "gpu.status", "no CUDA device (cudaErrorNoDevice)");
  findings = machine_findings(broken);
  ASSERT_FALSE(findings.empty());
  EXPECT_EQ(findings[0].id, "no_gpu");
  EXPECT_EQ(findings[0].severity, "problem");
  EXPECT_TRUE(findings[0].invalidates_gpu_results);
  EXPECT_TRUE(cpu_only_machine("built without CUDA"));
  EXPECT_FALSE(cpu_only_machine("no CUDA device (cudaErrorNoDevice)"));

  // Every GPU hidden on purpose is a choice, not a fault.
  broken.push_back({"cuda.visible_devices", ""});
  findings = machine_findings(broken);
  ASSERT_FALSE(findings.empty());
  EXPECT_EQ(findings[0].severity, "info");
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

TEST(MachineFacts, SystemFactsAndUnknownsSayUnknown) {
  const std::vector<Fact> facts = machine_facts();
  EXPECT_FALSE(fact(facts, "os.kernel").empty());
  EXPECT_FALSE(fact(facts, "os.glibc").empty());
  EXPECT_FALSE(fact(facts, "cpu.isa").empty());
  EXPECT_FALSE(fact(facts, "cuda.visible_devices").empty());
  // Without cpufreq, frequency scaling is unknown, never "disabled".
  if (fact(facts, "cpu.governor").rfind("unavailable", 0) == 0) {
    EXPECT_EQ(fact(facts, "cpu.frequency_scaling"), "unknown (no cpufreq)");
  }
}

// ---- NVML -------------------------------------------------------------------------------------

TEST(NvmlThrottle, DecodesNvidiaBitNames) {
  EXPECT_EQ(nvml::throttle_reason_names(0), "none");
  EXPECT_EQ(nvml::throttle_reason_names(0x1), "GpuIdle");
  EXPECT_EQ(nvml::throttle_reason_names(0x4 | 0x8), "SwPowerCap,HwSlowdown");
  EXPECT_EQ(nvml::throttle_reason_names(0x1FF),
            "GpuIdle,ApplicationsClocksSetting,SwPowerCap,HwSlowdown,SyncBoost,"
            "SwThermalSlowdown,HwThermalSlowdown,HwPowerBrakeSlowdown,DisplayClockSetting");
  EXPECT_EQ(nvml::throttle_reason_names(0x40 | 0x400), "HwThermalSlowdown,0x400");
}

TEST(NvmlSession, ReportsWhyInsteadOfFailing) {
  nvml::Session session;
  void* probe = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (probe == nullptr) {
    // This machine: no driver, so no NVML. The session says so and every query returns the reason.
    EXPECT_FALSE(session.ok());
    EXPECT_EQ(session.error().rfind("unloadable: ", 0), 0u) << session.error();
    EXPECT_NE(session.error().find("libnvidia-ml.so.1"), std::string::npos) << session.error();
    const auto release = session.driver_version();
    EXPECT_FALSE(release.ok());
    EXPECT_EQ(release.error, session.error());
    const auto device = session.device_by_pci_bus_id("0000:01:00.0");
    EXPECT_FALSE(device.ok());
    EXPECT_FALSE(session.pcie_gen_current(nullptr).ok());
    EXPECT_FALSE(session.throttle_reasons(nullptr).ok());
  } else {
    dlclose(probe);
    if (session.ok()) {
      const auto release = session.driver_version();
      EXPECT_TRUE(release.ok()) << release.error;
      EXPECT_NE(release.value.find('.'), std::string::npos) << release.value;
    } else {
      EXPECT_NE(session.error().find("nvmlInit_v2"), std::string::npos) << session.error();
    }
  }
  EXPECT_EQ(fact(machine_facts(), "nvml.status"), session.ok() ? "ok" : session.error());
}

// ---- JSON escaping (doctor --json) --------------------------------------------------------------

TEST(DoctorJson, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(json_escape("plain text 1.0"), "plain text 1.0");
  EXPECT_EQ(json_escape("say \"hi\""), "say \\\"hi\\\"");
  EXPECT_EQ(json_escape("C:\\path"), "C:\\\\path");
  EXPECT_EQ(json_escape("a\nb\tc\rd\be\ff"), "a\\nb\\tc\\rd\\be\\ff");
  EXPECT_EQ(json_escape(std::string("nul\0end", 7)), "nul\\u0000end");
  EXPECT_EQ(json_escape("\x01\x1f"), "\\u0001\\u001f");
  EXPECT_EQ(json_escape("/"), "/");
}

TEST(DoctorJson, KeepsUtf8AndReplacesInvalidBytes) {
  EXPECT_EQ(json_escape("Intel\xC2\xAE Xeon\xE2\x84\xA2"), "Intel\xC2\xAE Xeon\xE2\x84\xA2");
  EXPECT_EQ(json_escape("\xF0\x9F\x9A\x80"), "\xF0\x9F\x9A\x80");
  EXPECT_EQ(json_escape("bad\xFF"), "bad\\ufffd");
  EXPECT_EQ(json_escape("cut\xE2\x84"), "cut\\ufffd\\ufffd");
  EXPECT_EQ(json_escape("\xED\xA0\x80"), "\\ufffd\\ufffd\\ufffd");  // a UTF-16 surrogate
}

}  // namespace
}  // namespace gapbench
