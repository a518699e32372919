#include "fixtures/results_file.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "tests/temp_dir.h"

namespace gapbench {
namespace {

using namespace testing_files;

constexpr const char* kDocument =
    "{\n  \"context\": {\"a\": \"}\"},\n  \"benchmarks\": [\n  ]\n}\n";

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
    EXPECT_TRUE(file_exists(file.partial_path()));
    EXPECT_EQ(read_file(path_), "previous");  // untouched until commit
    file.commit(kDocument, true);
  }
  EXPECT_EQ(read_file(path_), kDocument);
  EXPECT_TRUE(partial_files(path_).empty());
}

TEST_F(ResultsFile, WithoutCommitThePreviousFileStaysAndThePartialGoes) {
  { AtomicResultsFile file(path_); }
  EXPECT_EQ(read_file(path_), "previous");
  EXPECT_TRUE(partial_files(path_).empty());
}

TEST_F(ResultsFile, TwoWritersOfOnePathHaveTheirOwnPartialFiles) {
  AtomicResultsFile first(path_), second(path_);
  EXPECT_NE(first.partial_path(), second.partial_path());
  second.commit("second\n", false);
  EXPECT_EQ(read_file(path_), "second\n");
  first.commit("first\n", false);  // the last to finish wins, whole
  EXPECT_EQ(read_file(path_), "first\n");
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

// Every write is checked: /dev/full fails each one, as a full disk does.
TEST(WriteAll, AFailedWriteSaysHowMuchWhereAndWhy) {
  const int fd = open("/dev/full", O_WRONLY);
  if (fd < 0) GTEST_SKIP() << "no /dev/full here";
  try {
    write_all(fd, "12345", "/dev/full");
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "could not write 5 bytes to /dev/full: No space left on device");
  }
  close(fd);
}

TEST(CompleteJsonDocument, OnlyAWholeObjectPasses) {
  const std::string doc = kDocument;
  EXPECT_TRUE(complete_json_document(doc));
  // Cut anywhere, as a full disk cuts it: never complete.
  for (std::size_t n = 0; n < doc.size(); ++n) {
    EXPECT_FALSE(complete_json_document(doc.substr(0, n))) << n;
  }
  EXPECT_FALSE(complete_json_document(doc + "{}\n"));            // two documents
  EXPECT_FALSE(complete_json_document("[1]\n"));                 // not an object
  EXPECT_FALSE(complete_json_document("{\"a\": [}\n"));          // mismatched
  EXPECT_FALSE(complete_json_document("{\"a\": \"b}\n"));        // string left open
  EXPECT_TRUE(complete_json_document("{\"a\": \"[{\\\\\"}\n"));  // brackets inside a string
}

TEST_F(ResultsFile, AnIncompleteDocumentIsNeverCommitted) {
  {
    AtomicResultsFile file(path_);
    const std::string cut = std::string(kDocument).substr(0, 20);
    EXPECT_THROW(file.commit(cut, true), std::runtime_error);
  }
  EXPECT_EQ(read_file(path_), "previous");
  EXPECT_TRUE(partial_files(path_).empty());
}

// The decision: a regular file (or none yet) is replaced; a character device or a FIFO is
// written into; anything else is refused. Never a rename over a non-regular file.
TEST_F(ResultsFile, OnlyRegularFilesAreReplaced) {
  EXPECT_EQ(results_target(path_), ResultsTarget::replace);
  EXPECT_EQ(results_target(dir_ + "/new.json"), ResultsTarget::replace);
  EXPECT_EQ(results_target("/dev/null"), ResultsTarget::write_directly);
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  EXPECT_EQ(results_target(fifo), ResultsTarget::write_directly);
  EXPECT_THROW(results_target(dir_), std::runtime_error);

  const std::string socket_path = dir_ + "/socket";
  const int sock = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, socket_path.c_str(), sizeof address.sun_path - 1);
  ASSERT_EQ(bind(sock, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  try {
    results_target(socket_path);
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("it is a socket"), std::string::npos) << e.what();
  }
  close(sock);
}

TEST_F(ResultsFile, AFifoIsWrittenIntoAndStaysAFifo) {
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
  // The reader is there first (the document fits in the pipe's buffer).
  const int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  {
    AtomicResultsFile file(fifo);
    EXPECT_EQ(file.partial_path(), "");
    file.commit(kDocument, true);
  }
  char buffer[4096];
  const ssize_t n = read(reader, buffer, sizeof buffer);
  close(reader);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buffer, static_cast<std::size_t>(n)), kDocument);
  struct stat st {};
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_TRUE(partial_files(fifo).empty());
}

// A link is followed: the file it names is replaced, beside itself, and the link stays a link.
TEST_F(ResultsFile, ALinkReplacesItsTarget) {
  ASSERT_EQ(mkdir((dir_ + "/real").c_str(), 0755), 0);
  const std::string target = dir_ + "/real/r.json", link = dir_ + "/latest.json";
  write_file(target, "previous");
  ASSERT_EQ(symlink("real/r.json", link.c_str()), 0);
  {
    AtomicResultsFile file(link);
    EXPECT_EQ(file.partial_path().rfind(target + ".partial.", 0), 0u) << file.partial_path();
    file.commit(kDocument, true);
  }
  struct stat st {};
  ASSERT_EQ(lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(read_file(target), kDocument);
  EXPECT_TRUE(partial_files(target).empty());
  EXPECT_TRUE(partial_files(link).empty());

  // A dangling link makes the file it names, as a shell's `>` does.
  const std::string dangling = dir_ + "/next.json";
  ASSERT_EQ(symlink("real/next.json", dangling.c_str()), 0);
  AtomicResultsFile(dangling).commit(kDocument, true);
  ASSERT_EQ(lstat(dangling.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(read_file(dir_ + "/real/next.json"), kDocument);
}

// The partial file's name fits the folder's limit (255), in the same folder, even for the
// longest name a results file can have.
TEST_F(ResultsFile, TheLongestNamesStillGetAPartialFile) {
  for (std::size_t length : {250u, 255u}) {
    const std::string name = dir_ + "/" + std::string(length - 5, 'r') + ".json";
    {
      AtomicResultsFile file(name);
      const std::string partial = file.partial_path();
      EXPECT_EQ(partial.rfind(dir_ + "/", 0), 0u);
      EXPECT_LE(partial.size() - dir_.size() - 1, 255u) << partial;
      file.commit(kDocument, true);
    }
    EXPECT_EQ(read_file(name), kDocument);
    EXPECT_TRUE(partial_files(name).empty());
  }
}

TEST(WithContext, AddsEntriesToTheContextObject) {
  const std::string json = with_context(kDocument, {{"k", "v\"1"}});
  EXPECT_TRUE(complete_json_document(json));
  EXPECT_NE(json.find("\"context\": {\n    \"k\": \"v\\\"1\",\"a\""), std::string::npos) << json;
  EXPECT_THROW(with_context("{}\n", {{"k", "v"}}), std::runtime_error);
}

}  // namespace
}  // namespace gapbench
