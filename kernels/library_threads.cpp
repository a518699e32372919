#include "kernels/library_threads.h"

#include <cblas.h>
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>

#include <stdexcept>

namespace gapbench {

namespace {

// oneDNN links its OpenMP runtime, so the runtime's symbols are loaded already; gapbench does not
// link OpenMP itself (its own code has no parallel region).
using GetThreads = int (*)();
using SetThreads = void (*)(int);

struct OpenMp {
  GetThreads get = nullptr;
  SetThreads set = nullptr;
};

OpenMp open_mp() {
  return {reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "omp_get_max_threads")),
          reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"))};
}

}  // namespace

const char* library_name(ThreadedLibrary library) {
  return library == ThreadedLibrary::openblas ? "OpenBLAS" : "oneDNN";
}

std::optional<std::string> threads_unsettable(ThreadedLibrary library) {
  if (library == ThreadedLibrary::openblas) return std::nullopt;
  const dnnl_version_t* v = dnnl_version();
  if (v == nullptr || v->cpu_runtime != DNNL_RUNTIME_OMP) {
    return std::string("oneDNN's threads cannot be set here: its CPU runtime is not OpenMP");
  }
  const OpenMp omp = open_mp();
  if (omp.get == nullptr || omp.set == nullptr) {
    return std::string("oneDNN's threads cannot be set here: no OpenMP runtime is loaded");
  }
  return std::nullopt;
}

std::optional<int> library_threads(ThreadedLibrary library) {
  if (threads_unsettable(library)) return std::nullopt;
  if (library == ThreadedLibrary::openblas) return openblas_get_num_threads();
  return open_mp().get();
}

LibraryThreads::LibraryThreads(ThreadedLibrary library, int threads) : library_(library) {
  if (threads < 1) {
    throw std::invalid_argument(std::string(library_name(library)) +
                                " needs at least 1 thread, got " + std::to_string(threads));
  }
  if (const auto why = threads_unsettable(library)) throw std::runtime_error(*why);
  saved_ = *library_threads(library);
  if (library == ThreadedLibrary::openblas) {
    openblas_set_num_threads(threads);
  } else {
    open_mp().set(threads);
  }
}

LibraryThreads::~LibraryThreads() {
  if (library_ == ThreadedLibrary::openblas) {
    openblas_set_num_threads(saved_);
  } else {
    open_mp().set(saved_);
  }
}

}  // namespace gapbench
