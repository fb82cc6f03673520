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
//   4..8 previous action, one-hot (kNumActions)
// Why logarithms: a link with k times the rate or the RTT then shows the same shapes moved
// by ln k, not stretched k-fold, so a policy carries beyond the rates and delays it trained
// on; and ln(window) - ln(delivery rate) = ln(RTT) + const, a linear read of the RTT that a
// linear scaling would hide in a quotient. (With linear scaling, configs/train/mixed.toml's
// policy reached 48-61% utilization at 300 Mbit/s with 15, 30 or 100 ms one-way delay, and
// let queues of 80-84% of the min RTT build at 150-300 Mbit/s with 5 ms; see issue 3.)
#pragma once
#include <array>
#include <cstdint>

#include "emulators/cpp/ring.hh"
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
// would read it wrongly. 1 was the linear scaling.
inline constexpr int kObservationVersion = 2;
// Indigo's EWMA weight for a new sample.
inline constexpr double kEwmaGain = 0.125;
inline constexpr int kObsDim = 4 + kNumActions;

// ln(1 + x / unit) / ln(1 + top / unit); negative x (none arise) counts as 0.
double log_scaled(double x, double unit, double top);

struct FeatureValues {
  double delay_ewma_ms = 0;
  double delivery_rate_mbps = 0;
  double send_rate_mbps = 0;
  double min_rtt_ms = 0;  // 0 until the first ACK
  double last_rtt_ms = 0;
};

class Features {
 public:
  // A datagram of `bytes` was sent at send_ms (sender clock).
  void on_sent(uint64_t seq, uint32_t bytes, double send_ms);
  // Its ACK arrived at ack_ms (sender clock).
  void on_ack(uint64_t seq, uint32_t bytes, double send_ms, double ack_ms);

  const FeatureValues& values() const { return values_; }
  // The scaled observation for a window and the previous action.
  std::array<float, kObsDim> observation(double window, int previous_action) const;

 private:
  // What the sender had done when a datagram left, to measure rates over its flight.
  struct SentRecord {
    uint64_t seq;
    double sent_bytes;       // bytes sent before it
    double delivered_bytes;  // bytes acknowledged when it left
    double delivered_ms;     // when the last of those was acknowledged
  };
  FeatureValues values_;
  bool have_sample_ = false;
  double sent_bytes_ = 0;
  double delivered_bytes_ = 0;
  double delivered_ms_ = 0;
  Ring<SentRecord> in_flight_;
};

}  // namespace ccgym
