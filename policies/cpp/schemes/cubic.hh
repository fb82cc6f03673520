// cubic: CUBIC (RFC 8312; Ha, Rhee & Xu 2008), Linux's default loss-based
// scheme. Slow start (+1 packet per ACK) up to ssthresh; then the window follows
// W_cubic(t) = C (t - K)^3 + W_max, t in seconds since the last loss, K the time
// to climb back to W_max; it never falls below the window Reno would have (the
// TCP-friendly region). A loss event sets W_max (lowered further by fast convergence when
// the window had not recovered) and multiplies the window by beta. A timeout restarts slow
// start from 1 with ssthresh = beta x window. It fills a droptail buffer until it drops,
// then backs off by beta: a standing queue on deep buffers. Slow start, loss events and the
// timeouts are Linux's TCP's (linux_tcp.hh).
// Simplified: the per-ACK growth toward W_cubic is capped at 0.5 packet (Linux's
// at most 1.5x per RTT); HyStart only as an option (hystart=1: its delay test; 2: its
// ACK-train test too, as Linux runs it; below).
#pragma once
#include "policies/cpp/schemes/linux_tcp.hh"

namespace ccgym::schemes {

class Cubic final : public LinuxTcpWindow {
 public:
  Cubic(double c, double beta, int hystart, bool linux_rto)
      : LinuxTcpWindow(linux_rto),
        c_(c),
        beta_(beta),
        reno_alpha_(3 * (1 - beta) / (1 + beta)),
        hystart_(hystart) {}

  std::string name() const override { return "cubic"; }

  // The window back to 1 with ssthresh kept, so that slow start climbs back to it
  // within a few RTTs: C2TCP's answer to a delay above its target (c2tcp.cc).
  void restart_from_one() {
    cwnd_ = 1;
    in_epoch_ = false;
  }
  // Leaves the first slow start at the current window, as HyStart's delay test does
  // in Linux's CUBIC (which C2TCP was built on, and this CUBIC leaves out).
  void end_first_slow_start() {
    if (!std::isfinite(ssthresh_)) ssthresh_ = std::max(cwnd_, 2.0);
  }

 private:
  // HyStart (Ha and Rhee 2011; Linux's tcp_cubic.c): in the first slow start from a window
  // of 16, either test ends slow start at the current window, before the queue overflows.
  // The delay test: the least RTT of a round's first 8 ACKs above the path's minimum by an
  // eighth of it (4 to 16 ms); beside a flow that already fills the queue, that is at once.
  // The ACK-train test (hystart=2): the round's ACKs, each within 2 ms of the one before,
  // span more than half the minimum RTT (plus Linux's 1 ms of send quantum, halved for an
  // unpaced sender): a window of about half a BDP reaches the bottleneck back to back.
  void hystart_tests(uint64_t seq, double rtt_ms, double ack_ms /* sender clock */) {
    if (seq >= round_end_seq_) {  // a new round: the next one ends with what is sent now
      round_end_seq_ = next_seq_;
      round_min_rtt_ms_ = std::numeric_limits<double>::infinity();
      round_samples_ = 0;
      round_start_ms_ = train_last_ms_ = ack_ms;
    }
    if (cwnd_ < kHystartLowWindow) return;
    if (hystart_ == 2 && ack_ms - train_last_ms_ <= kHystartAckDeltaMs) {
      train_last_ms_ = ack_ms;
      if (ack_ms - round_start_ms_ > (rtt_.min() + kHystartAckDelayMs) / 2) {
        ssthresh_ = cwnd_;
        return;
      }
    }
    if (round_samples_ >= kHystartSamples) return;
    round_min_rtt_ms_ = std::min(round_min_rtt_ms_, rtt_ms);
    if (++round_samples_ < kHystartSamples) return;
    const double threshold = std::clamp(rtt_.min() / 8, kHystartMinDelayMs, kHystartMaxDelayMs);
    if (round_min_rtt_ms_ >= rtt_.min() + threshold) ssthresh_ = cwnd_;
  }

  void before_growth(uint64_t seq, double rtt_ms, double ack_ms) override {
    if (hystart_ != 0 && cwnd_ < ssthresh_) hystart_tests(seq, rtt_ms, ack_ms);
  }
  void on_loss() override {
    in_epoch_ = false;
    // Fast convergence: a flow that lost before regaining W_max releases bandwidth.
    w_max_ = cwnd_ < w_max_ ? cwnd_ * (1 + beta_) / 2 : cwnd_;
    cwnd_ = clamp_window(std::max(cwnd_ * beta_, 2.0));
    ssthresh_ = cwnd_;
  }

  void cut_on_timeout() override {
    w_max_ = cwnd_;
    ssthresh_ = std::max(cwnd_ * beta_, 2.0);
    cwnd_ = 1;
    in_epoch_ = false;
  }
  void after_undo() override { in_epoch_ = false; }  // CUBIC's epoch restarts, W_max stays

  void congestion_avoidance(double ack_ms /* sender clock */) override {
    if (!in_epoch_) {
      in_epoch_ = true;
      epoch_start_ms_ = ack_ms;
      if (cwnd_ < w_max_) {
        k_s_ = std::cbrt((w_max_ - cwnd_) / c_);
        origin_ = w_max_;
      } else {
        k_s_ = 0;
        origin_ = cwnd_;
      }
      w_est_ = cwnd_;
    }
    // RFC 8312 aims at W_cubic one RTT ahead.
    const double t_s = (ack_ms - epoch_start_ms_ + rtt_.min()) / 1000;
    const double target = origin_ + c_ * std::pow(t_s - k_s_, 3);
    double growth = target > cwnd_ ? std::min((target - cwnd_) / cwnd_, kMaxGrowthPerAck)
                                   : kPlateauGrowth / cwnd_;
    // Before the first loss (a window HyStart ended slow start at) the cubic curve starts
    // flat at the window with no W_max above it; Linux grows it at least 5% an RTT there.
    if (w_max_ == 0) growth = std::max(growth, kFirstEpochGrowthPerAck);
    const double next = cwnd_ + growth;
    w_est_ += reno_alpha_ / cwnd_;
    cwnd_ = clamp_window(std::max(next, w_est_));
  }

  static constexpr double kHystartLowWindow = 16;
  static constexpr int kHystartSamples = 8;
  static constexpr double kHystartMinDelayMs = 4;
  static constexpr double kHystartMaxDelayMs = 16;
  static constexpr double kHystartAckDeltaMs = 2;
  static constexpr double kHystartAckDelayMs = 1;
  // Linux's cap on the cubic increase: at most one packet per two ACKs.
  static constexpr double kMaxGrowthPerAck = 0.5;
  // Linux's floor before any loss (bictcp_update's cnt of at most 20): 1 packet per 20 ACKs.
  static constexpr double kFirstEpochGrowthPerAck = 0.05;
  // Linux's growth when the window is at or above W_cubic: 1 packet per 100 RTTs.
  static constexpr double kPlateauGrowth = 0.01;

  double c_;
  double beta_;
  double reno_alpha_;  // Reno's per-RTT increase that matches CUBIC's beta (RFC 8312 4.2)
  double w_max_ = 0;
  bool in_epoch_ = false;
  double epoch_start_ms_ = 0;  // sender clock
  double k_s_ = 0;
  double origin_ = 0;
  double w_est_ = 0;
  int hystart_;  // 0: none; 1: the delay test; 2: the delay and ACK-train tests
  uint64_t round_end_seq_ = 0;
  double round_min_rtt_ms_ = std::numeric_limits<double>::infinity();
  int round_samples_ = 0;
  double round_start_ms_ = 0;  // sender clock: the round's first ACK
  double train_last_ms_ = 0;   // sender clock: the last ACK of the round's unbroken train
};

}  // namespace ccgym::schemes
