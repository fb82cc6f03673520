// delay: the contest's delay-triggered rule. Each ACK's RTT is compared with two
// fixed thresholds: above `high_ms` the window is multiplied by `decrease` (at
// most once per RTT, so that one standing queue is not punished on every ACK),
// below `low_ms` it grows by `increase` packets per RTT (increase/window per
// ACK), in between it holds. Losses are ignored, as in the contest's version; a
// timeout counts as a decrease. The thresholds are absolute: on a path whose
// minimum RTT exceeds high_ms the window shrinks to 1, which is the rule's known
// weakness and why the contest moved on to rate estimates.
#include "policies/cpp/schemes/schemes.hh"

namespace ccgym::schemes {
namespace {

class Delay final : public Controller {
 public:
  Delay(double high_ms, double low_ms, double increase, double decrease)
      : high_ms_(high_ms), low_ms_(low_ms), increase_(increase), decrease_(decrease) {}

  double window_size() override { return window_; }
  void on_sent(uint64_t seq, double /*send_ms: sender clock*/) override {
    next_seq_ = std::max(next_seq_, seq + 1);
  }
  void on_ack(uint64_t seq, double send_ms, double /*recv_ms: receiver clock*/,
              double ack_ms) override {
    // send_ms, ack_ms: sender clock.
    next_seq_ = std::max(next_seq_, seq + 1);
    const double rtt_ms = ack_ms - send_ms;
    rtt_.add(rtt_ms);
    if (rtt_ms > high_ms_) {
      // Packets sent before the last decrease carry delay it could not yet change.
      if (seq >= hold_until_seq_) {
        window_ = clamp_window(window_ * decrease_);
        hold_until_seq_ = next_seq_;
      }
    } else if (rtt_ms < low_ms_) {
      window_ = clamp_window(window_ + increase_ / window_);
    }
  }
  double timeout_ms() override { return rtt_.rto(); }
  void on_timeout(double /*now_ms: sender clock*/) override {
    window_ = clamp_window(window_ * decrease_);
    hold_until_seq_ = next_seq_;
  }
  std::string name() const override { return "delay"; }

 private:
  double high_ms_;
  double low_ms_;
  double increase_;
  double decrease_;
  double window_ = kInitialWindow;
  uint64_t next_seq_ = 0;
  uint64_t hold_until_seq_ = 0;
  RttEstimator rtt_;
};

std::unique_ptr<Controller> make(const Params& params, uint64_t) {
  const double high = param(params, "high_ms");
  const double low = param(params, "low_ms");
  const double increase = param(params, "increase");
  const double decrease = param(params, "decrease");
  check_param(low <= high, "delay", "low_ms", "<= high_ms", low);
  return std::make_unique<Delay>(high, low, increase, decrease);
}

}  // namespace

SchemeEntry delay_scheme() {
  return {{"delay",
           "contest's delay trigger: shrink when RTT > high_ms, grow when RTT < low_ms",
           {{"high_ms", 100, "RTT (ms) above which the window shrinks", above(0)},
            {"low_ms", 60, "RTT (ms) below which the window grows", above(0)},
            {"increase", 1, "packets added per RTT while RTT < low_ms", above(0)},
            {"decrease", 0.8, "factor applied (once per RTT) while RTT > high_ms", in_open(0, 1)}}},
          &make};
}

}  // namespace ccgym::schemes
