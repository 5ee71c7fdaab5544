// The settings' names: each setting has one, and each name leads back to its setting.

#include "ir/setting.h"

#include <gtest/gtest.h>

#include <set>

namespace autopar::ir {
namespace {

TEST(Setting, EveryNameLeadsBackToItsSetting) {
  std::set<std::string_view> names;
  for (int i = 0; i <= static_cast<int>(Setting::kFit); ++i) {
    const auto setting = static_cast<Setting>(i);
    const std::string_view name = settingName(setting);
    EXPECT_FALSE(name.empty()) << i;
    EXPECT_FALSE(name.starts_with("-")) << name;
    EXPECT_TRUE(names.insert(name).second) << name << " names two settings";
    EXPECT_EQ(settingNamed(name), setting) << name;
  }
  EXPECT_EQ(settingNamed("no-such-setting"), std::nullopt);
}

TEST(Setting, FlagsSpellTheNameAndValue) {
  EXPECT_EQ(flag(Setting::kTp), "--tp");
  EXPECT_EQ(flag(Setting::kPipelineStages, 8), "--pipeline-stages 8");
  EXPECT_EQ(flag(Setting::kMpCommRecompute), "--no-mp-comm-recompute");
  EXPECT_EQ(flag(Setting::kRecompute, "full"), "--recompute full");
}

}  // namespace
}  // namespace autopar::ir
