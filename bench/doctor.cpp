#include "bench/doctor.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures/device_probe.h"
#include "fixtures/doctor_rules.h"
#include "fixtures/json_writer.h"
#include "fixtures/machine.h"
#include "fixtures/results_file.h"
#include "fixtures/settings.h"

namespace gapbench {

namespace {

constexpr const char* kUsage =
    "usage: gapbench doctor [--json]\n"
    "\n"
    "Shows what this machine brings to a benchmark run: GPU, NVIDIA driver, CUDA runtime, cuBLAS\n"
    "and cuDNN, the PCIe link between CPU and GPU, GPU clocks and memory bandwidth, the CPU and\n"
    "its libraries (OpenBLAS, oneDNN), the host (hypervisor, clock source), and how Google\n"
    "Benchmark was built, and gapbench's settings from the environment (GAPBENCH_*). Then it\n"
    "lists findings: anything here that makes GPU or CPU timings slower or noisier than they\n"
    "should be, and any setting a run would refuse.\n"
    "\n"
    "  --json   print {\"facts\": {...}, \"findings\": [...], \"settings\": [...]} instead: the\n"
    "           facts every results file carries in its context (numbers as JSON numbers), each\n"
    "           finding as {\"id\", \"severity\", \"text\"}, each GAPBENCH_* setting (and\n"
    "           OMP_NUM_THREADS) set as {\"name\", \"value\", \"refused\"}, refused \"\" where a\n"
    "           run takes it, else the line a run stops with\n"
    "  --help   print this help\n"
    "\n"
    "Exit status: 0 when nothing found invalidates GPU results, also on a machine with no NVIDIA\n"
    "driver at all (a CPU machine); 3 when something does: a driver older than the CUDA runtime,\n"
    "a driver that sees no usable GPU, a GPU whose compute mode forbids contexts; 2 for an\n"
    "unknown argument, or a report that cannot be written (stdout closed, a full disk).\n";

constexpr int kLabelWidth = 36;
constexpr std::size_t kLineWidth = 100;

struct Row {
  std::string label;
  std::string value;
};

class Report {
 public:
  explicit Report(const std::vector<Fact>& facts) : facts_(facts) {}

  std::string get(const char* key) const { return fact(facts_, key); }

  // "<value><unit>" ("63 C"); the value alone when it is not a number ("unavailable (...)"), ""
  // when the fact is unknown.
  std::string with_unit(const std::string& key, const std::string& unit) const {
    const std::string value = fact(facts_, key);
    return parse_number(value) ? value + unit : value;
  }

  // "a / b" from two keys, with a unit; one side alone when the other is unknown.
  std::string now_max(const char* now_key, const char* max_key, const std::string& prefix = "",
                      const std::string& unit = "") const {
    const std::string now = get(now_key);
    const std::string max = get(max_key);
    if (now.empty() && max.empty()) return "";
    const auto side = [&](const std::string& v) { return v.empty() ? "?" : prefix + v; };
    return side(now) + " now / " + side(max) + " max" + unit;
  }

  std::string gib(const char* key) const {
    const std::string bytes = get(key);
    if (bytes.empty()) return "";
    try {
      return format_gib(std::stod(bytes)) + " (" + bytes + " bytes)";
    } catch (...) {
      return bytes;
    }
  }

  // "13.1.0 (compiled against 13.1.0)", or the reason it is not usable.
  std::string library(const std::string& prefix) const {
    const std::string status = fact(facts_, prefix + ".status");
    const std::string loaded = fact(facts_, prefix + ".version_loaded");
    const std::string compiled = fact(facts_, prefix + ".version_compiled");
    const std::string against = compiled.empty() ? "" : "compiled against " + compiled;
    if (status == "ok") return loaded + (against.empty() ? "" : " (" + against + ")");
    return "not usable: " + status + (against.empty() ? "" : "; " + against);
  }

  // Prints a section; rows with no value are left out. When none has one, `missing` stands in.
  void section(const char* title, const std::vector<Row>& rows, const std::string& missing = "") {
    out_ << "\n" << title << "\n";
    bool any = false;
    for (const Row& row : rows) {
      if (row.value.empty()) continue;
      any = true;
      std::string label = "  " + row.label;
      if (label.size() < kLabelWidth) label.resize(kLabelWidth, ' ');
      out_ << label << " " << row.value << "\n";
    }
    if (!any) out_ << "  " << (missing.empty() ? "nothing known" : missing) << "\n";
  }

  // Word-wrapped bullet with a hanging indent.
  void bullet(const std::string& text) {
    std::istringstream words(text);
    std::string word;
    std::string line = "  -";
    while (words >> word) {
      if (line.size() + 1 + word.size() > kLineWidth && line.size() > 4) {
        out_ << line << "\n";
        line = "   ";
      }
      line += " " + word;
    }
    out_ << line << "\n";
  }

  std::ostringstream& out() { return out_; }

 private:
  const std::vector<Fact>& facts_;
  std::ostringstream out_;
};

// Facts whose values are numbers, written as JSON numbers; every other value stays a string
// (versions such as "13.0" included: they are not quantities).
bool numeric_fact(const std::string& key) {
  static const char* const kSuffixes[] = {
      "_bytes",   "_mhz",           "_gbps",      "_count",           "_c",    "_bits",
      "_w",       "_pct",           ".cores",     ".threads",         "_cpus", ".gen_current",
      ".gen_max", ".width_current", ".width_max", "compute_processes"};
  for (const char* suffix : kSuffixes) {
    const std::string s = suffix;
    if (key.size() >= s.size() && key.compare(key.size() - s.size(), s.size(), s) == 0) {
      return true;
    }
  }
  return key == "gpu.count";
}

// "1 of 2 (affinity: CPUs 0; quota: cgroup v1 cpu.cfs_quota_us 100000 / cpu.cfs_period_us 100000
// in /sys/fs/cgroup/cpu/x)": what limits them, judged in doctor_rules' fewer_usable_cpus.
std::string usable_cpus(const Report& r) {
  const std::string usable = r.get("cpu.usable_cpus");
  if (usable.empty()) return "";
  const std::string quota = r.get("cpu.quota_setting");
  const std::string affinity = r.get("cpu.affinity_cpus") == "1" ? "CPU " : "CPUs ";
  return usable + " of " + r.get("cpu.cores") + " (affinity: " + affinity +
         r.get("cpu.affinity_list") +
         "; quota: " + (quota.empty() ? r.get("cpu.quota_source") : quota) + ")";
}

std::string text_report(const std::vector<Fact>& facts, const std::vector<Finding>& findings,
                        const std::vector<EnvironmentSetting>& settings) {
  Report r(facts);
  r.out() << "gapbench " << r.get("gapbench.version") << " doctor  ("
          << r.get("gapbench.build_type") << " build, "
          << (r.get("gapbench.with_cuda") == "yes" ? "with" : "without") << " CUDA; machine id "
          << r.get("machine.id") << ")\n";

  r.section("System", {
                          {"Operating system", r.get("os.name")},
                          {"Kernel", r.get("os.kernel")},
                          {"Hypervisor", r.get("host.hypervisor")},
                          {"Clock source (host timers)", r.get("host.clocksource")},
                          {"glibc", r.get("os.glibc")},
                          {"gapbench compiled with", r.get("gapbench.compiler")},
                      });

  const std::string gpu_status = r.get("gpu.status");
  const auto watts = [&](const char* draw, const char* limit) {
    const std::string d = r.get(draw), l = r.get(limit);
    if (d.empty() && l.empty()) return std::string();
    return (d.empty() ? "?" : d) + " W of " + (l.empty() ? "?" : l) + " W limit";
  };
  const std::string busy = r.with_unit("gpu.utilization_gpu_pct", "%");
  r.section("GPU",
            {
                {"Status", gpu_status == "ok" ? "usable" : gpu_status},
                {"CUDA_VISIBLE_DEVICES", r.get("cuda.visible_devices")},
                {"GPUs visible", r.get("gpu.count")},
                {"Name (device 0, benchmarked)", r.get("gpu.name")},
                {"UUID", r.get("gpu.uuid")},
                {"Compute capability", r.get("gpu.compute_capability")},
                {"Tensor cores (precisions)", r.get("gpu.tensor_cores")},
                {"TF32 in framework defaults", r.get("framework.tf32_default")},
                {"Streaming multiprocessors (SMs)", r.get("gpu.sm_count")},
                {"Memory, total", r.gib("gpu.memory_total_bytes")},
                {"Memory, free now", r.gib("gpu.memory_free_bytes")},
                {"PCI bus id", r.get("gpu.pci_bus_id")},
                {"Temperature", r.with_unit("gpu.temperature_c", " C")},
                {"Power", watts("gpu.power_draw_w", "gpu.power_limit_w")},
                {"Utilisation, SMs / memory",
                 busy.empty() ? "" : busy + " / " + r.with_unit("gpu.utilization_memory_pct", "%")},
                {"Processes computing on it", r.get("gpu.compute_processes")},
                {"Compute mode", r.get("gpu.compute_mode")},
                {"ECC", r.get("gpu.ecc")},
                {"MIG", r.get("gpu.mig")},
            });
  for (int i = 1;; ++i) {  // every other GPU, briefly
    const std::string prefix = "gpu." + std::to_string(i) + ".";
    const std::string name = fact(facts, prefix + "name");
    if (name.empty()) break;
    std::string line = name + " (" + fact(facts, prefix + "uuid") + ")";
    for (const std::string& part : {r.with_unit(prefix + "temperature_c", " C"),
                                    r.with_unit(prefix + "utilization_gpu_pct", "% busy"),
                                    r.with_unit(prefix + "compute_processes", " processes")}) {
      if (!part.empty()) line += ", " + part;
    }
    r.section(("GPU " + std::to_string(i)).c_str(), {{"Device", line}});
  }

  std::string driver_cuda = r.get("cuda.driver_version");
  if (driver_cuda == "none") driver_cuda = "none (no NVIDIA driver found)";
  r.section("CUDA stack",
            {
                {"NVIDIA driver release", r.get("nvidia.driver_release")},
                {"Newest CUDA the driver supports", driver_cuda},
                {"CUDA runtime in use", r.get("cuda.runtime_version")},
                {"CUDA runtime compiled against", r.get("cuda.runtime_compiled")},
                {"cuBLAS (GPU matrix library)", r.library("cublas")},
                {"cuDNN (GPU deep-learning library)", r.library("cudnn")},
                {"NVML (driver's monitoring library)", r.get("nvml.status")},
            },
            "not available: " + gpu_status);

  // Why the NVML-based sections are empty, when they are.
  const std::string nvml_status = r.get("nvml.status");
  const std::string nvml_missing =
      "not available: " + (gpu_status != "ok"    ? gpu_status
                           : nvml_status != "ok" ? nvml_status
                                                 : std::string("not reported by NVML"));
  std::string bandwidth = r.now_max("pcie.bandwidth_current_gbps", "pcie.bandwidth_max_gbps");
  if (!bandwidth.empty()) bandwidth += " GB/s per direction (theoretical)";
  r.section("PCIe link (how CPU memory reaches the GPU)",
            {
                {"Generation", r.now_max("pcie.gen_current", "pcie.gen_max", "gen ")},
                {"Lanes (width)", r.now_max("pcie.width_current", "pcie.width_max", "x")},
                {"Bandwidth", bandwidth},
            },
            nvml_missing);

  // "3352.3 GB/s (2 x 2619 MHz x 5120 bits / 8)", or why it is unknown.
  std::string memory_bandwidth = r.get("gpu.memory_bandwidth_theoretical_gbps");
  if (parse_number(memory_bandwidth)) {
    memory_bandwidth += " GB/s (2 x " + r.get("gpu.clock_mem_max_mhz") + " MHz x " +
                        r.get("gpu.memory_bus_width_bits") + " bits / 8)";
  }
  r.section(
      "GPU clocks and memory",
      {
          {"SM (compute) clock", r.now_max("gpu.clock_sm_mhz", "gpu.clock_sm_max_mhz", "", " MHz")},
          {"Memory clock", r.now_max("gpu.clock_mem_mhz", "gpu.clock_mem_max_mhz", "", " MHz")},
          {"Memory bus width", r.with_unit("gpu.memory_bus_width_bits", " bits")},
          {"Memory bandwidth (theoretical)", memory_bandwidth},
          {"Clock limits (throttle reasons)", r.get("gpu.throttle_reasons")},
          {"Persistence mode", r.get("gpu.persistence_mode")},
      },
      nvml_missing);

  r.section("CPU", {
                       {"Model", r.get("cpu.model")},
                       {"Instruction set extensions", r.get("cpu.isa")},
                       {"bf16 instructions", r.get("cpu.bf16")},
                       {"Signature", r.get("cpu.signature")},
                       {"Logical cores", r.get("cpu.cores")},
                       {"CPUs this process may use", usable_cpus(r)},
                       {"Memory, total", r.gib("cpu.memory_total_bytes")},
                       {"Frequency governor", r.get("cpu.governor")},
                       {"Frequency scaling", r.get("cpu.frequency_scaling")},
                       {"Frequency, nominal", r.with_unit("cpu.frequency_nominal_mhz", " MHz")},
                       {"Frequency, max", r.with_unit("cpu.frequency_max_mhz", " MHz")},
                   });

  // "VAR=value" for a fact set from an environment variable, "" (no row) when it is not set.
  const auto assignment = [&](const std::string& variable, const char* key) {
    const std::string value = r.get(key);
    return value.empty() ? value : variable + "=" + value;
  };
  r.section("CPU libraries",
            {
                {"OpenBLAS version", r.get("openblas.version")},
                {"OpenBLAS kernels chosen for", r.get("openblas.core")},
                {"OpenBLAS core forced by", assignment("OPENBLAS_CORETYPE", "openblas.coretype")},
                {"OpenBLAS threads", r.get("openblas.threads")},
                {"oneDNN threads", r.get("onednn.threads")},
                {"OpenBLAS build", r.get("openblas.config")},
                {"oneDNN version", r.get("onednn.version")},
                {"oneDNN instruction set", r.get("onednn.isa")},
                {"oneDNN cap set", assignment("DNNL_MAX_CPU_ISA", "onednn.isa_cap")},
            });

  r.section("Google Benchmark", {
                                    {"Library build type", r.get("gbench.library_build_type")},
                                });

  // gapbench's own settings in force, each as a run takes it: a bad one is said where a run
  // would stop at it, rather than only when a run is tried.
  std::vector<Row> setting_rows;
  std::vector<std::string> refused;
  for (const EnvironmentSetting& s : settings) {
    const std::string said = !s.refused.empty() ? "refused: a run stops here"
                             : !s.note.empty()  ? s.note
                                                : "";
    setting_rows.push_back({s.name, s.value + (said.empty() ? "" : " (" + said + ")")});
    if (!s.refused.empty()) refused.push_back(s.refused);
  }
  r.section("Settings from the environment (GAPBENCH_*, OMP_NUM_THREADS)", setting_rows,
            "none set: every setting at its default");

  r.out() << "\nFindings\n";
  if (findings.empty() && refused.empty()) {
    r.out() << "  None: nothing here should slow down or skew a benchmark run.\n";
  }
  for (const std::string& why : refused)
    r.bullet("[problem] " + why + ": every gapbench run refuses it before anything runs.");
  for (const Finding& finding : findings)
    r.bullet("[" + severity_name(finding.severity) + "] " + finding.text);
  return r.out().str();
}

std::string json_report(const std::vector<Fact>& facts, const std::vector<Finding>& findings,
                        const std::vector<EnvironmentSetting>& settings) {
  JsonWriter json;
  json.begin_object().key("facts").begin_object();
  for (const Fact& f : facts) {
    json.key(f.key);
    if (numeric_fact(f.key)) {
      json.number(f.value);
    } else {
      json.string(f.value);
    }
  }
  json.end_object().key("findings").begin_array();
  for (const Finding& f : findings) {
    json.begin_object(JsonWriter::Layout::one_line)
        .key("id")
        .string(f.id)
        .key("severity")
        .string(severity_name(f.severity))
        .key("text")
        .string(f.text)
        .end_object();
  }
  json.end_array().key("settings").begin_array();
  for (const EnvironmentSetting& s : settings) {
    json.begin_object(JsonWriter::Layout::one_line)
        .key("name")
        .string(s.name)
        .key("value")
        .string(s.value)
        .key("refused")
        .string(s.refused)
        .end_object();
  }
  return json.end_array().end_object().text();
}

}  // namespace

int run_doctor(int argc, char** argv, bool stdout_closed) {
  bool json = false;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (arg == "--json") {
      json = true;
      continue;
    }
    std::cerr << "gapbench doctor: unknown argument '" << arg << "' (try --help)\n";
    return 2;
  }
  // The report is the whole point: one that is not delivered is a failure, not exit 0.
  if (stdout_closed) {
    std::cerr
        << "gapbench doctor: standard output is closed; there is nowhere to write the report\n";
    return 2;
  }
  const std::vector<Fact> facts = machine_facts();
  const std::vector<Finding> findings = machine_findings(facts);
  const std::vector<EnvironmentSetting> settings = environment_settings();
  try {
    write_all(
        STDOUT_FILENO,
        json ? json_report(facts, findings, settings) : text_report(facts, findings, settings),
        "standard output");
  } catch (const std::runtime_error& e) {
    std::cerr << "gapbench doctor: " << e.what() << "\n";
    return 2;
  }
  constexpr int kGpuResultsInvalid = 3;
  for (const Finding& f : findings) {
    if (f.invalidates_gpu_results) return kGpuResultsInvalid;
  }
  return 0;
}

}  // namespace gapbench
