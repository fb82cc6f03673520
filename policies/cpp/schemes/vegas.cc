// vegas: TCP Vegas (Brakmo & Peterson 1995), as Linux's tcp_vegas does it. Once
// per round trip, diff = cwnd * (1 - baseRTT/RTT) estimates the packets this
// flow keeps queued (baseRTT: the minimum RTT ever seen; RTT: the minimum over
// the last round, which filters ACK jitter). In congestion avoidance the window
// grows by one packet per RTT while diff < alpha and shrinks by one while
// diff > beta, so the queue stays between alpha and beta packets. Slow start
// doubles the window every other RTT until diff exceeds gamma, then sets it to
// the window that would leave gamma packets queued: holding the window for a
// round means the next round's RTTs come from a window that did not grow
// meanwhile, so their minimum is the standing queue, not the slow-start burst.
// Simplified: losses halve the window once per RTT (Reno, no fast recovery); a
// timeout restarts slow start from 1.
#include "policies/cpp/schemes/schemes.hh"

namespace ccgym::schemes {
namespace {

class Vegas final : public Controller {
 public:
  Vegas(double alpha, double beta, double gamma) : alpha_(alpha), beta_(beta), gamma_(gamma) {}

  double window_size() override { return cwnd_; }
  void on_sent(uint64_t seq, double /*send_ms: sender clock*/) override {
    loss_.on_sent(seq);
    rounds_.on_sent(seq);
  }
  void on_ack(uint64_t seq, double send_ms, double /*recv_ms: receiver clock*/,
              double ack_ms) override {
    // send_ms, ack_ms: sender clock.
    const double rtt_ms = ack_ms - send_ms;
    rtt_.add(rtt_ms);
    round_min_rtt_ms_ = std::min(round_min_rtt_ms_, rtt_ms);
    if (loss_.on_ack(seq)) {
      cwnd_ = clamp_window(std::max(cwnd_ / 2, 2.0));
      ssthresh_ = cwnd_;
    } else if (cwnd_ < ssthresh_ && growing_round_) {
      cwnd_ = clamp_window(cwnd_ + 1);
    }
    if (rounds_.on_ack(seq)) end_round();
  }
  double timeout_ms() override { return rtt_.rto(); }
  void on_timeout(double /*now_ms: sender clock*/) override {
    loss_.on_timeout();
    ssthresh_ = std::max(cwnd_ / 2, 2.0);
    cwnd_ = 1;
    growing_round_ = false;
    held_cwnd_ = cwnd_;
  }
  std::string name() const override { return "vegas"; }

 private:
  void end_round() {
    const double rtt_ms = round_min_rtt_ms_;
    round_min_rtt_ms_ = std::numeric_limits<double>::infinity();
    if (!std::isfinite(rtt_ms) || rtt_ms <= 0) return;
    const double base_ms = rtt_.min();
    if (cwnd_ < ssthresh_) {
      if (!growing_round_) {
        // The next round's RTTs belong to packets sent under this held window.
        held_cwnd_ = cwnd_;
        growing_round_ = true;
        return;
      }
      growing_round_ = false;
      const double held_diff = held_cwnd_ * (1 - base_ms / rtt_ms);
      if (held_diff > gamma_) {
        // The window that keeps gamma packets queued at the rate the held window got.
        cwnd_ = clamp_window(std::min(cwnd_, held_cwnd_ * base_ms / rtt_ms + gamma_));
        ssthresh_ = cwnd_;
      }
      return;
    }
    const double diff = cwnd_ * (1 - base_ms / rtt_ms);
    if (diff < alpha_) {
      cwnd_ = clamp_window(cwnd_ + 1);
    } else if (diff > beta_) {
      cwnd_ = clamp_window(cwnd_ - 1);
    }
    // A window lowered in congestion avoidance must not re-enter slow start.
    ssthresh_ = std::min(ssthresh_, cwnd_);
  }

  double alpha_;
  double beta_;
  double gamma_;
  double cwnd_ = kInitialWindow;
  double ssthresh_ = std::numeric_limits<double>::infinity();
  double round_min_rtt_ms_ = std::numeric_limits<double>::infinity();
  bool growing_round_ = false;  // slow start alternates holding and growing rounds
  double held_cwnd_ = kInitialWindow;
  RttEstimator rtt_;
  LossDetector loss_;
  RoundCounter rounds_;
};

std::unique_ptr<Controller> make(const Params& params, uint64_t) {
  const double alpha = param(params, "alpha");
  const double beta = param(params, "beta");
  const double gamma = param(params, "gamma");
  check_param(beta >= alpha, "vegas", "beta", ">= alpha", beta);
  return std::make_unique<Vegas>(alpha, beta, gamma);
}

}  // namespace

SchemeEntry vegas_scheme() {
  return {{"vegas",
           "TCP Vegas: keeps between alpha and beta packets queued, from the RTT over its minimum",
           {{"alpha", 2, "queued packets below which the window grows by 1 per RTT", above(0)},
            {"beta", 4, "queued packets above which the window shrinks by 1 per RTT", above(0)},
            {"gamma", 1, "queued packets at which slow start ends", above(0)}}},
          &make};
}

}  // namespace ccgym::schemes
