// The framework table: each code-path switch is named once and its flag leads back to it; the
// refusals name the framework and the setting it cannot run.

#include "cost/framework.h"

#include <gtest/gtest.h>

#include <set>

namespace autopar::cost {
namespace {

TEST(CodePathSwitches, EachFieldHasOneFlag) {
  std::set<std::string_view> flags;
  for (const CodePathSwitch& each : codePathSwitches()) {
    EXPECT_TRUE(flags.insert(each.flag).second) << each.flag << " names two switches";
    EXPECT_EQ(switchFlag(each.field), fmt::format("--{}", each.flag));
  }
  EXPECT_EQ(switchFlag(&CodePath::gradReduceInBf16), "--grad-reduce-in-bf16");
}

TEST(Frameworks, RefusalsNameTheFrameworkAndTheSetting) {
  EXPECT_FALSE(parseFramework("megatron").ok());
  EXPECT_EQ(parseFramework("megatron").error().message.rfind("--framework 'megatron': ", 0), 0u)
      << parseFramework("megatron").error().message;
  ir::ParallelConfig config;
  config.cp = 2;
  const auto refused = checkRunnable(frameworkProfile(Framework::kMegatronLm2021), config, "bf16");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("cannot run --cp 2"), std::string::npos)
      << refused.error().message;
  config.cp = 1;
  EXPECT_TRUE(checkRunnable(frameworkProfile(Framework::kMegatronCore), config, "bf16").ok());
}

}  // namespace
}  // namespace autopar::cost
