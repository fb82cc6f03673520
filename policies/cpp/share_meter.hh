// A flow's share of its bottleneck, as a learned flow's competitive mode reads it: its
// delivery rate over the link's rate. The link's rate comes from packet pairs (Keshav,
// SIGCOMM 1991): two datagrams that left back to back reach the receiver one serialization
// apart when nothing came between them at the bottleneck, so the receive gap of such pairs
// is the link's time for one datagram. Cross traffic only widens gaps, so beside a buffer
// filler the estimate stays the link's, where the flow's own delivery rate falls with its
// share. A real receiver also narrows some (two datagrams read in one wake-up): the gap
// taken is each interval's median, and the link's rate the highest over a while.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

#include "common/cpp/packet.hh"
#include "common/cpp/windowed_min.hh"

namespace ccgym {

class ShareMeter {
 public:
  // How long an interval's median gap counts towards the link's rate (ms, ACK time): a
  // few of bbr's PROBE_RTT intervals would outlive a link's change.
  static constexpr double kPairWindowMs = 10000;
  // The delivery rate and the pairs' median gap are taken over spans of this long (ms, ACK
  // time). A flow starved to a few datagrams per RTT makes 9-20 pairs a second (beside bbr,
  // 24 Mbit/s, 1 BDP).
  static constexpr double kShareIntervalMs = 1000;
  // An interval's median needs this many pairs; more than kMaxPairs are not kept.
  static constexpr std::size_t kMinPairs = 5;
  static constexpr std::size_t kMaxPairs = 256;
  // A pair left back to back when its datagrams left less than this fraction of their
  // receive gap apart: the bottleneck spread them, not the sender (whose sends of one burst
  // are microseconds apart on a host, the same instant in the simulator).
  static constexpr double kBackToBack = 0.25;

  // A datagram acknowledged (the clocks as Controller::on_ack's).
  void on_ack(uint64_t seq, double send_ms, double recv_ms, double ack_ms) {
    if (have_previous_ && seq == previous_seq_ + 1) {
      const double recv_gap = recv_ms - previous_recv_ms_;
      if (recv_gap > 0 && send_ms - previous_send_ms_ < kBackToBack * recv_gap &&
          pairs_ < kMaxPairs) {
        gaps_[pairs_++] = recv_gap;
      }
    }
    least_gaps_.expire(ack_ms, kPairWindowMs);
    have_previous_ = true;
    previous_seq_ = seq;
    previous_send_ms_ = send_ms;
    previous_recv_ms_ = recv_ms;

    if (std::isnan(interval_start_ms_)) interval_start_ms_ = ack_ms;
    ++interval_packets_;
    const double elapsed_ms = ack_ms - interval_start_ms_;
    if (elapsed_ms >= kShareIntervalMs) {
      if (pairs_ >= kMinPairs) {
        const auto middle = gaps_.begin() + static_cast<std::ptrdiff_t>(pairs_ / 2);
        std::nth_element(gaps_.begin(), middle, gaps_.begin() + static_cast<std::ptrdiff_t>(pairs_));
        least_gaps_.add(ack_ms, *middle, kPairWindowMs);
      }
      pairs_ = 0;
      const double capacity = capacity_mbps();
      share_ = std::isnan(capacity)
                   ? std::numeric_limits<double>::quiet_NaN()
                   : interval_packets_ * kBitsPerPacket / 1000.0 / elapsed_ms / capacity;
      interval_start_ms_ = ack_ms;
      interval_packets_ = 0;
    }
  }
  // The link's rate (Mbit/s) from the least of the intervals' median pair gaps; NaN before
  // an interval with kMinPairs pairs.
  double capacity_mbps() const {
    return least_gaps_.empty() ? std::numeric_limits<double>::quiet_NaN()
                               : kBitsPerPacket / 1000.0 / least_gaps_.min();
  }
  // The flow's delivery rate over the last whole interval, over capacity_mbps; NaN before.
  double share() const { return share_; }

 private:
  static constexpr double kBitsPerPacket = kDataPacketBytes * 8.0;
  WindowedMin least_gaps_{16};  // one sample a second over kPairWindowMs
  std::array<double, kMaxPairs> gaps_{};
  std::size_t pairs_ = 0;
  bool have_previous_ = false;
  uint64_t previous_seq_ = 0;
  double previous_send_ms_ = 0;
  double previous_recv_ms_ = 0;
  double interval_start_ms_ = std::numeric_limits<double>::quiet_NaN();
  double interval_packets_ = 0;
  double share_ = std::numeric_limits<double>::quiet_NaN();
};

}  // namespace ccgym
