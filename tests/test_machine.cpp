#include "fixtures/machine.h"

#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "fixtures/device_probe.h"
#include "fixtures/nvml.h"
#include "gapbench/tables.h"
#include "kernels/onednn_isa.h"
#include "tests/healthy_facts.h"

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

// ---- machine_facts on this machine ------------------------------------------------------------

TEST(MachineFacts, HasPlausibleCpuFacts) {
  const std::vector<Fact> facts = machine_facts();
  EXPECT_EQ(fact(facts, "gapbench.version"), GAPBENCH_VERSION);
  EXPECT_EQ(fact(facts, "gapbench.with_cuda"), GAPBENCH_WITH_CUDA ? "yes" : "no");
  // The source it was built from (cmake/gapbench_source_state.cmake): a full hash with a known
  // tree state, or unknown outside a checkout.
  const std::string commit = fact(facts, "gapbench.commit");
  const std::string tree = fact(facts, "gapbench.tree");
  const bool hash = commit.size() >= 7 && std::all_of(commit.begin(), commit.end(), [](char c) {
                      return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
                    });
  EXPECT_TRUE(hash || commit == "unknown") << commit;
  EXPECT_TRUE(tree == "clean" || tree == "dirty" || tree == "unknown") << tree;
  if (commit == "unknown") EXPECT_EQ(tree, "unknown");
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

// facts.json's key as a regex: {n} a GPU's index, any other {name} a name ({family}).
std::regex key_pattern(const std::string& key) {
  std::string pattern;
  for (std::size_t i = 0; i < key.size(); ++i) {
    if (key[i] == '{') {
      const std::size_t close = key.find('}', i);
      pattern += key.compare(i, close - i + 1, "{n}") == 0 ? "[0-9]+" : "[a-z0-9_]+";
      i = close;
    } else {
      if (!std::isalnum(static_cast<unsigned char>(key[i])) && key[i] != '_') pattern += '\\';
      pattern += key[i];
    }
  }
  return std::regex(pattern);
}

// The report reads the facts by facts.json's keys: every key recorded here is listed there.
TEST(MachineFacts, EveryKeyIsListedInFactsJson) {
  std::vector<std::regex> listed;
  for (const tables::FactKey& f : tables::kFactKeys) listed.push_back(key_pattern(f.key));
  for (const Fact& f : machine_facts()) {
    EXPECT_TRUE(std::any_of(listed.begin(), listed.end(),
                            [&](const std::regex& key) { return std::regex_match(f.key, key); }))
        << f.key << " is recorded, but report/gapbench_report/tables/facts.json does not list it";
  }
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
  // A DNNL_MAX_CPU_ISA that holds oneDNN nowhere (misspelt, or at or above the CPU's best) is
  // the same machine.
  for (const char* cap : {"bad", "AVX2", "AVX512_CORE"}) {
    std::vector<Fact> uncapped = facts;
    set(uncapped, "onednn.isa_cap", cap);
    EXPECT_EQ(machine_id(uncapped), id) << cap;
  }
  std::vector<Fact> capped = facts;
  set(capped, "onednn.isa_cap", "SSE41");
  set(capped, "onednn.isa", "sse41");
  EXPECT_NE(machine_id(capped), id);

  // Everything that changes the numbers changes the id: another GPU of the same model, another
  // driver, OpenBLAS choosing other kernels, other ISA extensions, another CPU count.
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"gpu.name", "Tesla T4"},
           {"gpu.uuid", "GPU-00000000-0000-0000-0000-000000000002"},
           {"nvidia.driver_release", "590.10.01"},
           {"openblas.core", "Cooperlake"},
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

// ---- PCIe bandwidth ---------------------------------------------------------------------------

TEST(MachinePcie, BandwidthPerDirectionMatchesPublishedFigures) {
  EXPECT_DOUBLE_EQ(pcie_bandwidth_gbps(1, 1), 0.25);     // 2.5 GT/s, 8b/10b
  EXPECT_DOUBLE_EQ(pcie_bandwidth_gbps(2, 16), 8.0);     // 5 GT/s, 8b/10b
  EXPECT_NEAR(pcie_bandwidth_gbps(3, 16), 15.75, 0.01);  // 8 GT/s, 128b/130b
  EXPECT_NEAR(pcie_bandwidth_gbps(4, 16), 31.5, 0.02);
  EXPECT_NEAR(pcie_bandwidth_gbps(5, 16), 63.0, 0.05);
  EXPECT_DOUBLE_EQ(pcie_bandwidth_gbps(6, 16), 121.0);  // 64 GT/s, FLIT: 242 data bytes of 256
  EXPECT_NEAR(pcie_bandwidth_gbps(4, 8), pcie_bandwidth_gbps(4, 16) / 2, 1e-12);
}

TEST(MachinePcie, UnknownGenerationIsZero) {
  EXPECT_EQ(pcie_bandwidth_gbps(0, 16), 0.0);
  EXPECT_EQ(pcie_bandwidth_gbps(99, 16), 0.0);
}

// ---- GPU memory bandwidth ---------------------------------------------------------------------

// Two transfers per cycle of NVML's max memory clock, checked against the datasheets.
TEST(MachineGpuMemory, TheoreticalBandwidthMatchesDatasheets) {
  EXPECT_NEAR(gpu_memory_bandwidth_gbps(2619, 5120), 3352.3, 0.1);  // H100 SXM, HBM3: 3.35 TB/s
  EXPECT_NEAR(gpu_memory_bandwidth_gbps(1215, 5120), 1555.2, 0.1);  // A100 40GB, HBM2: 1555 GB/s
  EXPECT_NEAR(gpu_memory_bandwidth_gbps(5001, 256), 320.0, 0.1);    // T4, GDDR6: 320 GB/s
  // The H200's recorded 3201 MHz on its 6144-bit HBM3e: 4917 GB/s, 2% above the datasheet's
  // rounded 4.8 TB/s.
  EXPECT_NEAR(gpu_memory_bandwidth_gbps(3201, 6144), 4916.7, 0.1);
  EXPECT_EQ(gpu_memory_bandwidth_gbps(0, 5120), 0.0);
  EXPECT_EQ(gpu_memory_bandwidth_gbps(2619, 0), 0.0);
}

// Runs where NVML finds the GPU (skipped here): the two facts agree with the clock they follow.
TEST(MachineGpuMemory, RecordedBandwidthFollowsTheRecordedClockAndBusWidth) {
  const std::vector<Fact> facts = machine_facts();
  const std::string bits = fact(facts, "gpu.memory_bus_width_bits");
  const std::string gbps = fact(facts, "gpu.memory_bandwidth_theoretical_gbps");
  if (bits.empty()) GTEST_SKIP() << "NVML found no GPU: " << fact(facts, "nvml.status");
  ASSERT_FALSE(gbps.empty());
  const auto width = parse_number(bits);
  const auto clock = parse_number(fact(facts, "gpu.clock_mem_max_mhz"));
  if (!width || !clock) {
    EXPECT_EQ(gbps.rfind("unavailable (", 0), 0u) << gbps;
    if (!width) {
      EXPECT_EQ(bits.rfind("unavailable (", 0), 0u) << bits;
    }
    return;
  }
  EXPECT_NEAR(
      parse_number(gbps).value_or(-1),
      gpu_memory_bandwidth_gbps(static_cast<unsigned>(*clock), static_cast<unsigned>(*width)),
      0.05);
}

// ---- host facts -------------------------------------------------------------------------------

std::string value_of(const std::vector<Fact>& facts, const std::string& key) {
  EXPECT_TRUE(has_key(facts, key)) << key;
  return fact(facts, key);
}

// A KVM guest as the GPU hosts are: a generic model name, no cpufreq, the TSC's rate as cpu MHz.
TEST(MachineHost, KvmGuestWithoutCpufreq) {
  HostFiles files;
  files.cpuinfo =
      "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\n"
      "model name\t: Intel(R) Xeon(R) Processor\nstepping\t: 8\ncpu MHz\t\t: 2100.000\n"
      "flags\t\t: fpu tsc constant_tsc nonstop_tsc hypervisor avx512f\n\n"
      "processor\t: 1\ncpu family\t: 6\nmodel\t\t: 207\ncpu MHz\t\t: 2399.998\n";
  files.clocksource = "kvm-clock\n";
  files.hypervisor_signature = "KVMKVMKVM";
  const std::vector<Fact> facts = host_facts(files);
  EXPECT_EQ(facts.size(), 5u);
  EXPECT_EQ(value_of(facts, "cpu.signature"), "family 6 model 143 stepping 8");
  EXPECT_EQ(value_of(facts, "cpu.frequency_nominal_mhz"), "2100");
  EXPECT_EQ(value_of(facts, "cpu.frequency_max_mhz"), "unavailable (no cpufreq)");
  EXPECT_EQ(value_of(facts, "host.hypervisor"), "KVMKVMKVM");
  EXPECT_EQ(value_of(facts, "host.clocksource"), "kvm-clock");

  // A hypervisor whose cpuid leaf says nothing is still one.
  files.hypervisor_signature = "";
  EXPECT_EQ(fact(host_facts(files), "host.hypervisor"), "yes (signature unknown)");
}

// Bare metal: cpu MHz is the clock of the moment, so the nominal comes from cpufreq or the name.
TEST(MachineHost, BareMetalNominalFromCpufreqThenTheModelName) {
  HostFiles files;
  files.cpuinfo =
      "processor\t: 0\ncpu family\t: 6\nmodel\t\t: 106\nstepping\t: 6\n"
      "model name\t: Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz\ncpu MHz\t\t: 3150.123\n"
      "flags\t\t: fpu tsc constant_tsc aperfmperf avx512f\n";
  files.cpufreq = true;
  files.cpufreq_max_khz = "3200000\n";
  files.cpufreq_base_khz = "2100000\n";  // intel_pstate's, preferred to the name's
  files.clocksource = "tsc\n";
  std::vector<Fact> facts = host_facts(files);
  EXPECT_EQ(value_of(facts, "cpu.frequency_nominal_mhz"), "2100");
  EXPECT_EQ(value_of(facts, "cpu.frequency_max_mhz"), "3200");
  EXPECT_EQ(value_of(facts, "host.hypervisor"), "none");
  EXPECT_EQ(value_of(facts, "host.clocksource"), "tsc");

  files.cpufreq_base_khz = "";  // acpi-cpufreq has none
  EXPECT_EQ(fact(host_facts(files), "cpu.frequency_nominal_mhz"), "2000");

  // An AMD name gives none, and cpu MHz (with APERF/MPERF, or cpufreq) is no nominal figure.
  files.cpuinfo =
      "cpu family\t: 25\nmodel\t\t: 1\nstepping\t: 1\n"
      "model name\t: AMD EPYC 7763 64-Core Processor\ncpu MHz\t\t: 2445.404\n"
      "flags\t\t: fpu tsc constant_tsc aperfmperf avx2\n";
  facts = host_facts(files);
  EXPECT_EQ(value_of(facts, "cpu.signature"), "family 25 model 1 stepping 1");
  EXPECT_EQ(value_of(facts, "cpu.frequency_nominal_mhz").rfind("unavailable (", 0), 0u);
  files.cpufreq = false;
  EXPECT_EQ(fact(host_facts(files), "cpu.frequency_nominal_mhz").rfind("unavailable (", 0), 0u);
}

TEST(MachineHost, ArmAndUnreadableFilesSayUnavailable) {
  HostFiles files;
  files.cpuinfo =
      "processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd sve sve2 bf16\n"
      "CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd4f\n"
      "CPU revision\t: 0\n";
  files.cpufreq = true;
  files.cpufreq_max_khz = "3447000";
  std::vector<Fact> facts = host_facts(files);
  EXPECT_EQ(value_of(facts, "cpu.signature"), "implementer 0x41 part 0xd4f variant 0x0 revision 0");
  EXPECT_EQ(value_of(facts, "cpu.frequency_max_mhz"), "3447");
  EXPECT_EQ(value_of(facts, "host.hypervisor"), "unavailable (no x86 flags in /proc/cpuinfo)");
  EXPECT_EQ(value_of(facts, "cpu.frequency_nominal_mhz").rfind("unavailable (", 0), 0u);

  // Nothing readable: every key present, each with its reason; a garbled kHz is no figure.
  files = HostFiles{};
  files.cpufreq = true;
  files.cpufreq_max_khz = "n/a";
  facts = host_facts(files);
  ASSERT_EQ(facts.size(), 5u);
  for (const Fact& f : facts) EXPECT_EQ(f.value.rfind("unavailable (", 0), 0u) << f.key;
  EXPECT_EQ(fact(facts, "cpu.frequency_max_mhz"), "unavailable (no cpufreq cpuinfo_max_freq)");
}

TEST(MachineHost, ThisMachineRecordsEveryHostFact) {
  const std::vector<Fact> facts = machine_facts();
  for (const char* key : {"cpu.signature", "cpu.frequency_nominal_mhz", "cpu.frequency_max_mhz",
                          "host.hypervisor", "host.clocksource"}) {
    EXPECT_FALSE(fact(facts, key).empty()) << key;
  }
  for (const char* key : {"cpu.frequency_nominal_mhz", "cpu.frequency_max_mhz"}) {
    const std::string mhz = fact(facts, key);
    EXPECT_TRUE(parse_number(mhz).value_or(0) > 0 || mhz.rfind("unavailable (", 0) == 0) << mhz;
  }
}

// ---- the CPUs this process may use ------------------------------------------------------------

TEST(MachineCpuQuota, ParsesCgroupV2CpuMax) {
  EXPECT_FALSE(parse_cpu_max("max 100000\n"));  // no quota
  const auto quota = parse_cpu_max("150000 100000\n");
  ASSERT_TRUE(quota);
  EXPECT_DOUBLE_EQ(quota->cpus(), 1.5);
  EXPECT_EQ(quota->source, "cgroup v2 cpu.max");
  EXPECT_EQ(quota->setting(), "cgroup v2 cpu.max 150000 100000");
  for (const char* odd : {"", "150000", "0 100000", "150000 0", "150000 100000 7", "x 100000"})
    EXPECT_FALSE(parse_cpu_max(odd)) << odd;
}

TEST(MachineCpuQuota, ParsesCgroupV1CfsQuota) {
  EXPECT_FALSE(parse_cfs_quota("-1\n", "100000\n"));  // no quota
  const auto quota = parse_cfs_quota("100000\n", "100000\n");
  ASSERT_TRUE(quota);
  EXPECT_DOUBLE_EQ(quota->cpus(), 1.0);
  EXPECT_EQ(quota->setting(), "cgroup v1 cpu.cfs_quota_us 100000 / cpu.cfs_period_us 100000");
  EXPECT_DOUBLE_EQ(parse_cfs_quota("50000", "100000")->cpus(), 0.5);
  EXPECT_FALSE(parse_cfs_quota("100000", ""));  // an unreadable period
  EXPECT_FALSE(parse_cfs_quota("", "100000"));
}

// A map of paths to texts stands in for the files.
ReadFile files_of(std::map<std::string, std::string> texts) {
  return [texts](const std::string& path) {
    const auto it = texts.find(path);
    return it == texts.end() ? std::string() : it->second;
  };
}

// This machine's layout (cgroup v1 with cgroup2 beside it, "hybrid"), the process in a child of
// the cpu hierarchy's root, as `cgexec -g cpu:gapbench-quota` puts it.
const char* const kHybridMountinfo =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

TEST(MachineCpuQuota, FindsAV1QuotaInTheProcesssCgroup) {
  const std::string cgroup = "3:cpuset:/\n2:cpuacct:/\n1:cpu:/gapbench-quota\n0::/\n";
  const auto quota =
      cpu_quota(cgroup, kHybridMountinfo,
                files_of({{"/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n"},
                          {"/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n"},
                          {"/sys/fs/cgroup/cpu/gapbench-quota/cpu.cfs_quota_us", "100000\n"},
                          {"/sys/fs/cgroup/cpu/gapbench-quota/cpu.cfs_period_us", "100000\n"}}));
  ASSERT_TRUE(quota);
  EXPECT_DOUBLE_EQ(quota->cpus(), 1.0);
  EXPECT_EQ(quota->cgroup, "/sys/fs/cgroup/cpu/gapbench-quota");
  // Without a quota anywhere: none.
  EXPECT_FALSE(cpu_quota("1:cpu:/\n0::/\n", kHybridMountinfo,
                         files_of({{"/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1"},
                                   {"/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000"}})));
  // The cpu controller mounted with cpuacct, as Docker's hosts have it: "cpu,cpuacct".
  const char* comounted =
      "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n";
  const auto docker =
      cpu_quota("4:cpu,cpuacct:/docker/abc\n", comounted,
                files_of({{"/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "200000"},
                          {"/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000"}}));
  ASSERT_TRUE(docker);
  EXPECT_DOUBLE_EQ(docker->cpus(), 2.0);
  // cpuset and cpuacct alone hold no quota.
  EXPECT_FALSE(cpu_quota("2:cpuacct:/x\n", kHybridMountinfo,
                         files_of({{"/sys/fs/cgroup/cpuacct/x/cpu.cfs_quota_us", "100000"},
                                   {"/sys/fs/cgroup/cpuacct/x/cpu.cfs_period_us", "100000"}})));
}

// Nested cgroups: a parent's quota binds its children, so the tightest on the way up wins.
TEST(MachineCpuQuota, TheTightestQuotaUpTheHierarchyWins) {
  const char* v2_mount = "29 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n";
  std::map<std::string, std::string> texts = {
      {"/sys/fs/cgroup/kubepods.slice/cpu.max", "150000 100000\n"},
      {"/sys/fs/cgroup/kubepods.slice/pod1/cpu.max", "max 100000\n"},
      {"/sys/fs/cgroup/kubepods.slice/pod1/ctr/cpu.max", "400000 100000\n"},
  };
  auto quota = cpu_quota("0::/kubepods.slice/pod1/ctr\n", v2_mount, files_of(texts));
  ASSERT_TRUE(quota);
  EXPECT_DOUBLE_EQ(quota->cpus(), 1.5);
  EXPECT_EQ(quota->cgroup, "/sys/fs/cgroup/kubepods.slice");
  EXPECT_EQ(quota->source, "cgroup v2 cpu.max");
  // The child's own quota, when it is the tighter one.
  texts["/sys/fs/cgroup/kubepods.slice/pod1/ctr/cpu.max"] = "50000 100000";
  quota = cpu_quota("0::/kubepods.slice/pod1/ctr\n", v2_mount, files_of(texts));
  ASSERT_TRUE(quota);
  EXPECT_DOUBLE_EQ(quota->cpus(), 0.5);
  EXPECT_EQ(quota->cgroup, "/sys/fs/cgroup/kubepods.slice/pod1/ctr");
  // Both versions at once (hybrid): the tighter of the two.
  const std::string both = std::string(kHybridMountinfo);
  const auto hybrid = cpu_quota("1:cpu:/a\n0::/b\n", both,
                                files_of({{"/sys/fs/cgroup/cpu/a/cpu.cfs_quota_us", "300000"},
                                          {"/sys/fs/cgroup/cpu/a/cpu.cfs_period_us", "100000"},
                                          {"/sys/fs/cgroup/unified/b/cpu.max", "200000 100000"}}));
  ASSERT_TRUE(hybrid);
  EXPECT_DOUBLE_EQ(hybrid->cpus(), 2.0);
  EXPECT_EQ(hybrid->source, "cgroup v2 cpu.max");
}

// A container that mounts only its own part of the hierarchy: the mount's root is the
// container's cgroup, and the walk stops there.
TEST(MachineCpuQuota, AContainersMountStartsAtItsOwnCgroup) {
  const char* mount = "1 0 0:26 /docker/abc /sys/fs/cgroup/cpu ro - cgroup cgroup rw,cpu,cpuacct\n";
  const auto quota = cpu_quota("5:cpu,cpuacct:/docker/abc\n", mount,
                               files_of({{"/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "100000"},
                                         {"/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000"}}));
  ASSERT_TRUE(quota);
  EXPECT_EQ(quota->cgroup, "/sys/fs/cgroup/cpu");
  // A cgroup outside the mounted part is not under this mount.
  EXPECT_FALSE(cpu_quota("5:cpu,cpuacct:/other\n", mount,
                         files_of({{"/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "100000"},
                                   {"/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000"}})));
  // A mount point with a blank, escaped by the kernel.
  const auto escaped =
      cpu_quota("0::/\n", "1 0 0:26 / /mnt/my\\040cgroup rw - cgroup2 cgroup2 rw\n",
                files_of({{"/mnt/my cgroup/cpu.max", "100000 100000"}}));
  ASSERT_TRUE(escaped);
  EXPECT_EQ(escaped->cgroup, "/mnt/my cgroup");
  // Garbage in either file finds nothing, and does not crash.
  EXPECT_FALSE(cpu_quota("garbage\n::\n", "- - -\n1 2\n", files_of({})));
}

TEST(MachineCpuQuota, CpuListsAreWrittenAsTasksetReadsThem) {
  EXPECT_EQ(format_cpu_list({0}), "0");
  EXPECT_EQ(format_cpu_list({0, 1}), "0-1");
  EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 6, 8, 9}), "0-3,6,8-9");
  EXPECT_EQ(format_cpu_list({}), "");
}

// This process's facts agree with one another: the least of the three is what it may use.
TEST(MachineCpuQuota, ThisProcessRecordsTheCpusItMayUse) {
  const std::vector<Fact> facts = machine_facts();
  const auto cores = parse_number(fact(facts, "cpu.cores"));
  const auto affinity = parse_number(fact(facts, "cpu.affinity_cpus"));
  const auto usable = parse_number(fact(facts, "cpu.usable_cpus"));
  ASSERT_TRUE(cores && affinity && usable);
  EXPECT_EQ(*affinity, static_cast<double>(usable_cores()));
  const std::string source = fact(facts, "cpu.quota_source");
  const std::string quota = fact(facts, "cpu.quota_cpus");
  double least = std::min(*cores, *affinity);
  if (source == "none found") {
    EXPECT_EQ(quota, "none");
    EXPECT_EQ(fact(facts, "cpu.quota_setting"), "");
  } else {
    EXPECT_TRUE(source == "cgroup v2 cpu.max" || source == "cgroup v1 cpu.cfs_quota_us") << source;
    ASSERT_TRUE(parse_number(quota)) << quota;
    least = std::min(least, *parse_number(quota));
    EXPECT_EQ(fact(facts, "cpu.quota_setting").rfind(source, 0), 0u);
  }
  EXPECT_DOUBLE_EQ(*usable, least);
  EXPECT_FALSE(fact(facts, "cpu.affinity_list").empty());
  // oneDNN's threads: a count here (this build's oneDNN runs on OpenMP or sequentially).
  EXPECT_GE(parse_number(fact(facts, "onednn.threads")).value_or(0), 1)
      << fact(facts, "onednn.threads");
}

// ---- each family's source identity and method version -----------------------------------------

TEST(MachineSources, EachFamilyHasItsOwnTwelveDigitHash) {
  const std::vector<Fact> facts = machine_facts();
  std::vector<std::string> hashes;
  for (const char* family :
       {"conv", "lstm", "overhead", "peak", "pipeline", "preprocess", "transfer"}) {
    const std::string hash = fact(facts, std::string("gapbench.source.") + family);
    EXPECT_EQ(hash.size(), 12u) << family << ": " << hash;
    EXPECT_TRUE(std::all_of(hash.begin(), hash.end(), [](unsigned char c) {
      return std::isdigit(c) || (c >= 'a' && c <= 'f');
    })) << hash;
    hashes.push_back(hash);
  }
  std::sort(hashes.begin(), hashes.end());
  EXPECT_EQ(std::adjacent_find(hashes.begin(), hashes.end()), hashes.end());
}

// Every family records its method version, a number where the methods table holds the tree's
// code (the lock test, cmake.gapbench_methods_lock, checks the table itself).
TEST(MachineSources, EachFamilyRecordsItsMethodVersion) {
  const std::vector<Fact> facts = method_facts();
  for (const char* family :
       {"conv", "lstm", "overhead", "peak", "pipeline", "preprocess", "transfer"}) {
    const std::string version = fact(facts, std::string("gapbench.method.") + family);
    EXPECT_FALSE(version.empty()) << family;
    EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(version.front()))) << version;
  }
}

// ---- cuDNN version numbers --------------------------------------------------------------------

TEST(MachineCudnn, DecodesBothVersionSchemes) {
  EXPECT_EQ(format_cudnn_version(90100), "9.1.0");
  EXPECT_EQ(format_cudnn_version(91900), "9.19.0");
  EXPECT_EQ(format_cudnn_version(90501), "9.5.1");
  EXPECT_EQ(format_cudnn_version(8907), "8.9.7");
}

// ---- tensor cores and bf16 ---------------------------------------------------------------------

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
    EXPECT_EQ(session.memory_bus_width_bits(nullptr).error, session.error());
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

}  // namespace
}  // namespace gapbench
