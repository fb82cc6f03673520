// Indigo's state: the values measured from sends and ACKs, and their log-scaled observation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

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
  features.on_sent(1, kBytes, 10);
  features.on_ack(0, kBytes, 0, 40);
  features.on_ack(1, kBytes, 10, 70);  // RTT 60: 20 ms above the minimum
  const FeatureValues& v = features.values();
  const auto obs = features.observation(/*window=*/40, /*previous_action=*/3, /*now_ms=*/95);
  const auto delay = [](double ms) { return static_cast<float>(log_scaled(ms, kDelayUnitMs, kDelayTopMs)); };
  EXPECT_FLOAT_EQ(obs[0], delay(v.delay_ewma_ms));
  EXPECT_FLOAT_EQ(obs[1], static_cast<float>(log_scaled(v.delivery_rate_mbps, kRateUnitMbps,
                                                         kRateTopMbps)));
  EXPECT_FLOAT_EQ(obs[2], static_cast<float>(log_scaled(v.send_rate_mbps, kRateUnitMbps,
                                                         kRateTopMbps)));
  EXPECT_FLOAT_EQ(obs[3], static_cast<float>(log_scaled(40, kWindowUnit, kMaxWindow)));
  EXPECT_FLOAT_EQ(obs[4], delay(40));        // min RTT
  EXPECT_FLOAT_EQ(obs[5], delay(20));        // the latest RTT's queueing, undamped
  EXPECT_FLOAT_EQ(obs[6], delay(95 - 70));   // since the last ACK
  const double pipe = v.delivery_rate_mbps * 1000 / 8 * 40 / kBytes;
  EXPECT_FLOAT_EQ(obs[kObsPipeRatioIndex],
                  static_cast<float>(std::clamp(std::log2(40 / pipe) / kPipeRatioLog2Top, -1.0, 1.0)));
  EXPECT_FLOAT_EQ(obs[8], 0);                // nothing lost
  EXPECT_GT(obs[1], 0);
  for (int a = 0; a < kNumActions; ++a) EXPECT_EQ(obs[kObsActionOffset + a], a == 3 ? 1.0f : 0.0f) << a;
}

TEST(Features, BeforeTheFirstAckOnlyTheWindowAndActionShow) {
  Features features;
  features.on_sent(0, kBytes, 0);
  const auto obs = features.observation(/*window=*/10, kHoldAction, /*now_ms=*/50);
  for (int i = 0; i < kObsScaled; ++i) {
    if (i != 3) {
      EXPECT_EQ(obs[i], 0.0f) << i;
    }
  }
  EXPECT_EQ(obs[kObsActionOffset + kHoldAction], 1.0f);
}

TEST(Features, WindowAtThePipeReadsZeroAndDatagramsSkippedCountAsLost) {
  Features features;
  // One datagram every ms over a 40 ms RTT: a pipe of 40 datagrams, measured at 40.
  for (uint64_t ms = 0; ms <= 140; ++ms) {
    if (ms >= 40) features.on_ack(ms - 40, kBytes, static_cast<double>(ms - 40), static_cast<double>(ms));
    if (ms < 140) features.on_sent(ms, kBytes, static_cast<double>(ms));
  }
  const auto full = features.observation(/*window=*/40, kHoldAction, /*now_ms=*/140);
  EXPECT_NEAR(full[kObsPipeRatioIndex], 0, 0.02);
  EXPECT_GT(features.observation(80, kHoldAction, 140)[kObsPipeRatioIndex], 0.2f);
  EXPECT_LT(features.observation(20, kHoldAction, 140)[kObsPipeRatioIndex], -0.2f);
  EXPECT_EQ(full[8], 0.0f);
  // Datagrams 101-103 never come back: the ACK of 104 finds three lost before it.
  features.on_ack(104, kBytes, 104, 144);
  EXPECT_NEAR(features.values().loss_ewma, kEwmaGain * 3.0 / 4.0, 1e-12);
  EXPECT_GT(features.observation(40, kHoldAction, 144)[8], 0.0f);
}

// An ACK-clocked flow with a 10 ms RTT and no queue: datagram n leaves at send_ms(n) and is
// acknowledged 10 ms later. Events run in time order, ACKs first.
template <typename SendMs>
Features acked_after_10ms(SendMs send_ms) {
  struct Event {
    double at_ms;
    bool is_send;
    uint64_t seq;
  };
  std::vector<Event> events;
  for (uint64_t n = 0; n < 200; ++n) {
    events.push_back({send_ms(n), true, n});
    events.push_back({send_ms(n) + 10, false, n});
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& x, const Event& y) {
    return x.at_ms < y.at_ms || (x.at_ms == y.at_ms && !x.is_send && y.is_send);
  });
  Features features;
  for (const Event& e : events) {
    if (e.is_send) {
      features.on_sent(e.seq, kBytes, e.at_ms);
    } else {
      features.on_ack(e.seq, kBytes, send_ms(e.seq), e.at_ms);
    }
  }
  return features;
}

TEST(Features, AckTrainsTellSpareCapacityFromAFullPipe) {
  // 10 datagrams per 10 ms RTT: 12 Mbit/s delivered, window at the pipe, no queue, both times.
  // On a 300 Mbit/s bottleneck (0.04 ms a datagram) the ACKs come in trains at 300 Mbit/s;
  // on a full 12 Mbit/s one (1 ms a datagram) they are evenly spread at 12 Mbit/s.
  // The fast bottleneck spaced the first window by its serialization time, and the ACK clock
  // keeps that spacing: a train every 10 ms. The full one spaces them a ms apart.
  const Features fast = acked_after_10ms([](uint64_t n) {
    return 10 * static_cast<double>(n / 10) + 0.04 * static_cast<double>(n % 10);
  });
  const Features full = acked_after_10ms([](uint64_t n) { return static_cast<double>(n); });
  EXPECT_NEAR(fast.values().delivery_rate_mbps, full.values().delivery_rate_mbps,
              0.1 * full.values().delivery_rate_mbps);
  EXPECT_NEAR(full.values().ack_rate_mbps, 12, 0.5);
  EXPECT_GT(fast.values().ack_rate_mbps, 10 * full.values().ack_rate_mbps);
  const auto fast_obs = fast.observation(10, kHoldAction, 205);
  const auto full_obs = full.observation(10, kHoldAction, 205);
  EXPECT_NEAR(fast_obs[kObsPipeRatioIndex], full_obs[kObsPipeRatioIndex], 0.1);
  EXPECT_FLOAT_EQ(full_obs[9], static_cast<float>(log_scaled(full.values().ack_rate_mbps,
                                                             kRateUnitMbps, kRateTopMbps)));
  EXPECT_GT(fast_obs[9], full_obs[9] + 0.2f);
}

TEST(Features, AcksInTheSameInstantCountAtTheTopRate) {
  Features features;
  for (uint64_t seq = 0; seq < 3; ++seq) features.on_sent(seq, kBytes, 0);
  for (uint64_t seq = 0; seq < 3; ++seq) features.on_ack(seq, kBytes, 0, 20);
  EXPECT_DOUBLE_EQ(features.values().ack_rate_mbps, kRateTopMbps);
  EXPECT_FLOAT_EQ(features.observation(10, kHoldAction, 20)[9], 1.0f);
}

// A datagram every ms over a 20 ms min RTT (a 12 Mbit/s pipe of 20 datagrams), each ACK held
// back `ack_stall_ms` more after the first hundred (a stalling uplink, or a queue).
Features flow_with_acks_held_back(double ack_stall_ms) {
  Features features;
  for (uint64_t n = 0; n < 400; ++n) {
    const double send_ms = static_cast<double>(n);
    features.on_sent(n, kBytes, send_ms);
    features.on_ack(n, kBytes, send_ms, send_ms + 20 + (n >= 100 ? ack_stall_ms : 0));
  }
  return features;
}

TEST(Features, FlightIsThePipeWithoutQueueAndHoldsWhatTheAckPathHoldsBack) {
  const Features clean = flow_with_acks_held_back(0);
  EXPECT_NEAR(clean.pipe_packets(), 20, 1);
  EXPECT_DOUBLE_EQ(clean.flight_packets(), clean.pipe_packets());
  // ACKs 80 ms late: 80 more datagrams out than the pipe, whose min RTT stays 20 ms.
  const Features held = flow_with_acks_held_back(80);
  EXPECT_NEAR(held.pipe_packets(), 20, 1);
  EXPECT_NEAR(held.flight_packets(), 100, 5);
  EXPECT_DOUBLE_EQ(Features().flight_packets(), -1);
}

// Datagram n leaves at n ms and is acknowledged rtt_ms(n) later (one in flight at a time as
// Features sees it: each ACK before the next send).
template <typename RttMs>
Features with_rtts(uint64_t count, RttMs rtt_ms) {
  Features features;
  features.keep_competition_readings();
  for (uint64_t n = 0; n < count; ++n) {
    const double send_ms = static_cast<double>(n);
    features.on_sent(n, kBytes, send_ms);
    features.on_ack(n, kBytes, send_ms, send_ms + rtt_ms(n));
  }
  return features;
}

TEST(Features, CopasDrainTellsAQueueThatStandsFromOneThatEmpties) {
  // A 40 ms path; then a queue of 20-22 ms that never empties (a buffer filler beside).
  const Features standing = with_rtts(400, [](uint64_t n) {
    return n == 0 ? 40.0 : 60.0 + static_cast<double>(n % 3);
  });
  EXPECT_GT(standing.values().standing_queue, 0.85);
  // A queue the flow builds and drains every 100 ms (0-20 ms): within 4 RTTs it emptied.
  const Features draining = with_rtts(400, [](uint64_t n) {
    const double phase = static_cast<double>(n % 100);
    return 40.0 + (phase < 50 ? phase : 100 - phase) * 0.4;
  });
  EXPECT_LT(draining.values().standing_queue, 0.05);
  // No queue at all: nothing stands.
  EXPECT_EQ(with_rtts(100, [](uint64_t) { return 40.0; }).values().standing_queue, 0.0);
  std::array<float, kObsDimV6> v6{};
  standing.observation_into(kCompetitionObservationVersion, 20, kHoldAction, 400, v6.data());
  EXPECT_FLOAT_EQ(v6[10], static_cast<float>(standing.values().standing_queue));
}

// A flow that sends a datagram every send_gap_ms through a 10 ms path served at one datagram
// per ms: ACK n comes back 10 ms after n leaves, or 1 ms after ACK n - 1 when it queued;
// the features as they stand at its last send.
Features served_at_one_per_ms(double send_gap_ms) {
  struct Event {
    double at_ms;
    bool is_send;
    uint64_t seq;
  };
  std::vector<Event> events;
  double last_ack = 0;
  for (uint64_t n = 0; n < 300; ++n) {
    const double sent = static_cast<double>(n) * send_gap_ms;
    last_ack = std::max(sent + 10, last_ack + 1);
    events.push_back({sent, true, n});
    events.push_back({last_ack, false, n});
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& x, const Event& y) {
    return x.at_ms < y.at_ms || (x.at_ms == y.at_ms && !x.is_send && y.is_send);
  });
  Features features;
  features.keep_competition_readings();
  // Up to the last send: the ACKs after it see the flow stop, not its rate.
  const double last_send_ms = 299 * send_gap_ms;
  for (const Event& e : events) {
    if (e.at_ms > last_send_ms) break;
    if (e.is_send) {
      features.on_sent(e.seq, kBytes, e.at_ms);
    } else {
      features.on_ack(e.seq, kBytes, static_cast<double>(e.seq) * send_gap_ms, e.at_ms);
    }
  }
  return features;
}

TEST(Features, RateRatioReadsWhetherWhatIsSentGetsThrough) {
  // At the service rate what is sent is delivered: log2 of the ratio near 0.
  const Features matched = served_at_one_per_ms(1.0);
  EXPECT_NEAR(matched.values().rate_ratio_log2, 0, 0.1);
  // Twice as fast as it is served: the ratio near 2, log2 near 1; the slow twin still holds
  // the start, where ACKs came back one per ms for datagrams sent two per ms before them.
  const Features twice = served_at_one_per_ms(0.5);
  EXPECT_NEAR(twice.values().rate_ratio_log2, 1, 0.25);
  EXPECT_GT(twice.values().rate_ratio_log2_slow, 0.5);
  EXPECT_NEAR(matched.values().rate_ratio_log2_slow, 0, 0.1);
  std::array<float, kObsDimV6> obs{};
  twice.observation_into(kCompetitionObservationVersion, 20, kHoldAction, 300, obs.data());
  EXPECT_FLOAT_EQ(obs[11], static_cast<float>(twice.values().rate_ratio_log2 / kRateRatioLog2Top));
  EXPECT_GT(obs[12], 0);
}

TEST(Features, OnlyAFlowAskedForVersionSixPaysForItsReadings) {
  // A flow nobody asks for version 6 (a classic one, a version-4 policy's) keeps none.
  Features unasked;
  Features asked;
  std::array<float, kObsDimV6> obs{};
  asked.observation_into(kCompetitionObservationVersion, 10, kHoldAction, 0, obs.data());
  for (uint64_t n = 0; n < 300; ++n) {
    const double send_ms = static_cast<double>(n);
    for (Features* f : {&unasked, &asked}) {
      f->on_sent(n, kBytes, send_ms);
      f->on_ack(n, kBytes, send_ms, send_ms + (n == 0 ? 40.0 : 60.0));
    }
  }
  EXPECT_EQ(unasked.values().standing_queue, 0.0);
  EXPECT_EQ(unasked.values().rate_ratio_log2, 0.0);
  EXPECT_GT(asked.values().standing_queue, 0.9);
  // Version 4's readings are the same either way.
  EXPECT_EQ(unasked.observation(10, kHoldAction, 400), asked.observation(10, kHoldAction, 400));
}

TEST(Features, VersionSixKeepsVersionFoursReadingsAndAddsItsOwn) {
  EXPECT_EQ(observation_dim(kObservationVersion), kObsDim);
  EXPECT_EQ(observation_dim(kCompetitionObservationVersion), kObsDim + 3);
  EXPECT_EQ(observation_dim(3), -1);
  const Features features = served_at_one_per_ms(0.5);
  const auto v4 = features.observation(30, 2, 300);
  std::array<float, kObsDimV6> v6{};
  features.observation_into(kCompetitionObservationVersion, 30, 2, 300, v6.data());
  for (int i = 0; i < kObsScaled; ++i) EXPECT_EQ(v4[i], v6[i]) << i;
  for (int a = 0; a < kNumActions; ++a) {
    EXPECT_EQ(v4[kObsActionOffset + a], v6[kObsActionOffsetV6 + a]) << a;
  }
  std::array<float, kObsDim> again{};
  features.observation_into(kObservationVersion, 30, 2, 300, again.data());
  EXPECT_EQ(again, v4);
  EXPECT_THROW(features.observation_into(5, 30, 2, 300, v6.data()), std::invalid_argument);
}

}  // namespace
}  // namespace ccgym
