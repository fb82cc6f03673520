// The learned policy's action set and the rule that keeps a blind policy from growing.
#include <gtest/gtest.h>

#include "policies/cpp/actions.hh"
#include "policies/cpp/policy_action.hh"

namespace ccgym {
namespace {

constexpr int kHalve = 0, kMinus10 = 1, kMinus1 = 2, kKeep = 3, kPlus1 = 4, kPlus10 = 5, kDouble = 6;
static_assert(kKeep == kHoldAction);

TEST(Actions, IndigoSetClampedToTheWindowRange) {
  EXPECT_DOUBLE_EQ(apply_action(40, kHalve), 20);
  EXPECT_DOUBLE_EQ(apply_action(40, kMinus10), 30);
  EXPECT_DOUBLE_EQ(apply_action(40, kKeep), 40);
  EXPECT_DOUBLE_EQ(apply_action(40, kPlus10), 50);
  EXPECT_DOUBLE_EQ(apply_action(40, kMinus1), 39);
  EXPECT_DOUBLE_EQ(apply_action(40, kPlus1), 41);
  EXPECT_DOUBLE_EQ(apply_action(40, kDouble), 80);
  EXPECT_DOUBLE_EQ(apply_action(5, kMinus10), kMinWindow);
  EXPECT_DOUBLE_EQ(apply_action(kMaxWindow, kDouble), kMaxWindow);
}

TEST(Actions, PolicyMayNotGrowTheWindowBeforeTheFirstAck) {
  const double before_ack = growth_ceiling(-1, true);
  EXPECT_DOUBLE_EQ(apply_policy_action(10, kDouble, before_ack), 10);
  EXPECT_DOUBLE_EQ(apply_policy_action(10, kPlus10, before_ack), 10);
  EXPECT_DOUBLE_EQ(apply_policy_action(10, kHalve, before_ack), 5);
  EXPECT_DOUBLE_EQ(apply_policy_action(10, kMinus10, before_ack), kMinWindow);
}

TEST(Actions, PolicyGrowsAtMostToTwiceTheFlightOrTheInitialWindow) {
  EXPECT_DOUBLE_EQ(growth_ceiling(0.5, true), kInitialWindow);  // a packet per two RTTs
  EXPECT_DOUBLE_EQ(growth_ceiling(30, true), 60);
  EXPECT_DOUBLE_EQ(apply_policy_action(40, kDouble, growth_ceiling(30, true)), 60);
  EXPECT_DOUBLE_EQ(apply_policy_action(40, kPlus10, growth_ceiling(30, true)), 50);
  EXPECT_DOUBLE_EQ(apply_policy_action(4, kDouble, growth_ceiling(1, true)), 8);
  // Above the ceiling (the pipe shrank) the window stays unless the policy shrinks it.
  EXPECT_DOUBLE_EQ(apply_policy_action(100, kPlus1, growth_ceiling(30, true)), 100);
  EXPECT_DOUBLE_EQ(apply_policy_action(100, kMinus10, growth_ceiling(30, true)), 90);
}

TEST(Actions, PolicyDoesNotGrowTheWindowWithoutAnAckSinceItLastGrew) {
  EXPECT_DOUBLE_EQ(growth_ceiling(30, false), 0);
  EXPECT_DOUBLE_EQ(apply_policy_action(40, kDouble, growth_ceiling(30, false)), 40);
  EXPECT_DOUBLE_EQ(apply_policy_action(40, kHalve, growth_ceiling(30, false)), 20);
}

TEST(Actions, PolicyGrowsOncePerAck) {
  // One datagram per 40 ms RTT: an ACK every 40 ms, decisions every 10 ms.
  Features features;
  ExternalWindow window(2);
  features.on_sent(0, 1500, 0);
  features.on_ack(0, 1500, 0, 40);
  // Three steps after the ACK the policy may still grow once, but not twice on that ACK.
  EXPECT_DOUBLE_EQ(take_policy_action(features, window, kPlus1), 3);
  EXPECT_DOUBLE_EQ(take_policy_action(features, window, kPlus1), 3);
  EXPECT_DOUBLE_EQ(take_policy_action(features, window, kMinus1), 2);  // shrinking is free
  features.on_sent(1, 1500, 40);
  features.on_ack(1, 1500, 40, 80);
  EXPECT_DOUBLE_EQ(take_policy_action(features, window, kPlus10), kInitialWindow);
  EXPECT_DOUBLE_EQ(window.window_size(), kInitialWindow);
}

TEST(Actions, PolicyGrowsToTwiceTheFlightWhereAcksAreHeldBack) {
  // 12 Mbit/s (a datagram per ms), 20 ms min RTT, ACKs held back 80 ms after the first: the
  // pipe is 20 datagrams, the flight a window must cover to keep the link busy 100.
  Features features;
  ExternalWindow window(20);
  features.on_sent(0, 1500, 0);
  features.on_ack(0, 1500, 0, 20);
  for (uint64_t n = 1; n < 300; ++n) {
    const double send_ms = static_cast<double>(n);
    features.on_sent(n, 1500, send_ms);
    features.on_ack(n, 1500, send_ms, send_ms + 100);
  }
  EXPECT_DOUBLE_EQ(growth_ceiling(features, window), 2 * features.flight_packets());
  EXPECT_GT(growth_ceiling(features, window), 150);  // twice the pipe would be 40
  EXPECT_DOUBLE_EQ(take_policy_action(features, window, kDouble), 40);
  EXPECT_DOUBLE_EQ(take_policy_action(features, window, kDouble), 40);  // no ACK since
}

TEST(Actions, ExpertPicksTheClosestResult) {
  EXPECT_EQ(closest_action(15, 40), kDouble);
  EXPECT_EQ(closest_action(30, 40), kPlus10);
  EXPECT_EQ(closest_action(40, 40), kKeep);
  EXPECT_EQ(closest_action(40, 42), kPlus1);
  EXPECT_EQ(closest_action(40, 37), kMinus1);
  for (int a = 0; a < kNumActions; ++a) EXPECT_STRNE(kActionNames[static_cast<std::size_t>(a)], "");
  EXPECT_EQ(closest_action(100, 40), kHalve);
  // Held at a ceiling of 20, x2 and +10 both reach 20: the smaller change is asked for.
  EXPECT_EQ(closest_action(15, 40, 20), kPlus10);
  EXPECT_EQ(closest_action(15, 40, growth_ceiling(-1, true)), kKeep);  // before the first ACK
}

}  // namespace
}  // namespace ccgym
