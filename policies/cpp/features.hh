// Indigo's state, computed on every ACK by the one implementation that the
// simulator, the Python environment and the C++ UDP sender all use.
//
// Observation (kObsDim floats), each quantity x on a log scale,
//   log_scaled(x, unit, top) = ln(1 + x / unit) / ln(1 + top / unit),
// 0 at 0, 1 at `top`, and near ln(x) + const well above `unit`:
//   0 EWMA of queueing delay (RTT - min RTT)   unit kDelayUnitMs,  top kDelayTopMs
//   1 EWMA of delivery rate                    unit kRateUnitMbps, top kRateTopMbps
//   2 EWMA of sending rate                     unit kRateUnitMbps, top kRateTopMbps
//   3 current window (packets)                 unit kWindowUnit,   top kMaxWindow
//   4 min RTT                                  unit kDelayUnitMs,  top kDelayTopMs
//   5 the latest RTT's queueing delay          unit kDelayUnitMs,  top kDelayTopMs
//   6 time since the last ACK                  unit kDelayUnitMs,  top kDelayTopMs
//   7 window over the pipe it measures (EWMA delivery rate x min RTT), as
//     log2(ratio) / kPipeRatioLog2Top clipped to [-1, 1]: 0 at a full pipe, no queue
//   8 EWMA of the fraction of datagrams found lost, per ACK (0..1)
//   9 the ACKs' rate within their bursts: an ACK's bytes over the gap since the one before,
//     averaged in the log domain (a geometric EWMA)   unit kRateUnitMbps, top kRateTopMbps
//  10.. previous action, one-hot (kNumActions)
// Why 4-8 (version 3): Indigo's state cannot tell a window below the pipe from one at it
// (both show no queue), nor an ACK path that stalls from a queue that grows; the min RTT,
// the undamped latest queueing delay, the ACK silence and the window-to-pipe ratio give
// the policy those readings directly instead of through its memory.
// Why 9 (version 4): a window below the pipe with no queue also shows window = pipe (feature
// 7 reads 0), as a full pipe does, so a 10-packet window on a 300 Mbit/s, 5 ms link looked
// like a full 12 Mbit/s link, and policies held it (4% utilization). A window sent at once
// leaves the bottleneck at the link's rate: its ACKs come back as a train at that rate, with
// a gap to the next window, so the train's rate over the delivery rate (feature 1) tells
// spare capacity apart (packet pairs, as TCP Westwood and PCP probe). The log average keeps
// one long gap between trains from hiding the trains' rate.
// Version 6 (kCompetitionObservationVersion) reads, after feature 9, what tells a competitor's
// standing queue from one's own (issue 60), before the one-hot (from kObsActionOffsetV6):
//  10 Copa's drain test: the least RTT over the last kDrainRtts smoothed RTTs above the min
//     RTT, over the largest RTT in that span above the min RTT (at least kDelayUnitMs),
//     in [0, 1]: 0 when the queue emptied within them (a queue a delay-based flow builds and
//     drains itself), near 1 when it stood throughout (a buffer filler beside it)
//  11 the send rate over the delivery rate, each over one datagram's flight as features 1
//     and 2 take them, its log2 averaged per ACK with gain kEwmaGain, over kRateRatioLog2Top
//     clipped to [-1, 1]: 0 when what is sent gets through, above 0 when the flow sends faster
//     than it is served (a queue grows, or a competitor takes the rest)
//  12 the same averaged with kSlowEwmaGain: 11 - 12 is how the delivery rate answered the
//     flow's own recent rate changes, the reading of Nimbus's elasticity test
// Versions 4 and 6 share features 0-9, computed once; a policy says which it was trained on.
// (5 named the drain test alone, tried on 2026-11-27 and not kept, docs/experiments.md: a
// policy file of that version is refused, not read as this one.)
// Why logarithms: a link with k times the rate or the RTT then shows the same shapes moved
// by ln k, not stretched k-fold, so a policy carries beyond the rates and delays it trained
// on; and ln(window) - ln(delivery rate) = ln(RTT) + const, a linear read of the RTT that a
// linear scaling would hide in a quotient. (With linear scaling, configs/train/mixed.toml's
// policy reached 48-61% utilization at 300 Mbit/s with 15, 30 or 100 ms one-way delay, and
// let queues of 80-84% of the min RTT build at 150-300 Mbit/s with 5 ms; see issue 3.)
#pragma once
#include <array>
#include <cstdint>

#include "common/cpp/ring.hh"
#include "policies/cpp/actions.hh"

namespace ccgym {

// Queueing delays below a millisecond hardly matter; 1 s is as long as a queue gets.
inline constexpr double kDelayUnitMs = 1;
inline constexpr double kDelayTopMs = 1000;
// Rates from 100 kbit/s (a packet every 120 ms) to 1 Gbit/s.
inline constexpr double kRateUnitMbps = 0.1;
inline constexpr double kRateTopMbps = 1000;
// Windows count whole packets, up to kMaxWindow.
inline constexpr double kWindowUnit = 1;
// Bumped whenever the observation's meaning changes: a policy trained on another version
// would read it wrongly. 1 was the linear scaling, 2 Indigo's state alone, 3 without the
// ACK trains' rate.
inline constexpr int kObservationVersion = 4;
// Indigo's EWMA weight for a new sample.
inline constexpr double kEwmaGain = 0.125;
// A window 16 times the pipe (or a sixteenth of it) is as far as feature 7 tells apart.
inline constexpr double kPipeRatioLog2Top = 4;
// The scaled quantities, then the previous action's one-hot from kObsActionOffset.
inline constexpr int kObsScaled = 10;
inline constexpr int kObsActionOffset = kObsScaled;
inline constexpr int kObsDim = kObsScaled + kNumActions;
// Version 6: three readings more (features 10-12), then the one-hot.
inline constexpr int kCompetitionObservationVersion = 6;
inline constexpr int kObsScaledV6 = kObsScaled + 3;
inline constexpr int kObsActionOffsetV6 = kObsScaledV6;
inline constexpr int kObsDimV6 = kObsScaledV6 + kNumActions;
inline constexpr int kMaxObsDim = kObsDimV6;
// The versions this build computes, oldest first.
inline constexpr std::array<int, 2> kObservationVersions = {kObservationVersion,
                                                            kCompetitionObservationVersion};
// Copa's drain test looks this many smoothed RTTs back (Copa: about 4).
inline constexpr double kDrainRtts = 4;
// Feature 11's slow twin averages over about eight times as many ACKs.
inline constexpr double kSlowEwmaGain = kEwmaGain / 8;
// Sending 4 times (or a quarter of) what is delivered is as far as features 11-12 tell apart.
inline constexpr double kRateRatioLog2Top = 2;
// Feature 7, the window over the pipe, in [-1, 1].
inline constexpr int kObsPipeRatioIndex = 7;
// The observation entries that may be negative, each in [-1, 1]; the others are >= 0. The
// observation space (envs/link_env.py) reads its bounds from here: a feature added to it
// is bounded there too.
inline constexpr std::array<int, 1> kObsSignedIndices = {kObsPipeRatioIndex};
inline constexpr std::array<int, 3> kObsSignedIndicesV6 = {kObsPipeRatioIndex, 11, 12};

// The observation's length in a version; -1 for one this build does not compute.
int observation_dim(int version);
// The current window (feature 3), which a policy that outputs a window change reads back.
inline constexpr int kObsWindowIndex = 3;

// ln(1 + x / unit) / ln(1 + top / unit); negative x (none arise) counts as 0.
double log_scaled(double x, double unit, double top);

struct FeatureValues {
  double delay_ewma_ms = 0;
  double delivery_rate_mbps = 0;
  double send_rate_mbps = 0;
  double min_rtt_ms = 0;  // 0 until the first ACK
  double last_rtt_ms = 0;
  double last_ack_ms = 0;  // sender clock of the newest ACK; 0 until the first
  double loss_ewma = 0;    // fraction of datagrams found lost, averaged per ACK
  double ack_rate_mbps = 0;  // the ACK trains' rate (feature 9); 0 until the second ACK
  double standing_queue = 0;  // Copa's drain test (feature 10 of version 6), 0..1
  double rate_ratio_log2 = 0;       // log2(send rate / delivery rate), averaged (feature 11)
  double rate_ratio_log2_slow = 0;  // the same, averaged slowly (feature 12)
};

class Features {
 public:
  // A datagram of `bytes` was sent at send_ms (sender clock).
  void on_sent(uint64_t seq, uint32_t bytes, double send_ms);
  // Its ACK arrived at ack_ms (sender clock).
  void on_ack(uint64_t seq, uint32_t bytes, double send_ms, double ack_ms);

  const FeatureValues& values() const { return values_; }
  // The pipe the ACKs show, EWMA delivery rate x min RTT, in datagrams; -1 before the first.
  double pipe_packets() const;
  // The flight the ACKs show, in datagrams: EWMA delivery rate x smoothed RTT (min RTT + EWMA
  // queueing delay); -1 before the first ACK. Above the pipe by what the queue and the ACK
  // path hold: where the uplink stalls, datagrams delivered but not yet acknowledged.
  double flight_packets() const;
  // The scaled observation at now_ms (sender clock) for a window and the previous action.
  std::array<float, kObsDim> observation(double window, int previous_action, double now_ms) const;
  // The observation of a version (kObservationVersions) into out, observation_dim(version)
  // floats; std::invalid_argument for another version. Asking for version 6 keeps its
  // readings from then on (keep_competition_readings).
  void observation_into(int version, double window, int previous_action, double now_ms,
                        float* out) const;
  // Version 6's readings cost work on every ACK, so a flow keeps them only once asked: a
  // policy asks from its flow's start, before the first ACK, and classic flows and
  // version-4 policies, which never read them, pay nothing.
  void keep_competition_readings() const { keep_competition_ = true; }

 private:
  // Datagrams the EWMA delivery rate delivers in `ms`; -1 before the first ACK.
  double delivered_packets_over(double ms) const;
  // Version 6's readings from one ACK: its RTT, time and send-over-delivery rate ratio.
  void update_competition_readings(double rtt, double ack_ms, double rate_ratio);
  // Copa's drain test: the least and largest RTT over the last kDrainRtts smoothed RTTs.
  void update_standing_queue(double rtt, double ack_ms);
  // An RTT sample; the rings below keep the candidates for the span's least and largest.
  struct RttSample {
    double ack_ms;
    double rtt_ms;
  };
  Ring<RttSample> least_rtts_;
  Ring<RttSample> largest_rtts_;
  // Whether on_ack updates version 6's readings: set by what reads them, hence mutable.
  mutable bool keep_competition_ = false;
  // What the sender had done when a datagram left, to measure rates over its flight.
  struct SentRecord {
    uint64_t seq;
    double sent_bytes;       // bytes sent before it
    double delivered_bytes;  // bytes acknowledged when it left
    double delivered_ms;     // when the last of those was acknowledged
  };
  FeatureValues values_;
  bool have_sample_ = false;
  bool have_ack_gap_ = false;
  double ack_rate_log_ = 0;  // geometric EWMA of the ACKs' rate: of ln(Mbit/s)
  double sent_bytes_ = 0;
  double delivered_bytes_ = 0;
  double delivered_ms_ = 0;
  uint32_t packet_bytes_ = 1500;  // the latest datagram's size: windows count datagrams
  Ring<SentRecord> in_flight_;
};

}  // namespace ccgym
