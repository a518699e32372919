"""SYNTHESISED PyTorch GPU profiler traces for `gapbench-report explain`'s tests.

    python report/tests/traces/synthesise_gpu_traces.py [--out report/tests/data/traces]

No GPU ran these: each trace is written event by event from Kineto's documented trace schema
(what torch.profiler's export_chrome_trace writes: "X" events of the categories cpu_op,
user_annotation, cuda_runtime, kernel and gpu_memcpy, linked by args.correlation and "ac2g"
flows, with deviceProperties at the top), from a small model of a host thread that enqueues
work and one CUDA stream that runs it in order. Each is slow in exactly one planted way, named in
its file name (synthesised_gpu_<case>.pt.trace.json.gz); `clean` has none. The device is a
synthesised compute capability 8.0 GPU (so TF32 tensor cores exist). Where a real trace of the
same shape is captured on a GPU, it replaces the synthesised one.

The numbers are chosen, not measured: what the tests check is that each finding fires on its
planted cause and stays silent elsewhere, not the figures themselves.
"""

from __future__ import annotations

import argparse
import gzip
import json
from contextlib import contextmanager
from pathlib import Path

PID, TID, DEVICE, STREAM = 4242, 4242, 0, 7
STEPS = 5
TF32_GEMM = ("sm80_xmma_gemm_tf32f32_tf32f32_f32_nn_n_tilesize128x128x16_stage4_warpsize2x2x1_"
             "tensor16x8x8_kernel")
TF32_SMALL_GEMM = ("sm80_xmma_gemm_tf32f32_tf32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_"
                   "tensor16x8x8_kernel")
TF32_CONV = ("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_"
             "stage4_warpsize2x2x1_g1_tensor16x8x8_kernel")
FP32_GEMM = "ampere_sgemm_128x64_tn"
ELEMENTWISE = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add"
               "<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
               "at::detail::Array<char*, 3>)")


class Kineto:
    """A host thread's clock and one stream's: every call appends the events PyTorch's profiler
    would record for it. Times in microseconds."""

    def __init__(self):
        self.events: list[dict] = []
        self.host = 1000.0  # the host thread's clock
        self.gpu = 0.0  # when the stream is free
        self.external = 0
        self.correlation = 0

    def _x(self, cat, name, ts, dur, pid=PID, tid=TID, **args):
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
                            "ts": round(ts, 3), "dur": round(dur, 3), "args": args})

    @contextmanager
    def span(self, cat, name, **args):
        """An annotation or op around what the block does."""
        self.external += 1
        start, index = self.host, len(self.events)
        self.events.append({})  # placeholder: the span comes before its children
        yield
        self.host += 1.0
        self.events[index] = {"ph": "X", "cat": cat, "name": name, "pid": PID, "tid": TID,
                              "ts": round(start, 3), "dur": round(self.host - start, 3),
                              "args": {"External id": self.external, **args}}

    def op(self, name, dims=None, types=None):
        args = {"Input Dims": dims, "Input type": types} if dims else {}
        return self.span("cpu_op", name, **args)

    def python(self, us):
        self.host += us

    def _runtime(self, name, dur, device_cat=None, device_name=None, device_dur=0.0,
                 **device_args):
        self.correlation += 1
        c = self.correlation
        start = self.host
        self._x("cuda_runtime", name, start, dur, correlation=c, **{"External id": self.external})
        if device_cat:
            begin = max(self.gpu, start + dur)  # queued behind the stream's work
            self._x(device_cat, device_name, begin, device_dur, pid=DEVICE, tid=STREAM,
                    device=DEVICE, stream=STREAM, correlation=c,
                    **{"External id": self.external}, **device_args)
            self.events.append({"ph": "s", "id": c, "pid": PID, "tid": TID, "ts": start,
                                "cat": "ac2g", "name": "ac2g"})
            self.events.append({"ph": "f", "id": c, "pid": DEVICE, "tid": STREAM, "ts": begin,
                                "cat": "ac2g", "name": "ac2g", "bp": "e"})
            self.gpu = begin + device_dur
        self.host = start + dur

    def kernel(self, name, us, launch_us=5.0):
        self._runtime("cudaLaunchKernel", launch_us, "kernel", name, us,
                      grid=[108, 1, 1], block=[256, 1, 1])

    def copy(self, kind, nbytes, gbps, blocking):
        """cudaMemcpyAsync of `kind` ("HtoD (Pageable -> Device)"...); a pageable copy keeps the
        host until it is done, as the driver stages it."""
        us = nbytes / gbps / 1e3
        self._runtime("cudaMemcpyAsync", 4.0, "gpu_memcpy", f"Memcpy {kind}", us, bytes=nbytes,
                      **{"memory bandwidth (GB/s)": gbps})
        if blocking:
            self.host = max(self.host, self.gpu)

    def synchronize(self, name="cudaStreamSynchronize"):
        start = self.host
        end = max(start + 2.0, self.gpu + 2.0)
        self.correlation += 1
        self._x("cuda_runtime", name, start, end - start, correlation=self.correlation)
        self.host = end

    def item(self):
        """tensor.item() on the GPU: a 4-byte copy to pageable memory and a synchronize."""
        with self.op("aten::item", [[]], ["float"]):
            with self.op("aten::_local_scalar_dense", [[]], ["float"]):
                self.copy("DtoH (Device -> Pageable)", 4, 0.002, blocking=False)
                self.synchronize()

    def document(self, name):
        meta = [{"ph": "M", "name": "process_name", "pid": PID, "tid": 0,
                 "args": {"name": "python"}},
                {"ph": "M", "name": "process_name", "pid": DEVICE, "tid": 0,
                 "args": {"name": "python"}},
                {"ph": "M", "name": "process_labels", "pid": DEVICE, "tid": 0,
                 "args": {"labels": "GPU 0"}},
                {"ph": "M", "name": "thread_name", "pid": DEVICE, "tid": STREAM,
                 "args": {"name": f"stream {STREAM}"}}]
        return {"schemaVersion": 1,
                "deviceProperties": [{
                    "id": 0, "name": "Synthesised GPU (compute capability 8.0)",
                    "totalGlobalMem": 85_198_045_184, "computeMajor": 8, "computeMinor": 0,
                    "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
                    "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32,
                    "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 167936,
                    "numSms": 108, "sharedMemPerBlockOptin": 166912}],
                "host_name": "synthesised-host",
                "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
                "traceEvents": meta + self.events, "traceName": name,
                "displayTimeUnit": "ms", "baseTimeNanoseconds": 1_700_000_000_000_000_000}


def big_gemms(k: Kineto, n=4, us=2000.0, name=TF32_GEMM):
    for _ in range(n):
        with k.op("aten::mm", [[4096, 4096], [4096, 4096]], ["float", "float"]):
            k.kernel(name, us)


def case_clean(k):
    k.copy("HtoD (Pinned -> Device)", 8 << 20, 20.0, blocking=False)
    big_gemms(k)
    k.python(7900.0 - 4 * 7.0)  # the host keeps pace with the GPU, never far behind


def case_idle(k):
    k.python(6000.0)  # Python work between steps: the GPU waits for the host
    big_gemms(k, us=500.0)


def case_pageable(k):
    k.copy("HtoD (Pageable -> Device)", 64 << 20, 6.0, blocking=True)
    big_gemms(k)
    k.python(7900.0)


def case_sync(k):
    for _ in range(8):
        with k.op("aten::mm", [[4096, 4096], [4096, 4096]], ["float", "float"]):
            k.kernel(TF32_GEMM, 1000.0)
        k.synchronize()
        k.python(300.0)
    k.item()


def case_launch(k):
    with k.span("user_annotation", "Optimizer.step#Adam.step"):
        for _ in range(1500):
            with k.op("aten::add_", [[1024], [1024], []], ["float", "float", "Scalar"]):
                k.kernel(ELEMENTWISE, 2.0, launch_us=6.0)
            k.python(1.0)


def case_small_matmul(k):
    for _ in range(3):
        with k.op("aten::cudnn_convolution", [[64, 256, 56, 56], [256, 256, 3, 3]],
                  ["float", "float"]):
            k.kernel(TF32_CONV, 2000.0)
    for _ in range(40):
        with k.op("aten::mm", [[32, 32], [32, 32]], ["float", "float"]):
            k.python(10.0)
            k.kernel(TF32_SMALL_GEMM, 6.0)
    k.python(6000.0 - 40 * 20.0)


def case_fp32(k):
    big_gemms(k, name=FP32_GEMM)
    k.python(7900.0)


def loader_step(k, iterator, wait_us):
    with k.span("user_annotation", f"enumerate(DataLoader)#{iterator}.__next__"):
        k.python(wait_us)
    k.copy("HtoD (Pinned -> Device)", 16 << 20, 20.0, blocking=False)
    big_gemms(k, us=1000.0)
    k.python(3900.0)


def case_input(k):
    loader_step(k, "_SingleProcessDataLoaderIter", 12000.0)


def case_input_workers(k):
    loader_step(k, "_MultiProcessingDataLoaderIter", 10000.0)


CASES = {"clean": case_clean, "idle": case_idle, "pageable": case_pageable, "sync": case_sync,
         "launch": case_launch, "small_matmul": case_small_matmul, "fp32": case_fp32,
         "input": case_input, "input_workers": case_input_workers}


def synthesise(case: str) -> dict:
    k = Kineto()
    for step in range(STEPS):
        with k.span("user_annotation", f"ProfilerStep#{step + 2}"):
            CASES[case](k)
    return k.document(f"synthesised_gpu_{case}")


def write(document: dict, path: Path) -> Path:
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        out.write(json.dumps(document).encode())
    return path


def main() -> None:
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=here.parent / "data" / "traces")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for case in CASES:
        print(write(synthesise(case), args.out / f"synthesised_gpu_{case}.pt.trace.json.gz"))


if __name__ == "__main__":
    main()
