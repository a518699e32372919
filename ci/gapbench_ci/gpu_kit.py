"""Make the GPU kit: what a GPU machine without network needs to check gapbench.

    ci/gpu-kit [--arch 90] [--dir .gpu-kit] [--no-build] [--no-debs]

Made on a machine with network, in an ignored folder of the checkout (.gpu-kit/) that travels
with the source:
- bin/: gapbench and gapbench_gpu_tests built here for the GPU's architecture (--arch);
- debs/: the Debian packages of the libraries gapbench links that a GPU machine's image lacks
  (Google Benchmark, GoogleTest, OpenBLAS, oneDNN and the OpenCL headers oneDNN's CMake
  configuration asks for), from `apt-get download`;
- kit.json: the source it was built from (a hash of the C++ sources), the architecture, the
  packages.

There, `ci/gpu-check --kit .gpu-kit` unpacks the packages into the kit's own prefix (never
into /), puts their libraries and the machine's Python NVIDIA wheels' cuDNN and cuBLAS on the
loader's path, and uses the kit's binaries when they load and match the source; otherwise it
builds from the source with the packages (docs/setup.md, "A GPU machine without network").
Exit status 0 made, 2 bad arguments or a step that failed (one line on stderr).
"""

from __future__ import annotations

import json
import os
import shutil
import site
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from gapbench_report.cli import kit as commandline
from gapbench_report.cli.kit import ToolError
from gapbench_report.inputs.files import write_json_atomic

from gapbench_ci import tools
from gapbench_ci.gpu_run import hash_files
from gapbench_ci.runner import REPO_ROOT, tree_state

PROG = "ci/gpu-kit"
DEFAULT_DIR = REPO_ROOT / ".gpu-kit"
BINARIES = ("gapbench", "tests/gapbench_gpu_tests")
# What gapbench links from Debian's packages (runtime and development files; the headers and
# CMake configurations are for a build there when the binaries do not load).
PACKAGES = ("libbenchmark-dev", "libbenchmark1debian", "libgtest-dev", "libopenblas-dev",
            "libopenblas0", "libopenblas0-pthread", "libopenblas-pthread-dev", "libgfortran5",
            "libdnnl-dev", "libdnnl2", "ocl-icd-opencl-dev", "ocl-icd-libopencl1",
            "opencl-c-headers", "opencl-clhpp-headers")
# The C++ sources the binaries are built from, and the tables built into them (the methods table
# among them): the kit's binaries stand for this hash only (and ci/gpu-check's record of what it
# did, for these and the Python that runs the steps).
BUILD_SOURCES = ("CMakeLists.txt", "CMakePresets.json", "cmake", "bench", "fixtures", "kernels",
                 "tests", "report/gapbench_report/tables")
# The NVIDIA libraries a machine's Python wheels bring (PyTorch's), by the file that marks them.
WHEEL_LIBRARIES = ("libcudnn.so.9", "libcublas.so.13", "libcublas.so.12")
# apt-get download of every package: a guard against a hang, far above its minute or so.
DOWNLOAD_S = 1800


def build_source_hash(root: Path = REPO_ROOT) -> str:
    return hash_files(root, BUILD_SOURCES)


# ---- on the GPU machine ------------------------------------------------------------------------

@dataclass
class Kit:
    path: Path
    # Where the packages are unpacked (never /): by default beside the kit, not in it, so that the
    # kit travels at its packed size.
    root: Path | None = None

    @property
    def prefix(self) -> Path:
        return self.root or self.path.with_name(self.path.name + "-root")

    def binary(self, name: str) -> Path:
        return self.path / "bin" / Path(name).name

    def manifest(self) -> dict:
        try:
            return json.loads((self.path / "kit.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def check(self) -> None:
        if not (self.path / "debs").is_dir() or not any((self.path / "debs").glob("*.deb")):
            raise ToolError(f"{self.path} holds no debs/*.deb: make it with {PROG} on a machine "
                            "with network (docs/setup.md)")

    def unpack(self) -> None:
        """Unpacks every package into the prefix (once: a marker says it was done whole)."""
        done = self.prefix / ".unpacked"
        debs = sorted((self.path / "debs").glob("*.deb"))
        names = "\n".join(d.name for d in debs)
        if done.exists() and done.read_text(encoding="utf-8") == names:
            return
        shutil.rmtree(self.prefix, ignore_errors=True)
        self.prefix.mkdir(parents=True)
        for deb in debs:
            tools.run(["dpkg-deb", "-x", deb, self.prefix], f"unpacking {deb.name}")
        done.write_text(names, encoding="utf-8")

    def environment(self, python: str = sys.executable) -> dict[str, str]:
        """What the build and the binaries need from the kit: the packages' libraries on the
        loader's path (OpenBLAS's directly: dpkg -x runs no alternatives), with the Python
        wheels' cuDNN and cuBLAS; CMake's search paths for a build."""
        lib = self.prefix / "usr" / "lib" / "x86_64-linux-gnu"
        blas = lib / "openblas-pthread"
        wheels = wheel_library_dirs(python)
        def joined(*parts: object, name: str) -> str:
            return os.pathsep.join([*(str(p) for p in parts if p),
                                    *filter(None, [os.environ.get(name)])])
        return {"LD_LIBRARY_PATH": joined(blas, lib, *wheels, name="LD_LIBRARY_PATH"),
                "CMAKE_PREFIX_PATH": joined(self.prefix / "usr", name="CMAKE_PREFIX_PATH"),
                "CMAKE_LIBRARY_PATH": joined(blas, lib, name="CMAKE_LIBRARY_PATH"),
                "CPATH": joined(self.prefix / "usr" / "include", name="CPATH"),
                "BLA_VENDOR": "OpenBLAS"}

    def usable_binaries(self, env: dict[str, str]) -> tuple[bool, str]:
        """Whether the kit's binaries stand for this source and load here, and why not."""
        made = self.manifest()
        if not all(self.binary(b).exists() for b in BINARIES):
            return False, "the kit has no binaries"
        if made.get("source") != build_source_hash():
            return False, "the kit's binaries were built from other sources"
        for name in BINARIES:
            try:
                got = tools.run([self.binary(name), "--help"], limit=60, env=env, ok=None)
            except tools.CommandFailed as e:
                return False, f"{Path(name).name} does not start here: {e}"
            if got.status != 0:
                return False, f"{Path(name).name} does not load here: {got.last or '?'}"
        return True, (f"the kit's binaries (built {made.get('date', '?')} for "
                      f"sm_{made.get('arch', '?')}, {made.get('commit', '?')})")


def wheel_library_dirs(python: str = sys.executable) -> list[str]:
    """The lib folders of the NVIDIA wheels (cuDNN, cuBLAS) in `python`'s site-packages."""
    if python == sys.executable:
        roots = [*site.getsitepackages(), site.getusersitepackages()]
    else:
        try:
            roots = tools.run([python, "-c", "import site; print('\\n'.join("
                               "site.getsitepackages() + [site.getusersitepackages()]))"],
                              limit=60, ok=None).out.split()
        except tools.CommandFailed:
            roots = []
    found: list[str] = []
    for root in roots:
        nvidia = Path(root) / "nvidia"
        if not nvidia.is_dir():
            continue
        for marker in WHEEL_LIBRARIES:
            for hit in sorted(nvidia.glob(f"*/lib/{marker}")):
                if str(hit.parent) not in found:
                    found.append(str(hit.parent))
    return found


# ---- on the machine with network ---------------------------------------------------------------

def make(kit_dir: Path, arch: str, build: bool, debs: bool) -> str:
    kit_dir.mkdir(parents=True, exist_ok=True)
    made = Kit(kit_dir).manifest() or {}
    if build:
        build_dir = REPO_ROOT / "build" / f"gpu-kit-sm{arch}"
        # Built here for another machine: CMake's own choice of Python (this checkout's .venv),
        # as for any build here, not the one running this (ci/gpu-check names its own there).
        tools.configure(REPO_ROOT, build_dir, python=None, cuda_architectures=arch,
                        require_gpu_libraries=True, what="configuring", echo=True)
        tools.build(build_dir, tools.GAPBENCH_AND_GPU_TESTS, what="building", echo=True)
        (kit_dir / "bin").mkdir(exist_ok=True)
        for name in BINARIES:
            shutil.copy2(build_dir / name, kit_dir / "bin" / Path(name).name)
        made.update(source=build_source_hash(), arch=arch,
                    commit=tree_state(REPO_ROOT).label,
                    date=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    if debs:
        # Downloaded beside, then swapped in: a download cut off leaves the earlier packages.
        fresh = kit_dir / "debs.tmp"
        shutil.rmtree(fresh, ignore_errors=True)
        fresh.mkdir()
        tools.run(["apt-get", "download", *PACKAGES], "apt-get download", DOWNLOAD_S,
                  cwd=fresh, echo=True, missing="apt-get downloads the packages (Debian, Ubuntu)")
        shutil.rmtree(kit_dir / "debs", ignore_errors=True)
        fresh.rename(kit_dir / "debs")
        made["packages"] = sorted(p.name for p in (kit_dir / "debs").glob("*.deb"))
    write_json_atomic(kit_dir / "kit.json", made)
    size = sum(p.stat().st_size for p in kit_dir.rglob("*") if p.is_file())
    return (f"{kit_dir}: {len(made.get('packages', []))} packages, binaries for "
            f"sm_{made.get('arch', '?')}; {size / 2**20:.0f} MiB")




def _run(argv: list[str]) -> int:
    p = commandline.parser(PROG, __doc__)
    p.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="the kit's folder")
    p.add_argument("--arch", default="90",
                   help="the GPU's CUDA architecture (90: H100 and H200)")
    p.add_argument("--no-build", action="store_true", help="leave the binaries as they are")
    p.add_argument("--no-debs", action="store_true", help="leave the packages as they are")
    args = p.parse_args(argv)
    if not args.arch.isdigit():
        raise ToolError(f"--arch {args.arch}: give the architecture's number, as 90")
    print(f"{PROG}: {make(args.dir.resolve(), args.arch, not args.no_build, not args.no_debs)}",
          file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    return commandline.run(PROG, _run, argv, command="gpu-kit")


if __name__ == "__main__":
    sys.exit(main())
