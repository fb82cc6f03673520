// The receiving end of one simulated flow: when each data packet's ACK leaves for the sender.
// The sender gets one ACK record per data packet (SenderModel); a receiver that acknowledges two
// packets at once sends both records at that instant, as one cumulative TCP ACK tells the
// sender of both.
//
// A TCP receiver delays its ACKs (RFC 1122 4.2.3.2, RFC 5681 4.2), as Linux's does
// (tcp_input.c's __tcp_ack_snd_check): one ACK for every second packet, at the second's
// arrival. A packet whose ACK is held goes out alone after kDelayedAckMs (Linux's least
// delayed-ACK timeout, TCP_ATO_MIN) if no second packet comes. The first kQuickAcks packets
// of a connection are acknowledged at once (its quick-ACK mode), and so is every packet while
// a gap in the sequence is open (out-of-order data, RFC 5681 4.2): from the arrival after a
// loss until the packets sent once the sender could know of it, one ACK path later, when its
// retransmission would leave. (The simulated senders do not retransmit: the gap is closed by
// that time, not by a packet.)
//
// Delayed ACKs make a window-limited sender send in pairs and threes, each ACK releasing two
// packets and any growth back to back: through the link shell, kernel CUBIC beside bbr on
// 6 Mbit/s, 30 ms, 1 BDP sent 70% of its packets in pairs and 8% in threes, and its receiver
// acknowledged two packets with 65% of its ACKs (docs/results.md). Which packet of a burst
// meets a full DropTail queue decides a loss-based flow's share beside a paced one.
#pragma once
#include <cstdint>

#include "common/cpp/packet.hh"
#include "common/cpp/time.hh"

namespace ccgym {

class TcpReceiver {
 public:
  static constexpr int kQuickAcks = 16;           // Linux's TCP_MAX_QUICKACKS
  static constexpr double kDelayedAckMs = 40;     // Linux's TCP_ATO_MIN (HZ / 25)

  // delays: TCP's delayed ACKs as above; false: every packet's ACK at once (ccgym's own
  // receiver, which answers each datagram). ack_path_ms: the ACK direction's delay.
  TcpReceiver(bool delays, double ack_path_ms) : delays_(delays), ack_path_ms_(ack_path_ms) {}

  // `ack` is the ACK record of a data packet that arrived at t. Calls send(record, t) for
  // each record that leaves now, a held one first.
  template <class Send>
  void on_arrival(const Packet& ack, double t, Send&& send) {
    if (!delays_) {
      send(ack, t);
      return;
    }
    if (ack.seq > next_seq_) gap_cutoff_sent_ms_ = t + ack_path_ms_;  // packets went missing
    if (ack.seq >= next_seq_) next_seq_ = ack.seq + 1;
    const bool at_once = quick_acks_left_ > 0 || ack.sent_ms <= gap_cutoff_sent_ms_;
    if (quick_acks_left_ > 0) --quick_acks_left_;
    if (held_) {
      held_ = false;
      send(held_ack_, t);
      send(ack, t);
    } else if (at_once) {
      send(ack, t);
    } else {
      held_ = true;
      held_ack_ = ack;
      held_due_ms_ = t + kDelayedAckMs;
    }
  }

  // When a held ACK is due; kNever if none is held.
  double next_due_ms() const { return held_ ? held_due_ms_ : kNever; }

  // Sends the held ACK at t if it is due by then.
  template <class Send>
  void on_timer(double t, Send&& send) {
    if (!held_ || held_due_ms_ > t) return;
    held_ = false;
    send(held_ack_, t);
  }

 private:
  bool delays_;
  double ack_path_ms_;
  uint64_t next_seq_ = 0;               // one past the highest sequence number received
  int quick_acks_left_ = kQuickAcks;
  double gap_cutoff_sent_ms_ = -kNever;  // sender clock: packets sent by then are behind a gap
  bool held_ = false;
  Packet held_ack_;
  double held_due_ms_ = kNever;
};

}  // namespace ccgym
