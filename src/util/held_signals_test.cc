#include "util/held_signals.h"

#include <gtest/gtest.h>

namespace autopar {
namespace {

volatile std::sig_atomic_t handled = 0;
extern "C" void countSignal(int) { handled = handled + 1; }

/// SIGUSR1 stands for the signals that end a process: the test's own handler counts it.
class HeldSignalsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    handled = 0;
    struct sigaction count {};
    count.sa_handler = countSignal;
    sigemptyset(&count.sa_mask);
    ::sigaction(SIGUSR1, &count, &previous_);
  }
  void TearDown() override { ::sigaction(SIGUSR1, &previous_, nullptr); }
  struct sigaction previous_ {};
};

TEST_F(HeldSignalsTest, RecordsASignalInsteadOfActingAndRestoresTheHandler) {
  {
    const HeldSignals held({SIGUSR1});
    EXPECT_EQ(HeldSignals::received(), 0);
    ::raise(SIGUSR1);
    EXPECT_EQ(HeldSignals::received(), SIGUSR1);
    EXPECT_EQ(handled, 0);
  }
  EXPECT_EQ(handled, 0) << "kRestore does not deliver";
  ::raise(SIGUSR1);
  EXPECT_EQ(handled, 1) << "the previous handler is back";
}

TEST_F(HeldSignalsTest, DeliversWhatArrivedWhenTheHoldEnds) {
  {
    const HeldSignals held({SIGUSR1}, HeldSignals::OnRelease::kDeliver);
    ::raise(SIGUSR1);
    EXPECT_EQ(handled, 0);
  }
  EXPECT_EQ(handled, 1);
}

TEST_F(HeldSignalsTest, AnInnerHoldKeepsWhatTheOuterOneNoted) {
  const HeldSignals outer({SIGUSR1});
  ::raise(SIGUSR1);
  {
    const HeldSignals inner({SIGUSR1});
    EXPECT_EQ(HeldSignals::received(), SIGUSR1);
  }
  EXPECT_EQ(HeldSignals::received(), SIGUSR1);
  EXPECT_EQ(handled, 0);
}

}  // namespace
}  // namespace autopar
