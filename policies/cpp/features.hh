// Indigo's state, computed on every ACK by the one implementation that the
// simulator, the Python environment and the C++ UDP sender all use.
//
// Observation (kObsDim floats), each scaled by a named constant so that typical
// values fall near [0, 1] and the LSTM's inputs are of one order:
//   0 EWMA of queueing delay (RTT - min RTT)   / kDelayScaleMs
//   1 EWMA of delivery rate                    / kRateScaleMbps
//   2 EWMA of sending rate                     / kRateScaleMbps
//   3 current window (packets)                 / kWindowScale
//   4..8 previous action, one-hot (kNumActions)
#pragma once
#include <array>
#include <cstdint>

#include "emulators/cpp/ring.hh"
#include "policies/cpp/actions.hh"

namespace ccgym {

// Queueing delays of interest span 0..~1 s; 100 ms is a large but common queue.
inline constexpr double kDelayScaleMs = 100;
// Rates from below 1 to ~100 Mbit/s; scaled by the middle of the training grid.
inline constexpr double kRateScaleMbps = 50;
// Windows from 1 to thousands of packets; 100 is near the BDP of mid-grid links.
inline constexpr double kWindowScale = 100;
// Indigo's EWMA weight for a new sample.
inline constexpr double kEwmaGain = 0.125;
inline constexpr int kObsDim = 4 + kNumActions;

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
