// The facts of a healthy GPU machine, for tests that change one or two and see what follows.
#pragma once

#include <string>
#include <vector>

#include "fixtures/machine.h"

namespace gapbench {

// A healthy GPU machine, as machine_facts() would report it.
inline std::vector<Fact> healthy_facts() {
  return {
      {"gapbench.build_type", "release"},
      {"cpu.model", "AMD EPYC 7B13"},
      {"cpu.isa", "sse4_2 avx avx2 fma"},
      {"cpu.cores", "16"},
      {"cpu.affinity_cpus", "16"},
      {"cpu.affinity_list", "0-15"},
      {"cpu.quota_cpus", "none"},
      {"cpu.quota_source", "none found"},
      {"cpu.usable_cpus", "16"},
      {"openblas.threads", "16"},
      {"onednn.threads", "16"},
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

// Sets `key` to `value`, adding it when absent.
inline void set(std::vector<Fact>& facts, const std::string& key, const std::string& value) {
  for (Fact& f : facts) {
    if (f.key == key) {
      f.value = value;
      return;
    }
  }
  facts.push_back({key, value});
}

}  // namespace gapbench
