// How many threads a threaded library's next calls use, for the life of a scope: OpenBLAS's own
// pool (openblas_set_num_threads, process-wide), or oneDNN's, which is its OpenMP runtime's team
// (omp_set_num_threads, for parallel regions the calling thread starts). The count before comes
// back when the scope ends, so one row's setting never leaks into the next.
//
// oneDNN sizes some kernels when a primitive is created: create it inside the scope, and keep
// one primitive per thread count.
#pragma once

#include <optional>
#include <string>

namespace gapbench {

enum class ThreadedLibrary { openblas, onednn };

// "OpenBLAS", "oneDNN".
const char* library_name(ThreadedLibrary library);

// Why `library`'s threads cannot be set in this process (a oneDNN built with a runtime other
// than OpenMP, an OpenMP runtime that is not loaded), or nullopt where they can.
std::optional<std::string> threads_unsettable(ThreadedLibrary library);

// The threads `library` would use now; nullopt where threads_unsettable says why not.
std::optional<int> library_threads(ThreadedLibrary library);

class LibraryThreads {
 public:
  // Throws std::invalid_argument for a count below 1, std::runtime_error (the reason
  // threads_unsettable gives) where the library's threads cannot be set.
  LibraryThreads(ThreadedLibrary library, int threads);
  ~LibraryThreads();
  LibraryThreads(const LibraryThreads&) = delete;
  LibraryThreads& operator=(const LibraryThreads&) = delete;

 private:
  ThreadedLibrary library_;
  int saved_;
};

}  // namespace gapbench
