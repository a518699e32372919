#include "fixtures/child_probe.h"

#include <gtest/gtest.h>

#include <signal.h>

#include <stdexcept>
#include <string>

#include "fixtures/device_probe.h"

namespace gapbench {
namespace {

ChildResult shell(const std::string& script, double timeout = 30.0) {
  return run_child("/bin/sh", {"-c", script}, timeout);
}

// ---- running a child ----

TEST(ChildProbe, CollectsBothStreamsAndTheExitStatus) {
  const ChildResult r = shell("echo out; echo err >&2; exit 3");
  EXPECT_EQ(r.exit_status, 3);
  EXPECT_EQ(r.signal, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_EQ(r.describe(), "exited with status 3");
}

TEST(ChildProbe, ReadsMoreThanAPipeHoldsFromBothStreams) {
  // 200 KB on each stream, interleaved: reading one to its end first would deadlock.
  const ChildResult r = shell(
      "i=0; while [ $i -lt 2000 ]; do "
      "printf '%099d\\n' $i; printf '%099d\\n' $i >&2; i=$((i+1)); done");
  EXPECT_EQ(r.exit_status, 0);
  EXPECT_EQ(r.out.size(), 200000u);
  EXPECT_EQ(r.err.size(), 200000u);
}

TEST(ChildProbe, ReportsASignal) {
  const ChildResult r = shell("kill -9 $$");
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_NE(r.describe().find("killed by signal 9"), std::string::npos) << r.describe();
}

TEST(ChildProbe, KillsAChildThatRunsPastItsTimeout) {
  const ChildResult r = shell("exec sleep 30", 0.3);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.describe(), "timed out after 0.3 s");
  EXPECT_THROW(probe::read_seconds("context", r), std::runtime_error);
}

TEST(ChildProbe, TheTimeoutHoldsAfterTheChildClosesItsOutput) {
  const ChildResult r = shell("exec >&- 2>&-; exec sleep 30", 0.3);
  EXPECT_TRUE(r.timed_out);
}

TEST(ChildProbe, StdinIsEmpty) {
  EXPECT_EQ(shell("cat").out, "");  // /dev/null: a child never waits for input
}

TEST(ChildProbe, AMissingProgramIsAnError) {
  try {
    run_child("/no/such/program", {}, 5.0);
    FAIL() << "started";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot start /no/such/program"), std::string::npos);
  }
}

// ---- the result line ----

ChildResult printed(const std::string& out, int status = 0, const std::string& err = "") {
  ChildResult r;
  r.exit_status = status;
  r.out = out;
  r.err = err;
  return r;
}

TEST(ChildProbe, LinesRoundTrip) {
  const std::string line = probe::seconds_line("context", 0.125);
  EXPECT_EQ(line, "gapbench-probe what=context seconds=0.125");
  EXPECT_EQ(probe::read_seconds("context", printed(line + "\n")), 0.125);
  // Other output around the line is ignored; the last result line counts.
  EXPECT_EQ(probe::read_seconds("context", printed("noise\n" + probe::seconds_line("context", 1) +
                                                   "\n" + line + "\nmore noise\n")),
            0.125);
  EXPECT_EQ(probe::read_seconds("context", printed(line)), 0.125);  // no final newline
}

TEST(ChildProbe, ASkipLineIsASkipWithTheChildsReason) {
  const ChildResult r = printed(
      probe::skipped_line("first_launch", "no NVIDIA driver (libcuda.so.1 not found)") + "\n",
      probe::kExitSkipped);
  try {
    probe::read_seconds("first_launch", r);
    FAIL() << "no Skip";
  } catch (const Skip& s) {
    EXPECT_STREQ(s.what(), "no NVIDIA driver (libcuda.so.1 not found)");
  }
}

TEST(ChildProbe, LineBreaksInAReasonStayOnTheLine) {
  EXPECT_EQ(probe::skipped_line("context", "two\nlines"),
            "gapbench-probe what=context skipped=two lines");
}

// The message read_seconds throws for a child's outcome, or "" if it throws none.
std::string error_for(const std::string& what, const ChildResult& r) {
  try {
    probe::read_seconds(what, r);
  } catch (const Skip& s) {
    return std::string("skip: ") + s.what();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(ChildProbe, EveryOtherOutcomeIsAnErrorThatSaysWhatHappened) {
  const auto has = [](const std::string& message, const std::string& part) {
    return message.find(part) != std::string::npos;
  };
  std::string m = error_for(
      "context",
      printed(probe::error_line("context", "cudaErrorLaunchFailure") + "\n", probe::kExitError));
  EXPECT_TRUE(has(m, "failed: cudaErrorLaunchFailure")) << m;
  m = error_for("context", printed("", 1, "Segmentation fault\n"));
  EXPECT_TRUE(has(m, "exited with status 1 without a result line; its stderr: Segmentation fault"))
      << m;
  m = error_for("context", printed(probe::seconds_line("first_launch", 0.5)));
  EXPECT_TRUE(has(m, "answered for `first_launch`")) << m;
  m = error_for("context", printed(probe::seconds_line("context", 0.5), 1));
  EXPECT_TRUE(has(m, "printed a time but exited with status 1")) << m;
  for (const char* bad :
       {"gapbench-probe what=context seconds=", "gapbench-probe what=context seconds=1.5x",
        "gapbench-probe what=context seconds=-1", "gapbench-probe what=context seconds=nan",
        "gapbench-probe what=context seconds=inf"}) {
    m = error_for("context", printed(bad));
    EXPECT_TRUE(has(m, "unreadable time")) << bad << ": " << m;
  }
  for (const char* bad : {"gapbench-probe what=context", "gapbench-probe what=context took=1"}) {
    m = error_for("context", printed(bad));
    EXPECT_TRUE(has(m, "unreadable result line")) << bad << ": " << m;
  }
  ChildResult killed = printed(probe::seconds_line("context", 0.5));
  killed.signal = SIGSEGV;
  m = error_for("context", killed);
  EXPECT_TRUE(has(m, "was killed by signal 11")) << m;
}

}  // namespace
}  // namespace gapbench
