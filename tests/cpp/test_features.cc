// Indigo's state: the values measured from sends and ACKs, and their log-scaled observation.
#include <gtest/gtest.h>

#include <cmath>

#include "policies/cpp/features.hh"

namespace ccgym {
namespace {

constexpr uint32_t kBytes = 1500;

TEST(Features, LogScaleMapsZeroAndTopToTheUnitInterval) {
  EXPECT_DOUBLE_EQ(log_scaled(0, kRateUnitMbps, kRateTopMbps), 0);
  EXPECT_DOUBLE_EQ(log_scaled(kRateTopMbps, kRateUnitMbps, kRateTopMbps), 1);
  EXPECT_DOUBLE_EQ(log_scaled(-3, kDelayUnitMs, kDelayTopMs), 0);
  EXPECT_LT(log_scaled(10, kDelayUnitMs, kDelayTopMs), log_scaled(11, kDelayUnitMs, kDelayTopMs));
}

TEST(Features, TwiceTheRateIsAShiftNotAStretch) {
  // Well above the unit, doubling adds about ln 2 / ln(1 + top / unit) whatever the rate.
  const double shift = std::log(2.0) / std::log1p(kRateTopMbps / kRateUnitMbps);
  for (double rate : {10.0, 50.0, 300.0}) {
    const double step = log_scaled(2 * rate, kRateUnitMbps, kRateTopMbps) -
                        log_scaled(rate, kRateUnitMbps, kRateTopMbps);
    EXPECT_NEAR(step, shift, 0.01 * shift) << rate;
  }
}

TEST(Features, QueueingDelayIsTheRttAboveTheMinimumAveraged) {
  Features features;
  features.on_sent(0, kBytes, 0);
  features.on_sent(1, kBytes, 10);
  features.on_ack(0, kBytes, 0, 40);   // RTT 40: the minimum, no queueing
  features.on_ack(1, kBytes, 10, 70);  // RTT 60: 20 ms of queueing, averaged in at 1/8
  EXPECT_DOUBLE_EQ(features.values().min_rtt_ms, 40);
  EXPECT_DOUBLE_EQ(features.values().last_rtt_ms, 60);
  EXPECT_DOUBLE_EQ(features.values().delay_ewma_ms, kEwmaGain * 20);
}

TEST(Features, ObservationScalesEachValueAndOneHotsThePreviousAction) {
  Features features;
  features.on_sent(0, kBytes, 0);
  features.on_ack(0, kBytes, 0, 40);
  const FeatureValues& v = features.values();
  const auto obs = features.observation(/*window=*/40, /*previous_action=*/3);
  EXPECT_FLOAT_EQ(obs[0], static_cast<float>(log_scaled(v.delay_ewma_ms, kDelayUnitMs,
                                                         kDelayTopMs)));
  EXPECT_FLOAT_EQ(obs[1], static_cast<float>(log_scaled(v.delivery_rate_mbps, kRateUnitMbps,
                                                         kRateTopMbps)));
  EXPECT_FLOAT_EQ(obs[2], static_cast<float>(log_scaled(v.send_rate_mbps, kRateUnitMbps,
                                                         kRateTopMbps)));
  EXPECT_FLOAT_EQ(obs[3], static_cast<float>(log_scaled(40, kWindowUnit, kMaxWindow)));
  EXPECT_GT(obs[1], 0);
  for (int a = 0; a < kNumActions; ++a) EXPECT_EQ(obs[4 + a], a == 3 ? 1.0f : 0.0f) << a;
}

}  // namespace
}  // namespace ccgym
