#include "kernels/library_threads.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace gapbench {
namespace {

class LibraryThreadsTest : public ::testing::TestWithParam<ThreadedLibrary> {};

TEST_P(LibraryThreadsTest, SetsTheCountForTheScopeAndRestoresItAfter) {
  const ThreadedLibrary library = GetParam();
  ASSERT_FALSE(threads_unsettable(library)) << *threads_unsettable(library);
  const int before = *library_threads(library);
  {
    const LibraryThreads one(library, 1);
    EXPECT_EQ(library_threads(library), 1);
    {
      const LibraryThreads three(library, 3);
      EXPECT_EQ(library_threads(library), 3);
    }
    EXPECT_EQ(library_threads(library), 1);
  }
  EXPECT_EQ(library_threads(library), before);
}

TEST_P(LibraryThreadsTest, RefusesFewerThanOneThreadAndChangesNothing) {
  const ThreadedLibrary library = GetParam();
  const int before = *library_threads(library);
  EXPECT_THROW(LibraryThreads(library, 0), std::invalid_argument);
  EXPECT_EQ(library_threads(library), before);
}

INSTANTIATE_TEST_SUITE_P(Libraries, LibraryThreadsTest,
                         ::testing::Values(ThreadedLibrary::openblas, ThreadedLibrary::onednn),
                         [](const auto& info) { return std::string(library_name(info.param)); });

}  // namespace
}  // namespace gapbench
