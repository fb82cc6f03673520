// copa: Copa's default mode (Arun & Balakrishnan, NSDI 2018). The target rate is
// 1/(delta x dq), dq = RTTstanding - RTTmin the queueing delay, RTTstanding the
// minimum RTT over the last srtt/2 (recent, but free of ACK jitter) and RTTmin
// the minimum over 10 s. On each ACK the window moves by v/(delta x cwnd) toward
// the target: up if cwnd/RTTstanding <= target, down otherwise. The velocity v
// resets to 1 on the first ACK that turns the direction, and doubles once per
// window after the window has moved the same way for 3 windows. It paces at
// 2 x cwnd / RTTstanding. Flows in equilibrium keep about 1/delta packets each
// in the queue. Slow start doubles the window per RTT until the rate first
// exceeds the target.
// Simplified: no competitive mode (delta stays fixed), losses are ignored as in
// the default mode, a timeout resets the velocity; v is capped so that one
// window moves cwnd by at most half of itself (our addition: without it a long
// run of doublings can empty the window in one RTT).
#include "policies/cpp/schemes/schemes.hh"

namespace ccgym::schemes {
namespace {

constexpr double kMinRttWindowMs = 10000;

class Copa final : public Controller {
 public:
  explicit Copa(double delta) : delta_(delta) {}

  double window_size() override { return cwnd_; }
  double pacing_rate_mbps() override {
    if (!rtt_.have()) return 0;
    return packets_per_ms_to_mbps(2 * cwnd_ / std::max(standing_.min(), kMinDivisorRttMs));
  }
  void on_sent(uint64_t seq, double /*send_ms: sender clock*/) override { rounds_.on_sent(seq); }
  void on_ack(uint64_t seq, double send_ms, double /*recv_ms: receiver clock*/,
              double ack_ms) override {
    // send_ms, ack_ms: sender clock.
    const double rtt_ms = ack_ms - send_ms;
    if (!(rtt_ms >= 0)) return;
    rtt_.add(rtt_ms);
    standing_.add(ack_ms, rtt_ms, rtt_.srtt() / 2);
    min_rtt_.add(ack_ms, rtt_ms, kMinRttWindowMs);

    const double standing_ms = std::max(standing_.min(), kMinDivisorRttMs);
    const double dq_ms = std::max(standing_ms - min_rtt_.min(), 0.0);
    const double rate = cwnd_ / standing_ms;  // packets per ms
    // dq = 0 means no queue at all: the target rate is unbounded.
    const bool up = dq_ms <= 0 || rate <= 1 / (delta_ * dq_ms);

    if (slow_start_ && up) {
      cwnd_ += 1;
    } else {
      slow_start_ = false;
      // Turning resets the velocity at once: kept until the window's end, a large
      // v would carry the overshoot of one direction into the other.
      const int direction = up ? 1 : -1;
      if (direction != direction_) {
        direction_ = direction;
        velocity_ = 1;
        same_direction_windows_ = 0;
        window_start_cwnd_ = cwnd_;
      }
      const double step = velocity_ / (delta_ * cwnd_);
      cwnd_ += up ? step : -step;
    }
    cwnd_ = clamp_window(cwnd_);
    if (rounds_.on_ack(seq)) end_window();
  }
  double timeout_ms() override { return rtt_.rto(); }
  void on_timeout(double /*now_ms: sender clock*/) override {
    velocity_ = 1;
    same_direction_windows_ = 0;
  }
  std::string name() const override { return "copa"; }

 private:
  void end_window() {
    if (slow_start_) return;
    const int moved = cwnd_ > window_start_cwnd_ ? 1 : -1;
    if (moved == direction_) {
      if (++same_direction_windows_ >= kWindowsBeforeDoubling) velocity_ *= 2;
    } else {
      velocity_ = 1;
      same_direction_windows_ = 0;
    }
    velocity_ = std::clamp(velocity_, 1.0, std::max(1.0, delta_ * cwnd_ / 2));
    window_start_cwnd_ = cwnd_;
  }

  static constexpr int kWindowsBeforeDoubling = 3;

  double delta_;
  double cwnd_ = kInitialWindow;
  double velocity_ = 1;
  int direction_ = 0;  // +1 up, -1 down, 0 before the first decision
  int same_direction_windows_ = 0;
  double window_start_cwnd_ = kInitialWindow;
  bool slow_start_ = true;
  RttEstimator rtt_;
  WindowedMin standing_;
  WindowedMin min_rtt_{4096};
  RoundCounter rounds_;
};

std::unique_ptr<Controller> make(const Params& params, uint64_t) {
  const double delta = param(params, "delta");
  return std::make_unique<Copa>(delta);
}

}  // namespace

SchemeEntry copa_scheme() {
  return {{"copa",
           "Copa (default mode): target rate 1/(delta x queueing delay), velocity doubling",
           {{"delta", 0.5, "1/delta is about the packets each flow keeps queued",
             in_left_open(0, 10)}}},
          &make};
}

}  // namespace ccgym::schemes
