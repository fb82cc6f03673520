// The vectorized environment's engine: N single-flow simulations stepped together.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "emulators/cpp/vec_simulator.hh"
#include "policies/cpp/actions.hh"
#include "policies/cpp/features.hh"

namespace ccgym {
namespace {

constexpr const char* kLink = "rate_mbps=12,delay_ms=20";

TEST(VecSimulator, StepsEverySimulationOneStepOfTheSharedClock) {
  VecSimulator vec(3, /*threads=*/1);
  // A window of one BDP (40 packets of 1 ms at 12 Mbit/s over a 40 ms RTT): a steady flow.
  for (std::size_t i = 0; i < 3; ++i) vec.reset(i, kLink, /*seed=*/i + 1, /*window=*/40);
  const std::vector<int32_t> hold(3, kHoldAction);
  for (int step = 0; step < 10; ++step) vec.step(hold.data());
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(vec.sim(i).now_ms(), 10 * kStepMs);
    EXPECT_EQ(vec.previous_action(i), kHoldAction);
  }
  std::vector<double> stats(3 * kStatColumns);
  vec.stats(stats.data());
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(stats[i * kStatColumns + kStatDeliveredBytes], 10 * 1500, 1500);  // 10 in 10 ms
    EXPECT_GE(stats[i * kStatColumns + kStatMeanDelayMs], 20);
    EXPECT_DOUBLE_EQ(stats[i * kStatColumns + kStatWindow], 40);
  }
}

TEST(VecSimulator, ActionsMoveTheirOwnWindowAndShowInTheObservation) {
  VecSimulator vec(2, /*threads=*/2);
  vec.reset(0, kLink, 1, 10);
  vec.reset(1, kLink, 1, 10);
  const std::vector<int32_t> hold(2, kHoldAction);
  for (int step = 0; step < 5; ++step) vec.step(hold.data());  // 50 ms: the first ACKs are in
  const std::vector<int32_t> mixed = {0 /* /2 */, -1 /* leave it */};
  vec.step(mixed.data());
  EXPECT_DOUBLE_EQ(vec.sim(0).sender(0).window(), 5);
  EXPECT_DOUBLE_EQ(vec.sim(1).sender(0).window(), 10);
  std::vector<float> obs(2 * kObsDim);
  vec.observations(obs.data());
  EXPECT_EQ(obs[kObsActionOffset + 0], 1.0f);                     // slot 0: its /2
  EXPECT_EQ(obs[kObsDim + kObsActionOffset + kHoldAction], 1.0f);  // slot 1: still "hold"
  EXPECT_GT(obs[4], 0.0f);  // a min RTT was measured
}

TEST(VecSimulator, BadIndicesAndActionsAreErrors) {
  VecSimulator vec(1, 1);
  EXPECT_THROW(vec.sim(0), std::invalid_argument);  // never reset
  EXPECT_THROW(vec.reset(1, kLink, 1, 10), std::out_of_range);
  vec.reset(0, kLink, 1, 10);
  const int32_t too_big = kNumActions;
  EXPECT_THROW(vec.step(&too_big), std::invalid_argument);
}

}  // namespace
}  // namespace ccgym
