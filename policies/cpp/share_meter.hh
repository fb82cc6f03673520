// A flow's share of its bottleneck, as a learned flow's competitive mode reads it: its
// delivery rate over the link's rate. The link's rate comes from packet pairs (Keshav,
// SIGCOMM 1991): two datagrams that left back to back reach the receiver one serialization
// apart when nothing came between them at the bottleneck, so the least receive gap of such
// pairs over a while is the link's time for one datagram. Cross traffic only widens gaps,
// so beside a buffer filler the estimate stays the link's, where the flow's own delivery
// rate falls with its share.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

#include "common/cpp/packet.hh"
#include "common/cpp/windowed_min.hh"

namespace ccgym {

class ShareMeter {
 public:
  // How long a pair's gap counts towards the link's rate (ms, ACK time): a few of bbr's
  // PROBE_RTT intervals would outlive a link's change, a second holds too few pairs of a
  // flow starved to a few datagrams per RTT (beside bbr, 24 Mbit/s: 9-20 pairs a second).
  static constexpr double kPairWindowMs = 10000;
  // The delivery rate is counted over spans of this long (ms, ACK time).
  static constexpr double kShareIntervalMs = 1000;
  // A pair left back to back when its datagrams left less than this fraction of their
  // receive gap apart: the bottleneck spread them, not the sender (whose sends of one burst
  // are microseconds apart on a host, the same instant in the simulator).
  static constexpr double kBackToBack = 0.25;

  // A datagram acknowledged (the clocks as Controller::on_ack's).
  void on_ack(uint64_t seq, double send_ms, double recv_ms, double ack_ms) {
    if (have_previous_ && seq == previous_seq_ + 1) {
      const double recv_gap = recv_ms - previous_recv_ms_;
      if (recv_gap > 0 && send_ms - previous_send_ms_ < kBackToBack * recv_gap) {
        least_gaps_.add(ack_ms, recv_gap, kPairWindowMs);
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
      const double capacity = capacity_mbps();
      share_ = std::isnan(capacity)
                   ? std::numeric_limits<double>::quiet_NaN()
                   : interval_packets_ * kBitsPerPacket / 1000.0 / elapsed_ms / capacity;
      interval_start_ms_ = ack_ms;
      interval_packets_ = 0;
    }
  }
  // The link's rate (Mbit/s) from the least pair gap; NaN before the first pair.
  double capacity_mbps() const {
    return least_gaps_.empty() ? std::numeric_limits<double>::quiet_NaN()
                               : kBitsPerPacket / 1000.0 / least_gaps_.min();
  }
  // The flow's delivery rate over the last whole interval, over capacity_mbps; NaN before.
  double share() const { return share_; }

 private:
  static constexpr double kBitsPerPacket = kDataPacketBytes * 8.0;
  WindowedMin least_gaps_;
  bool have_previous_ = false;
  uint64_t previous_seq_ = 0;
  double previous_send_ms_ = 0;
  double previous_recv_ms_ = 0;
  double interval_start_ms_ = std::numeric_limits<double>::quiet_NaN();
  double interval_packets_ = 0;
  double share_ = std::numeric_limits<double>::quiet_NaN();
};

}  // namespace ccgym
