#include "fixtures/results_file.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/temp_dir.h"

namespace gapbench {
namespace {

using namespace testing_files;

class ResultsFile : public ::testing::Test {
 protected:
  void SetUp() override { write_file(path_, "previous"); }
  TempDir temp_;
  const std::string dir_ = temp_.path();
  const std::string path_ = dir_ + "/r.json";
};

TEST_F(ResultsFile, CommitReplacesTheFileWhole) {
  {
    AtomicResultsFile file(path_);
    EXPECT_EQ(file.partial_path().rfind(path_ + ".partial.", 0), 0u) << file.partial_path();
    std::ofstream(file.partial_path()) << "new";
    EXPECT_EQ(read_file(path_), "previous");  // untouched until commit
    file.commit();
  }
  EXPECT_EQ(read_file(path_), "new");
  EXPECT_TRUE(partial_files(path_).empty());
}

TEST_F(ResultsFile, WithoutCommitThePreviousFileStaysAndThePartialGoes) {
  {
    AtomicResultsFile file(path_);
    std::ofstream(file.partial_path()) << "half a ru";
  }
  EXPECT_EQ(read_file(path_), "previous");
  EXPECT_TRUE(partial_files(path_).empty());
}

TEST_F(ResultsFile, TwoWritersOfOnePathHaveTheirOwnPartialFiles) {
  AtomicResultsFile first(path_), second(path_);
  EXPECT_NE(first.partial_path(), second.partial_path());
  std::ofstream(first.partial_path()) << "first";
  std::ofstream(second.partial_path()) << "second";
  second.commit();
  EXPECT_EQ(read_file(path_), "second");
  first.commit();  // the last to finish wins, whole
  EXPECT_EQ(read_file(path_), "first");
  EXPECT_TRUE(partial_files(path_).empty());
}

TEST_F(ResultsFile, UnwritablePlacesAreRefusedUpFront) {
  try {
    AtomicResultsFile file(dir_ + "/missing/r.json");
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot write results to '" + dir_ + "/missing/r.json'"),
              std::string::npos)
        << e.what();
  }
  ASSERT_EQ(mkdir((dir_ + "/adir").c_str(), 0755), 0);
  EXPECT_THROW(AtomicResultsFile(dir_ + "/adir"), std::runtime_error);
  EXPECT_TRUE(partial_files(dir_ + "/adir").empty());
  EXPECT_THROW(AtomicResultsFile(""), std::runtime_error);
}

}  // namespace
}  // namespace gapbench
