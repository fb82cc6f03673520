// The classic schemes behind the Controller interface, one file each, and the
// small pieces of bookkeeping they share (RTT estimation, loss and round
// detection from the ACK stream, windowed minima). scheme_factory.cc turns a
// spec string into a Params map and calls the scheme's builder.
//
// The sender they run under (sender.hh) does not retransmit and delivers ACKs in
// order: a gap in the acked sequence numbers is the only sign of a loss.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/cpp/packet.hh"
#include "common/cpp/windowed_min.hh"
#include "policies/cpp/actions.hh"
#include "policies/cpp/controller.hh"

namespace ccgym::schemes {

// Parameter values by name: every parameter of the scheme's SchemeInfo, the
// defaults overridden by the spec.
using Params = std::map<std::string, double>;

struct SchemeEntry {
  SchemeInfo info;
  std::unique_ptr<Controller> (*make)(const Params& params, uint64_t seed);
};

SchemeEntry fixed_scheme();
SchemeEntry aimd_scheme();
SchemeEntry delay_scheme();
SchemeEntry ewma_scheme();
SchemeEntry vegas_scheme();
SchemeEntry cubic_scheme();
SchemeEntry reno_scheme();
SchemeEntry bbr_scheme();
SchemeEntry copa_scheme();
SchemeEntry verus_scheme();
SchemeEntry sprout_scheme();
SchemeEntry ledbat_scheme();
SchemeEntry c2tcp_scheme();
SchemeEntry vivace_scheme();
SchemeEntry bbr3_scheme();

// Every scheme make_controller() knows, in catalog order (external last).
const std::vector<SchemeEntry>& all_schemes();

// A parameter the factory filled in and checked against its declared range; a
// missing one is a bug in the scheme's file.
double param(const Params& params, const std::string& name);

// The catalog's ranges: value >= lo; value > lo; lo <= value <= hi; lo < value < hi;
// lo < value <= hi; and a window, in [1, kMaxSchemeWindow].
ParamRange at_least(double lo);
ParamRange above(double lo);
ParamRange in_closed(double lo, double hi);
ParamRange in_open(double lo, double hi);
ParamRange in_left_open(double lo, double hi);
ParamRange window_range();

// Throws std::invalid_argument("scheme 'S': parameter 'P' must be RULE, got V")
// unless ok: for what a range cannot say, a rule relating two parameters
// (vegas: beta >= alpha), checked in the scheme's builder.
void check_param(bool ok, const std::string& scheme, const std::string& name,
                 const std::string& rule, double value);

inline constexpr double kPacketBytes = kDataPacketBytes;
// An upper bound on every scheme's window, as a receive window would be: without
// it a loss-based scheme on an infinite queue grows without limit. 20000 packets
// is 30 MB, above the BDP of any link in the gym (1 Gbit/s x 200 ms = 16667).
inline constexpr double kMaxSchemeWindow = 20000;

inline double clamp_window(double window) {
  if (!std::isfinite(window)) return window > 0 ? kMaxSchemeWindow : 1;
  return std::clamp(window, 1.0, kMaxSchemeWindow);
}

// A floor on RTTs used as divisors: a zero-delay test link would divide by 0.
inline constexpr double kMinDivisorRttMs = 0.01;

// RFC 6298's smoothed RTT and variation, plus the minimum ever seen. All in ms.
class RttEstimator {
 public:
  void add(double rtt_ms) {
    if (!(rtt_ms >= 0) || !std::isfinite(rtt_ms)) return;
    latest_ = rtt_ms;
    min_ = std::min(min_, rtt_ms);
    if (!have_) {
      srtt_ = rtt_ms;
      rttvar_ = rtt_ms / 2;
      have_ = true;
    } else {
      rttvar_ = 0.75 * rttvar_ + 0.25 * std::abs(srtt_ - rtt_ms);
      srtt_ = 0.875 * srtt_ + 0.125 * rtt_ms;
    }
  }
  bool have() const { return have_; }
  double srtt() const { return srtt_; }
  double latest() const { return latest_; }
  double min() const { return min_; }
  // RFC 6298's RTO, at least 200 ms as Linux's minimum. The cap is far above the
  // RFC's usual 1 s floor because ACKs keep coming through a bloated queue: the
  // timer runs from the last ACK, so a long RTO only delays recovery from a dead link.
  double rto() const {
    if (!have_) return kDefaultRtoMs;
    return std::clamp(srtt_ + 4 * rttvar_, kMinRtoMs, kMaxRtoMs);
  }

  static constexpr double kDefaultRtoMs = 1000;
  static constexpr double kMinRtoMs = 200;
  static constexpr double kMaxRtoMs = 60000;

 private:
  bool have_ = false;
  double srtt_ = 0;
  double rttvar_ = 0;
  double latest_ = 0;
  double min_ = std::numeric_limits<double>::infinity();
};

// The retransmission timeout as Linux computes it (tcp_rtt_estimator, __tcp_set_rto in
// tcp_input.c): srtt plus a variation that jumps to 4x the mean deviation at once when it
// grows, falls only a quarter of the way towards the round's largest per round trip, and is
// never below tcp_rto_min (200 ms); a falling RTT moves the deviation with an eighth of the
// gain. RttEstimator's RFC 6298 RTO, srtt + 4 x rttvar, lets rttvar decay while the RTT
// climbs smoothly, and a queue that grows by more than that in a round trip fires it
// spuriously: on the Verizon LTE recording (unlimited buffer) three cubic flows time out
// where kernel cubic's do not (docs/results.md, "Shared links"). A round ends with the
// ACK of the first packet sent after the last round's end, as Linux's rtt_seq.
class LinuxRto {
 public:
  // An RTT sample from the ACK of seq, next_seq being the next sequence number to be sent.
  void add(double rtt_ms, uint64_t seq, uint64_t next_seq) {
    if (!(rtt_ms >= 0) || !std::isfinite(rtt_ms)) return;
    latest_ms_ = rtt_ms;
    if (!have_) {
      srtt_ms_ = rtt_ms;
      deviation4_ms_ = 2 * rtt_ms;  // Linux's first RTO: 3 x the first RTT
      variation_ms_ = std::max(deviation4_ms_, kMinRtoMs);
      round_max_ms_ = variation_ms_;
      round_end_seq_ = next_seq;
      have_ = true;
      return;
    }
    const double error = rtt_ms - srtt_ms_;
    srtt_ms_ += error / 8;
    double step = std::abs(error) - deviation4_ms_ / 4;
    if (error < 0 && step > 0) step /= 8;
    deviation4_ms_ += step;
    if (deviation4_ms_ > round_max_ms_) {
      round_max_ms_ = deviation4_ms_;
      variation_ms_ = std::max(variation_ms_, round_max_ms_);
    }
    if (seq >= round_end_seq_) {
      if (round_max_ms_ < variation_ms_) variation_ms_ -= (variation_ms_ - round_max_ms_) / 4;
      round_end_seq_ = next_seq;
      round_max_ms_ = kMinRtoMs;
    }
  }
  double rto() const {
    return have_ ? std::min(srtt_ms_ + variation_ms_, kMaxRtoMs) : RttEstimator::kDefaultRtoMs;
  }
  // When a tail loss probe goes after the last ACK (tcp_schedule_loss_probe): 2 x srtt, at
  // least 10 ms, and no later than the RTO counted from the oldest packet's send (about the
  // latest RTT before that ACK).
  double probe_timeout() const {
    if (!have_) return rto();
    double timeout = std::max(2 * srtt_ms_, kMinProbeMs);
    const double rto_left = rto() - latest_ms_;
    if (rto_left > 0) timeout = std::min(timeout, rto_left);
    return timeout;
  }

  static constexpr double kMinRtoMs = 200;      // TCP_RTO_MIN
  static constexpr double kMaxRtoMs = 120000;   // TCP_RTO_MAX
  static constexpr double kMinProbeMs = 10;      // TCP_TIMEOUT_MIN_US

 private:
  bool have_ = false;
  double srtt_ms_ = 0;
  double latest_ms_ = 0;
  double deviation4_ms_ = 0;  // 4 x the mean deviation (Linux's mdev_us)
  double variation_ms_ = 0;   // what the RTO adds to srtt (rttvar_us)
  double round_max_ms_ = 0;   // the largest deviation4 this round, at least kMinRtoMs (mdev_max_us)
  uint64_t round_end_seq_ = 0;
};

// Loss events from gaps in the acked sequence, at most one per round trip: after
// an event, losses of packets sent before it (seq <= the highest sent then) are
// part of the same event, as in NewReno's recovery.
class LossDetector {
 public:
  void on_sent(uint64_t seq) { note_sent(seq); }
  // Returns true when this ACK reveals a new loss event.
  bool on_ack(uint64_t seq) {
    note_sent(seq);
    bool event = false;
    if (seq > next_expected_) {
      const uint64_t last_lost = seq - 1;
      lost_ += seq - next_expected_;
      if (!in_recovery_ || last_lost > recovery_seq_) {
        event = true;
        start_recovery();
      }
    }
    next_expected_ = std::max(next_expected_, seq + 1);
    return event;
  }
  // A timeout ends the current flight: its losses are one event with the timeout.
  void on_timeout() { start_recovery(); }
  uint64_t lost() const { return lost_; }
  uint64_t highest_sent() const { return highest_sent_; }

 private:
  void note_sent(uint64_t seq) {
    if (!have_sent_ || seq > highest_sent_) highest_sent_ = seq;
    have_sent_ = true;
  }
  void start_recovery() {
    in_recovery_ = true;
    recovery_seq_ = highest_sent_;
  }
  bool have_sent_ = false;
  bool in_recovery_ = false;
  uint64_t highest_sent_ = 0;
  uint64_t next_expected_ = 0;
  uint64_t recovery_seq_ = 0;
  uint64_t lost_ = 0;
};

// Round trips counted on the ACK stream: a round ends when a packet sent after
// the round began is acknowledged (or a later one, if it was lost).
class RoundCounter {
 public:
  void on_sent(uint64_t seq) { next_seq_ = std::max(next_seq_, seq + 1); }
  // True if this ACK ends a round (and starts the next).
  bool on_ack(uint64_t seq) {
    next_seq_ = std::max(next_seq_, seq + 1);
    if (seq < round_end_) return false;
    round_end_ = next_seq_;
    ++rounds_;
    return true;
  }
  uint64_t rounds() const { return rounds_; }

 private:
  uint64_t next_seq_ = 0;
  uint64_t round_end_ = 0;
  uint64_t rounds_ = 0;
};

using ccgym::WindowedMin;  // common/cpp/windowed_min.hh

}  // namespace ccgym::schemes
