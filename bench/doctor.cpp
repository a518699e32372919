#include "bench/doctor.h"

#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures/device_probe.h"
#include "fixtures/machine.h"

namespace gapbench {

namespace {

constexpr const char* kUsage =
    "usage: gapbench doctor [--json]\n"
    "\n"
    "Shows what this machine brings to a benchmark run: GPU, NVIDIA driver, CUDA runtime, cuBLAS\n"
    "and cuDNN, the PCIe link between CPU and GPU, GPU clocks, the CPU and its libraries\n"
    "(OpenBLAS, oneDNN), and how Google Benchmark was built. Then it lists findings: anything\n"
    "here that makes GPU or CPU timings slower or noisier than they should be.\n"
    "\n"
    "  --json   print {\"facts\": {...}, \"findings\": [...]} instead; the facts are the ones "
    "every\n"
    "           results file carries in its context\n"
    "  --help   print this help\n"
    "\n"
    "Exit status: 0, also when there is no GPU; 2 for an unknown argument.\n";

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

std::string text_report(const std::vector<Fact>& facts, const std::vector<std::string>& findings) {
  Report r(facts);
  r.out() << "gapbench " << r.get("gapbench.version") << " doctor  ("
          << r.get("gapbench.build_type") << " build, "
          << (r.get("gapbench.with_cuda") == "yes" ? "with" : "without") << " CUDA; machine id "
          << r.get("machine.id") << ")\n";

  const std::string gpu_status = r.get("gpu.status");
  r.section("GPU", {
                       {"Status", gpu_status == "ok" ? "usable" : gpu_status},
                       {"Name", r.get("gpu.name")},
                       {"Compute capability", r.get("gpu.compute_capability")},
                       {"Streaming multiprocessors (SMs)", r.get("gpu.sm_count")},
                       {"Memory, total", r.gib("gpu.memory_total_bytes")},
                       {"Memory, free now", r.gib("gpu.memory_free_bytes")},
                       {"PCI bus id", r.get("gpu.pci_bus_id")},
                   });

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

  r.section(
      "GPU clocks",
      {
          {"SM (compute) clock", r.now_max("gpu.clock_sm_mhz", "gpu.clock_sm_max_mhz", "", " MHz")},
          {"Memory clock", r.now_max("gpu.clock_mem_mhz", "gpu.clock_mem_max_mhz", "", " MHz")},
          {"Clock limits (throttle reasons)", r.get("gpu.throttle_reasons")},
          {"Persistence mode", r.get("gpu.persistence_mode")},
      },
      nvml_missing);

  r.section("CPU", {
                       {"Model", r.get("cpu.model")},
                       {"Logical cores", r.get("cpu.cores")},
                       {"Memory, total", r.gib("cpu.memory_total_bytes")},
                       {"Frequency governor", r.get("cpu.governor")},
                       {"Frequency scaling", r.get("cpu.frequency_scaling")},
                   });

  r.section("CPU libraries", {
                                 {"OpenBLAS version", r.get("openblas.version")},
                                 {"OpenBLAS kernels chosen for", r.get("openblas.core")},
                                 {"OpenBLAS threads", r.get("openblas.threads")},
                                 {"OpenBLAS build", r.get("openblas.config")},
                                 {"oneDNN version", r.get("onednn.version")},
                             });

  r.section("Google Benchmark", {
                                    {"Library build type", r.get("gbench.library_build_type")},
                                });

  r.out() << "\nFindings\n";
  if (findings.empty()) {
    r.out() << "  None: nothing here should slow down or skew a benchmark run.\n";
  }
  for (const std::string& finding : findings) r.bullet(finding);
  return r.out().str();
}

std::string json_report(const std::vector<Fact>& facts, const std::vector<std::string>& findings) {
  std::string out = "{\n  \"facts\": {";
  for (std::size_t i = 0; i < facts.size(); ++i) {
    out += (i == 0 ? "\n" : ",\n");
    out += "    \"" + json_escape(facts[i].key) + "\": \"" + json_escape(facts[i].value) + "\"";
  }
  out += facts.empty() ? "},\n" : "\n  },\n";
  out += "  \"findings\": [";
  for (std::size_t i = 0; i < findings.size(); ++i) {
    out += (i == 0 ? "\n" : ",\n");
    out += "    \"" + json_escape(findings[i]) + "\"";
  }
  out += findings.empty() ? "]\n" : "\n  ]\n";
  out += "}\n";
  return out;
}

}  // namespace

int run_doctor(int argc, char** argv) {
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
  const std::vector<Fact> facts = machine_facts();
  const std::vector<std::string> findings = machine_findings(facts);
  std::cout << (json ? json_report(facts, findings) : text_report(facts, findings));
  std::cout.flush();
  return 0;
}

}  // namespace gapbench
