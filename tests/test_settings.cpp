#include "fixtures/settings.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gapbench {
namespace {

// Sets variables for one test, and puts back what was there.
class SettingsEnvironment : public ::testing::Test {
 protected:
  void set(const std::string& name, const std::string& value) {
    if (saved_.count(name) == 0) {
      const char* before = std::getenv(name.c_str());
      saved_[name] = before ? std::optional<std::string>(before) : std::nullopt;
    }
    setenv(name.c_str(), value.c_str(), 1);
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

const EnvironmentSetting* find(const std::vector<EnvironmentSetting>& all,
                               const std::string& name) {
  const auto it = std::find_if(all.begin(), all.end(),
                               [&](const EnvironmentSetting& s) { return s.name == name; });
  return it == all.end() ? nullptr : &*it;
}

TEST(Settings, SeedIsAWholeNumberNamedByItsSetting) {
  EXPECT_EQ(parse_seed("42", "--seed"), 42u);
  EXPECT_EQ(parse_seed("18446744073709551615", "--seed"), 18446744073709551615ull);
  for (const char* bad : {"", "-1", "abc", "4x", "18446744073709551616"}) {
    try {
      parse_seed(bad, "environment variable GAPBENCH_SEED");
      ADD_FAILURE() << "took '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()),
                "environment variable GAPBENCH_SEED needs a non-negative integer, got '" +
                    std::string(bad) + "'");
    }
  }
}

TEST_F(SettingsEnvironment, OmpThreadsTakesWhatOpenMpTakesUpTo8192) {
  for (const char* good : {"1", "8192", "4,2", " 3 , 1 "}) {
    set("OMP_NUM_THREADS", good);
    EXPECT_NO_THROW(check_omp_threads()) << good;
  }
  for (const char* bad : {"0", "8193", "999999", "99999999999999999999", "abc", "4,", ",4", "4,,2",
                          "-1", "2.5", " "}) {
    set("OMP_NUM_THREADS", bad);
    EXPECT_THROW(check_omp_threads(), std::invalid_argument) << bad;
  }
}

// Every GAPBENCH_* set is listed, by name, each as a run takes it: a bad one with the run's own
// line, one gapbench does not read said so.
TEST_F(SettingsEnvironment, EverySettingSetIsListedWithWhatARunMakesOfIt) {
  set("GAPBENCH_MAX_CPU_ISA", "bad");
  set("GAPBENCH_SEED", "7");
  set("GAPBENCH_NOT_A_SETTING", "x");
  set("OMP_NUM_THREADS", "999999");
  const std::vector<EnvironmentSetting> all = environment_settings();
  EXPECT_TRUE(std::is_sorted(
      all.begin(), all.end(),
      [](const EnvironmentSetting& a, const EnvironmentSetting& b) { return a.name < b.name; }));
  const auto* isa = find(all, "GAPBENCH_MAX_CPU_ISA");
  ASSERT_NE(isa, nullptr);
  EXPECT_EQ(isa->value, "bad");
  EXPECT_EQ(isa->refused.rfind("environment variable GAPBENCH_MAX_CPU_ISA must be sse41", 0), 0u)
      << isa->refused;
  const auto* seed = find(all, "GAPBENCH_SEED");
  ASSERT_NE(seed, nullptr);
  EXPECT_TRUE(seed->refused.empty() && seed->note.empty());
  const auto* other = find(all, "GAPBENCH_NOT_A_SETTING");
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->note, "not read by gapbench itself");
  const auto* omp = find(all, "OMP_NUM_THREADS");
  ASSERT_NE(omp, nullptr);
  EXPECT_NE(omp->refused.find("got '999999'"), std::string::npos);
}

}  // namespace
}  // namespace gapbench
