// What Linux's TCP does for every loss-based congestion control module, which decides only
// how the window grows and how far it falls (cubic.hh, reno.cc), as tcp_cubic.c and
// tcp_cong.c's Reno plug into the kernel's TCP:
// - the window in packets, from kInitialWindow; slow start (+1 packet per ACK) below ssthresh;
// - a loss event: a gap in the acknowledged sequence, once per RTT (LossDetector);
// - the timeout: Linux's (LinuxRto's timer, a tail loss probe first, a spurious timeout
//   undone, below) or, with linux_rto off, RFC 6298's. A timeout restarts slow start from 1.
// No fast recovery: ccgym's senders do not retransmit.
#pragma once
#include "policies/cpp/schemes/schemes.hh"

namespace ccgym::schemes {

class LinuxTcpWindow : public Controller {
 public:
  explicit LinuxTcpWindow(bool linux_rto) : linux_rto_(linux_rto) {}

  double window_size() override { return cwnd_; }
  void on_sent(uint64_t seq, double /*send_ms: sender clock*/) override {
    loss_.on_sent(seq);
    next_seq_ = seq + 1;
  }
  void on_ack(uint64_t seq, double send_ms, double /*recv_ms: receiver clock*/,
              double ack_ms) override {
    // send_ms, ack_ms: sender clock.
    rtt_.add(ack_ms - send_ms);
    if (linux_rto_) {
      linux_timeout_.add(ack_ms - send_ms, seq, next_seq_);
      undo_spurious_timeout(seq);
      probe_armed_ = true;
    }
    acked_through_ = std::max(acked_through_, seq + 1);
    before_growth(seq, ack_ms - send_ms, ack_ms);
    if (loss_.on_ack(seq)) {
      on_loss();
    } else if (cwnd_ < ssthresh_) {
      cwnd_ = clamp_window(cwnd_ + 1);
    } else {
      congestion_avoidance(ack_ms);
    }
  }
  double timeout_ms() override {
    if (!linux_rto_) return rtt_.rto();
    return probe_armed_ ? linux_timeout_.probe_timeout() : linux_timeout_.rto();
  }
  void on_timeout(double /*now_ms: sender clock*/) override {
    if (linux_rto_ && probe_armed_) {
      probe_armed_ = false;  // a tail loss probe: the sender's one datagram, no cut
      return;
    }
    if (linux_rto_ && !undo_pending_) {
      undo_pending_ = true;
      undo_head_seq_ = acked_through_;
      undo_window_ = cwnd_;
      undo_ssthresh_ = ssthresh_;
    }
    loss_.on_timeout();
    cut_on_timeout();
  }

 protected:
  // The module's part. On each ACK before the window moves (rtt_ms, ack_ms: sender clock).
  virtual void before_growth(uint64_t /*seq*/, double /*rtt_ms*/, double /*ack_ms*/) {}
  // The window on a loss event.
  virtual void on_loss() = 0;
  // The window's growth per ACK at or above ssthresh (ack_ms: sender clock).
  virtual void congestion_avoidance(double ack_ms) = 0;
  // ssthresh, and the window from 1, on a timeout that is not a probe.
  virtual void cut_on_timeout() = 0;
  // After a spurious timeout gave back the window and ssthresh.
  virtual void after_undo() {}

  double cwnd_ = kInitialWindow;
  double ssthresh_ = std::numeric_limits<double>::infinity();
  uint64_t next_seq_ = 0;
  RttEstimator rtt_;
  LossDetector loss_;

 private:
  // Linux's undo of a spurious timeout (F-RTO, or Eifel's test with timestamps): when the
  // first ACK after a timeout is for the oldest packet then unacknowledged, sent before it,
  // that packet was late, not lost, and the window and ssthresh go back to where they were
  // (tcp_try_undo_loss). On an unlimited buffer every timeout is spurious, and one that is
  // kept leaves its flow far behind the others for the rest of the run.
  void undo_spurious_timeout(uint64_t seq) {
    if (!undo_pending_) return;
    undo_pending_ = false;
    if (seq != undo_head_seq_) return;  // the oldest packet was lost: a real timeout
    cwnd_ = std::max(cwnd_, undo_window_);
    ssthresh_ = std::max(ssthresh_, undo_ssthresh_);
    after_undo();
  }

  bool linux_rto_;
  LinuxRto linux_timeout_;
  uint64_t acked_through_ = 0;  // one past the highest sequence number acknowledged
  bool probe_armed_ = false;    // the next expiry is a tail loss probe (linux_rto)
  bool undo_pending_ = false;   // a timeout waits for its first ACK (linux_rto)
  uint64_t undo_head_seq_ = 0;  // the oldest unacknowledged packet at that timeout
  double undo_window_ = 0;      // the window and ssthresh the timeout cut
  double undo_ssthresh_ = 0;
};

}  // namespace ccgym::schemes
