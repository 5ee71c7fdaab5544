#include "util/in_parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

namespace autopar::util {
namespace {

TEST(InParallel, ResultsComeBackInOrderWhateverFinishesFirst) {
  // The first item is the slowest: the others finish before it, and still come back after it.
  const auto results = inParallel(4, [](size_t i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(i == 0 ? 30 : 1));
    return std::to_string(i * i);
  });
  EXPECT_EQ(results, (std::vector<std::string>{"0", "1", "4", "9"}));
}

TEST(InParallel, RunsTheItemsAtOnce) {
  // Each item waits until every item has started: run one after another, they would never return.
  constexpr size_t kItems = 3;
  std::atomic<size_t> started{0};
  const auto results = inParallel(kItems, [&](size_t i) {
    ++started;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (started < kItems && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    return started.load() == kItems;
  });
  EXPECT_EQ(results, (std::vector<bool>(kItems, true)));
}

TEST(InParallel, NoItemsGiveNoResults) {
  EXPECT_TRUE(inParallel(0, [](size_t) { return 1; }).empty());
}

TEST(InParallel, AnItemsExceptionReachesTheCaller) {
  EXPECT_THROW(inParallel(3,
                          [](size_t i) {
                            if (i == 2) throw std::runtime_error("item 2");
                            return static_cast<int>(i);
                          }),
               std::runtime_error);
}

TEST(InParallel, WidthIsBetweenOneAndFour) {
  EXPECT_GE(parallelWidth(), 1U);
  EXPECT_LE(parallelWidth(), 4U);
}

}  // namespace
}  // namespace autopar::util
