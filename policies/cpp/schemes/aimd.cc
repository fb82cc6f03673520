// aimd: additive increase, multiplicative decrease (Chiu & Jain 1989; TCP Reno's
// congestion avoidance, the contest's second exercise). The window grows by
// `increase` packets per RTT (increase/window per ACK) and is multiplied by
// `decrease` on a loss event (a gap in the acked sequence, at most once per RTT)
// and on a timeout. Simplified: no slow start, no fast recovery (the sender
// does not retransmit), the window starts at kInitialWindow.
#include "policies/cpp/schemes/schemes.hh"

namespace ccgym::schemes {
namespace {

class Aimd final : public Controller {
 public:
  Aimd(double increase, double decrease) : increase_(increase), decrease_(decrease) {}

  double window_size() override { return window_; }
  void on_sent(uint64_t seq, double /*send_ms: sender clock*/) override { loss_.on_sent(seq); }
  void on_ack(uint64_t seq, double send_ms, double /*recv_ms: receiver clock*/,
              double ack_ms) override {
    // send_ms, ack_ms: sender clock.
    rtt_.add(ack_ms - send_ms);
    if (loss_.on_ack(seq)) {
      window_ = clamp_window(window_ * decrease_);
    } else {
      window_ = clamp_window(window_ + increase_ / window_);
    }
  }
  double timeout_ms() override { return rtt_.rto(); }
  void on_timeout(double /*now_ms: sender clock*/) override {
    loss_.on_timeout();
    window_ = clamp_window(window_ * decrease_);
  }
  std::string name() const override { return "aimd"; }

 private:
  double increase_;
  double decrease_;
  double window_ = kInitialWindow;
  LossDetector loss_;
  RttEstimator rtt_;
};

std::unique_ptr<Controller> make(const Params& params, uint64_t) {
  const double increase = param(params, "increase");
  const double decrease = param(params, "decrease");
  return std::make_unique<Aimd>(increase, decrease);
}

}  // namespace

SchemeEntry aimd_scheme() {
  return {{"aimd",
           "additive increase per RTT, multiplicative decrease on loss (once per RTT) and timeout",
           {{"increase", 1, "packets added to the window per RTT", above(0)},
            {"decrease", 0.5, "factor applied to the window on a loss event or timeout",
             in_open(0, 1)}}},
          &make};
}

}  // namespace ccgym::schemes
