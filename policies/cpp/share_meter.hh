// A flow's share of its bottleneck, as a learned flow's competitive mode reads it: its
// delivery rate over the link's rate. The link's rate comes from packet pairs (Keshav,
// SIGCOMM 1991): two datagrams that left back to back reach the receiver one serialization
// apart when nothing came between them at the bottleneck, so the receive gap of such pairs
// is the link's time for one datagram. Cross traffic only widens gaps, so beside a buffer
// filler the estimate stays the link's, where the flow's own delivery rate falls with its
// share. Each interval's rate is the pairs' mean gap: a recorded cellular link delivers in
// bursts on whole milliseconds (on tmobile-lte-short most consecutive datagrams leave in the
// same millisecond), where the median gap read 0.6 of the link's rate in a second and the
// mean of the middle half 7 times it; the mean read 0.86-0.94 (three learned flows, each
// second's pairs against what all delivered). Its cost is that a pair split by cross
// traffic or read at once by a busy receiver moves it by that pair's share.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

#include "common/cpp/packet.hh"

namespace ccgym {

class ShareMeter {
 public:
  // The delivery rate and the pairs' mean gap are taken over spans of this long (ms, ACK
  // time). A flow starved to a few datagrams per RTT makes 9-20 pairs a second (beside bbr,
  // 24 Mbit/s, 1 BDP). A cellular link's rate moves within seconds: the share is taken
  // against the same span's rate (the last span's with pairs enough).
  static constexpr double kShareIntervalMs = 1000;
  // The rate is read from at least this many pairs: an interval with fewer carries them
  // into the next. A trace link's gaps of 0 and several milliseconds average out only over
  // many (with 5 and none carried, three learned flows on cellular-12mbps-seed5 shared at a
  // Jain's index of 0.95 at one seed, with 20 at 1.00).
  static constexpr std::size_t kMinPairs = 20;
  // A pair left back to back when its datagrams left at most this fraction of their receive
  // gap apart: the bottleneck spread them, not the sender (whose sends of one burst are
  // microseconds apart on a host, the same instant in the simulator). A quarter let in
  // datagrams sent an ACK apart, between which a competitor's burst fits: beside bbr on 48
  // Mbit/s, 10 ms the mean read 28-43 Mbit/s.
  static constexpr double kBackToBack = 0.05;

  // A datagram acknowledged (the clocks as Controller::on_ack's).
  void on_ack(uint64_t seq, double send_ms, double recv_ms, double ack_ms) {
    if (have_previous_ && seq == previous_seq_ + 1) {
      const double recv_gap = recv_ms - previous_recv_ms_;
      if (recv_gap >= 0 && send_ms - previous_send_ms_ <= kBackToBack * recv_gap) {
        ++pairs_;
        gap_sum_ms_ += recv_gap;
      }
    }
    have_previous_ = true;
    previous_seq_ = seq;
    previous_send_ms_ = send_ms;
    previous_recv_ms_ = recv_ms;

    if (std::isnan(interval_start_ms_)) interval_start_ms_ = ack_ms;
    ++interval_packets_;
    const double elapsed_ms = ack_ms - interval_start_ms_;
    if (elapsed_ms >= kShareIntervalMs) {
      // Fewer pairs carry over into the next interval's.
      if (pairs_ >= kMinPairs) {
        // All in one millisecond's burst: no rate to read.
        if (gap_sum_ms_ > 0) {
          capacity_mbps_ = packets_per_ms_to_mbps(static_cast<double>(pairs_) / gap_sum_ms_);
        }
        pairs_ = 0;
        gap_sum_ms_ = 0;
      }
      const double capacity = capacity_mbps();
      share_ = std::isnan(capacity)
                   ? std::numeric_limits<double>::quiet_NaN()
                   : packets_per_ms_to_mbps(interval_packets_ / elapsed_ms) / capacity;
      interval_start_ms_ = ack_ms;
      interval_packets_ = 0;
    }
  }
  // The link's rate (Mbit/s) from the latest kMinPairs pairs or more; NaN before.
  double capacity_mbps() const { return capacity_mbps_; }
  // The flow's delivery rate over the last whole interval, over capacity_mbps; NaN before.
  double share() const { return share_; }

 private:
  std::size_t pairs_ = 0;
  double gap_sum_ms_ = 0;
  bool have_previous_ = false;
  uint64_t previous_seq_ = 0;
  double previous_send_ms_ = 0;
  double previous_recv_ms_ = 0;
  double interval_start_ms_ = std::numeric_limits<double>::quiet_NaN();
  double interval_packets_ = 0;
  double capacity_mbps_ = std::numeric_limits<double>::quiet_NaN();
  double share_ = std::numeric_limits<double>::quiet_NaN();
};

}  // namespace ccgym
