"""The real adapters' facts and GPU verdicts, with stand-ins for torch and tensorflow put into
sys.modules: CPU-only builds, a CUDA newer than the driver, no driver, a GPU in view."""

from __future__ import annotations

import sys
from types import SimpleNamespace as NS
from unittest.mock import MagicMock

import numpy as np
import pytest

from gapbench_probe.frameworks import ADAPTERS, Unavailable, tensorflow_adapter, torch_adapter
from gapbench_probe.frameworks.base import gpu_unusable
from gapbench_probe.machine import format_cuda, parse_cuda
from gapbench_probe.problems import ARITHMETIC


def fake_torch(cuda: str | None, gpus: int = 0) -> NS:
    matmul = NS(allow_tf32=False)
    return NS(
        __version__="2.9.0", version=NS(cuda=cuda),
        ones=lambda size, device: NS(add_=lambda x: None),
        cuda=NS(is_available=lambda: gpus > 0, device_count=lambda: gpus,
                get_device_name=lambda i: "NVIDIA T4", synchronize=lambda: None),
        backends=NS(cudnn=NS(version=lambda: 91000 if cuda else None,
                             is_available=lambda: bool(cuda), allow_tf32=True),
                    cuda=NS(matmul=matmul)),
        get_num_threads=lambda: 8, get_num_interop_threads=lambda: 4)


def torch_with(monkeypatch, cuda, gpus=0, driver=("12.4", "")):
    monkeypatch.setattr(torch_adapter, "driver_cuda_version", lambda: driver)
    return torch_adapter.TorchAdapter(fake_torch(cuda, gpus))


def test_torch_newer_cuda_than_the_driver_names_both(monkeypatch):
    torch = torch_with(monkeypatch, "13.0")
    assert torch.gpu_status() == "torch 2.9.0 built for CUDA 13.0; the driver supports 12.4"
    assert torch.facts()["framework.gpu"].startswith("none: torch 2.9.0 built for CUDA 13.0")


def test_torch_whose_cuda_fails_to_start_skips_with_the_error(monkeypatch):
    torch = torch_with(monkeypatch, "12.8", gpus=1)

    def fail(size, device):
        raise RuntimeError("CUDA error: no kernel image is available for execution\non the "
                           "device")
    torch.fw.ones = fail
    assert torch.gpu_status() == ("torch 2.9.0 sees a GPU but cannot use it: RuntimeError: CUDA "
                                  "error: no kernel image is available for execution on the "
                                  "device")


def test_a_fact_that_fails_leaves_the_others(monkeypatch):
    torch = torch_with(monkeypatch, "12.8", gpus=1)

    def fail(index):
        raise RuntimeError("CUDA driver initialization failed")
    torch.fw.cuda.get_device_name = fail
    facts = torch.facts()
    assert facts["framework.gpu"] == "unknown: RuntimeError: CUDA driver initialization failed"
    assert facts["framework.version"] == "2.9.0" and facts["framework.cuda_built"] == "12.8"


def test_torch_compile_failing_in_the_dense_step_backward_is_a_skip():
    """torch.compile compiles the backward at its first use: a compiler failing there is a
    skip, as in the forward; the same error in eager mode stays a failure."""
    torch = MagicMock()  # any attribute, any call
    torch.compile = lambda fn: fn
    backward = torch.nn.functional.cross_entropy.return_value.backward
    backward.side_effect = RuntimeError("InductorError: no working C++ compiler found")
    adapter = torch_adapter.TorchAdapter(torch)
    params = (np.zeros((4, 3)), np.zeros(3), np.zeros((3, 2)), np.zeros(2))
    x, labels = np.zeros((2, 4), np.float32), np.zeros(2, np.int64)
    with pytest.raises(Unavailable, match="^torch.compile does not work here: RuntimeError: "
                                          "InductorError: no working C"):
        adapter.dense("cpu", params, x, labels, 0.1, compiled=True).call()
    with pytest.raises(RuntimeError, match="InductorError"):
        adapter.dense("cpu", params, x, labels, 0.1, compiled=False).call()


def test_torch_cpu_only_build(monkeypatch):
    torch = torch_with(monkeypatch, None)
    assert torch.gpu_status() == "torch 2.9.0 is a CPU-only build (no CUDA)"
    facts = torch.facts()
    assert facts["framework.cuda_built"] == "none (CPU-only build)"
    assert facts["framework.cudnn_built"] == "none"


def test_torch_without_a_driver(monkeypatch):
    torch = torch_with(monkeypatch, "12.1", driver=(None, "no NVIDIA driver (libcuda.so.1 not "
                                                          "found)"))
    assert torch.gpu_status() == ("torch 2.9.0 built for CUDA 12.1; no NVIDIA driver "
                                  "(libcuda.so.1 not found)")


def test_a_gpu_hidden_by_cuda_visible_devices_says_so(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert gpu_unusable("torch 2.9.0", "12.1", False, ("12.4", "")) == (
        "torch 2.9.0 sees no GPU with CUDA_VISIBLE_DEVICES='' (built for CUDA 12.1, the driver "
        "supports 12.4)")


def test_a_newer_minor_cuda_is_not_named_as_the_cause(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    # CUDA's minor-version compatibility runs 12.5 on a 12.4 driver: not the cause.
    assert torch_with(monkeypatch, "12.5").gpu_status() == (
        "torch 2.9.0 sees no GPU (built for CUDA 12.5, the driver supports 12.4)")


def fake_tensorflow(cuda: str | None, gpus: int = 0, opened: bool = True) -> NS:
    """`gpus` physical GPUs, each a logical device too where TensorFlow `opened` them."""
    build = {"is_cuda_build": bool(cuda), "cuda_version": cuda, "cudnn_version": "9"}
    physical = [NS(name=f"/physical_device:GPU:{i}") for i in range(gpus)]
    logical = [NS(name=f"/device:GPU:{i}") for i in range(gpus)] if opened else []
    return NS(
        __version__="2.21.0", sysconfig=NS(get_build_info=lambda: build),
        config=NS(list_physical_devices=lambda kind: physical if kind == "GPU" else [],
                  list_logical_devices=lambda kind: logical if kind == "GPU" else [],
                  experimental=NS(get_device_details=lambda d: {"device_name": "NVIDIA A100"},
                                  tensor_float_32_execution_enabled=lambda: True),
                  threading=NS(get_intra_op_parallelism_threads=lambda: 0,
                               get_inter_op_parallelism_threads=lambda: 2)),
        keras=NS(mixed_precision=NS(global_policy=lambda: NS(name="mixed_float16"))))


def tensorflow_with(monkeypatch, cuda, gpus=0, driver=("12.4", ""), opened=True):
    monkeypatch.setattr(tensorflow_adapter, "driver_cuda_version", lambda: driver)
    monkeypatch.setitem(sys.modules, "keras", None)  # the stand-in's own tf.keras
    return tensorflow_adapter.TensorflowAdapter(fake_tensorflow(cuda, gpus, opened))


def test_tensorflow_cpu_build_newer_cuda_and_missing_libraries(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert tensorflow_with(monkeypatch, None).gpu_status() == (
        "tensorflow 2.21.0 is a CPU-only build (no CUDA)")
    assert tensorflow_with(monkeypatch, "13.0", driver=("12.4", "")).gpu_status() == (
        "tensorflow 2.21.0 built for CUDA 13.0; the driver supports 12.4")
    assert tensorflow_with(monkeypatch, "12.5.1").gpu_status() == (
        "tensorflow 2.21.0 sees no GPU (built for CUDA 12.5.1, the driver supports 12.4); its "
        "GPU build needs the CUDA libraries of `pip install tensorflow[and-cuda]`")


def test_tensorflow_with_a_physical_gpu_it_could_not_open_sees_no_gpu(monkeypatch):
    tensorflow = tensorflow_with(monkeypatch, "12.3", gpus=1, opened=False)
    assert tensorflow.gpu_status().startswith("tensorflow 2.21.0 sees no GPU")


def test_tensorflow_result_left_on_the_cpu_under_a_gpu_name_is_caught(monkeypatch):
    tensorflow = tensorflow_with(monkeypatch, "12.3", gpus=1)
    on_cpu = NS(device="/job:localhost/replica:0/task:0/device:CPU:0")
    on_gpu = NS(device="/job:localhost/replica:0/task:0/device:GPU:0")
    assert tensorflow.misplaced("gpu", (on_gpu, on_cpu)) == (
        "tensorflow 2.21.0 computed it on /job:localhost/replica:0/task:0/device:CPU:0, not on "
        "the GPU (soft device placement)")
    assert tensorflow.misplaced("gpu", (7, on_gpu)) is None  # a pipeline's batch index
    assert tensorflow.misplaced("cpu", on_cpu) is None


PER_CASE = "the probe's GPU cases: on for math:tf32, off for float32"


@pytest.mark.parametrize("make,facts", [
    (lambda mp: torch_with(mp, "12.1", gpus=2),
     {"framework.gpu": "NVIDIA T4 (2 devices)", "framework.cudnn_built": "9.10.0",
      # torch's defaults: cuDNN's TF32 on, cuBLAS's off
      "framework.tf32_matmul": f"off by default; {PER_CASE}",
      "framework.tf32_conv": f"on by default; {PER_CASE}",
      "framework.threads_intra_op": "8", "framework.threads_inter_op": "4"}),
    (lambda mp: tensorflow_with(mp, "12.3", gpus=1),
     {"framework.gpu": "NVIDIA A100 (1 device)", "framework.mixed_precision": "mixed_float16",
      "framework.tf32_matmul": f"on by default; {PER_CASE}",
      "framework.threads_intra_op": "0 (TensorFlow's choice)"}),
], ids=["torch", "tensorflow"])
def test_a_framework_that_sees_a_gpu_records_its_facts(monkeypatch, make, facts):
    adapter = make(monkeypatch)
    assert adapter.gpu_status() == "ok"
    assert facts.items() <= adapter.facts().items()


def torch_switches(adapter) -> tuple[bool, bool]:
    backends = adapter.fw.backends
    return backends.cuda.matmul.allow_tf32, backends.cudnn.allow_tf32


def test_torch_computes_each_gpu_case_in_its_math_and_puts_its_defaults_back(monkeypatch):
    torch = torch_with(monkeypatch, "12.8", gpus=1)  # cuBLAS's TF32 off, cuDNN's on
    with torch.arithmetic("gpu", "tf32") as arithmetic:
        assert torch_switches(torch) == (True, True) and arithmetic == ARITHMETIC["tf32"]
    for math in ("fp32", "fp16", "bf16"):
        with torch.arithmetic("gpu", math) as arithmetic:
            assert torch_switches(torch) == (False, False) and arithmetic == ARITHMETIC[math]
        assert torch_switches(torch) == (False, True)
    with torch.arithmetic("cpu", "fp32") as arithmetic:  # the CPU computes float32
        assert torch_switches(torch) == (False, True) and arithmetic == ARITHMETIC["fp32"]


def test_a_gpu_without_the_tensor_cores_of_a_math_skips_it(monkeypatch):
    torch = torch_with(monkeypatch, "12.8", gpus=1)
    torch.fw.cuda.get_device_capability = lambda index: (7, 5)
    with pytest.raises(Unavailable, match=r"^bf16 tensor cores need compute capability 8\.0, "
                                          r"this GPU is 7\.5$"):
        with torch.arithmetic("gpu", "bf16"):
            pass
    assert torch_switches(torch) == (False, True)  # nothing switched
    with torch.arithmetic("gpu", "fp16"):
        pass
    tensorflow = tensorflow_with(monkeypatch, "12.3", gpus=1)
    tensorflow.fw.config.experimental.get_device_details = lambda d: {"compute_capability": (7, 0)}
    assert tensorflow.lacks("tf32") == ("TF32 tensor cores need compute capability 8.0, this GPU "
                                        "is 7.0")
    assert tensorflow.lacks("fp16") is None and tensorflow.lacks("fp32") is None


def test_tensorflow_switches_its_one_tf32_setting_per_case(monkeypatch):
    tensorflow = tensorflow_with(monkeypatch, "12.3", gpus=1)
    state = [True]
    config = tensorflow.fw.config.experimental
    config.tensor_float_32_execution_enabled = lambda: state[0]
    config.enable_tensor_float_32_execution = lambda on: state.__setitem__(0, on)
    with tensorflow.arithmetic("gpu", "fp32"):
        assert state == [False]
    assert state == [True]
    with tensorflow.arithmetic("gpu", "tf32"):
        assert state == [True]


def test_torch_holds_a_half_case_in_its_type_and_runs_fp16_conv_channels_last():
    """With a stand-in torch that records calls: the tensors of math:fp16 and bf16 go to the
    framework's float16 and bfloat16, conv in float16 in channels_last, and the result comes
    back as float32 (what only a run with torch can check: that torch computes it)."""
    torch = MagicMock()
    adapter = torch_adapter.TorchAdapter(torch)
    a = np.zeros((2, 2), np.float32)
    adapter.matmul("gpu", a, a, "bf16")
    moved = torch.from_numpy.return_value.to.return_value
    assert moved.to.call_args_list[-1].args == (torch.bfloat16,)
    x, w = np.zeros((1, 2, 3, 3), np.float32), np.zeros((2, 2, 3, 3), np.float32)
    runner = adapter.conv("gpu", x, w, 1, 1, "fp16")
    assert moved.to.call_args_list[-1].args == (torch.float16,)
    half = moved.to.return_value
    assert half.contiguous.call_args.kwargs == {"memory_format": torch.channels_last}
    runner.fetch(torch.nn.functional.conv2d.return_value)
    assert torch.nn.functional.conv2d.return_value.float.called
    calls = len(moved.to.call_args_list)
    adapter.conv("gpu", x, w, 1, 1, "tf32")  # TF32 reads float32: no conversion, NCHW
    assert len(moved.to.call_args_list) == calls and half.contiguous.call_count == 2


def test_a_missing_framework_is_unavailable_with_the_reason(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(Unavailable, match=r"^torch is not installed in this Python \("):
        ADAPTERS["torch"].open()


def test_a_framework_that_fails_to_import_is_unavailable(monkeypatch, tmp_path):
    (tmp_path / "tensorflow.py").write_text("raise ImportError('numpy ABI mismatch')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
    with pytest.raises(Unavailable, match="tensorflow does not import: ImportError: numpy ABI"):
        ADAPTERS["tensorflow"].open()


def test_cuda_versions():
    assert format_cuda(12040) == "12.4" and format_cuda(13000) == "13.0"
    assert parse_cuda("12.4") == (12, 4) and parse_cuda("none") is None
    assert torch_adapter.cudnn_text(8902) == "8.9.2"
    assert torch_adapter.cudnn_text(92600) == "9.26.0"


def test_torch_runs_a_threads_case_on_its_count_and_puts_the_users_back(monkeypatch):
    torch = torch_with(monkeypatch, None)
    threads = [8]  # the user's torch.set_num_threads(8)
    torch.fw.get_num_threads = lambda: threads[0]
    torch.fw.set_num_threads = lambda n: threads.__setitem__(0, n)
    with torch.lib_threads(1) as used:
        assert used == 1 and threads == [1]
    assert threads == [8]
    with pytest.raises(RuntimeError), torch.lib_threads(2):
        raise RuntimeError("the case failed")
    assert threads == [8]
    with torch.lib_threads(None) as used:  # a case without lib_threads: left as it is
        assert used is None and threads == [8]


def test_tensorflow_sets_its_threads_before_its_first_op_and_never_after(monkeypatch):
    tensorflow = tensorflow_with(monkeypatch, None)
    pools = {"intra": 0, "started": False}  # TensorFlow's choice, until its first op

    def set_intra(count):
        if pools["started"]:
            raise RuntimeError("Intra op parallelism cannot be modified after initialization.")
        pools["intra"] = count
    tensorflow.fw.config.threading = NS(get_intra_op_parallelism_threads=lambda: pools["intra"],
                                        set_intra_op_parallelism_threads=set_intra)
    assert not tensorflow.threads_in_process  # its lib_threads cases run in a child per count
    with tensorflow.lib_threads(1) as used:
        assert used == 1
        pools["started"] = True
    assert pools["intra"] == 1  # not put back: it cannot be, and the child ends
    with tensorflow.lib_threads(1) as used:  # the count it has: nothing to change
        assert used == 1
    with pytest.raises(Unavailable, match="cannot change once it has run an op: RuntimeError"), \
            tensorflow.lib_threads(2):
        pass
