#include "util/closest_name.h"

#include <gtest/gtest.h>

namespace autopar {
namespace {

TEST(ClosestName, CountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(editDistance("", ""), 0u);
  EXPECT_EQ(editDistance("nodes", "nodes"), 0u);
  EXPECT_EQ(editDistance("latency_ms", "latency_us"), 1u);
  EXPECT_EQ(editDistance("devices_per_nod", "devices_per_node"), 1u);
  EXPECT_EQ(editDistance("kitten", "sitting"), 3u);
}

TEST(ClosestName, PicksTheNearestKnownNameAndTheFirstOnTies) {
  EXPECT_EQ(closestName("devices_per_nod", {"name", "nodes", "devices_per_node"}),
            "devices_per_node");
  EXPECT_EQ(closestName("ab", {"aa", "bb"}), "aa");
}

}  // namespace
}  // namespace autopar
