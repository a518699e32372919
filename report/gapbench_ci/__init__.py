"""gapbench's orchestration: builds trees, runs the gapbench executable, drives git (baseline,
nightly, gate_proof, gpu_check; runner is what they share). It reads and judges the results
through gapbench_report, which never imports this package."""
