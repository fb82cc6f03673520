// ledbat: LEDBAT (RFC 6817), the scavenger: it keeps the one-way queueing delay
// it adds near target_ms and gets out of the way of any flow that queues more.
// The queueing delay is the latest one-way delay (receiver clock minus sender
// clock; their offset cancels) filtered as the minimum of the last 4 samples,
// minus the base delay: the minimum over base_history_min one-minute buckets, so
// that a route change is forgotten after minutes. On each ACK the window moves
// by gain x off_target / cwnd, off_target = (target - queueing delay) / target:
// at most one packet per RTT up (never faster than Reno), faster down the
// further the queue is above target. The window never exceeds what was in flight
// at the latest send plus 1 (ALLOWED_INCREASE) and never falls below 2 (MIN_CWND). A loss event
// halves the window (once per RTT); a timeout sets it to 1.
// Window-based and unpaced, as the RFC specifies. No slow start: the RFC lets an
// implementation start at up to 2 packets and ramp no faster than TCP.
#include <array>

#include "policies/cpp/schemes/schemes.hh"

namespace ccgym::schemes {
namespace {

constexpr double kMinCwnd = 2;           // RFC 6817's MIN_CWND
constexpr double kInitialCwnd = 2;       // RFC 6817's INIT_CWND
constexpr double kAllowedIncrease = 1;   // RFC 6817's ALLOWED_INCREASE
constexpr std::size_t kCurrentFilter = 4;  // RFC 6817's CURRENT_FILTER (samples)
constexpr double kBucketMs = 60000;      // the base history's bucket: one minute
constexpr std::size_t kMaxBaseHistory = 60;

class Ledbat final : public Controller {
 public:
  Ledbat(double target_ms, double gain, double base_history_min)
      : target_ms_(target_ms),
        gain_(gain),
        base_history_(static_cast<std::size_t>(base_history_min)) {
    base_.fill(kInf);
    current_.fill(kInf);
  }

  double window_size() override { return cwnd_; }
  void on_sent(uint64_t seq, double /*send_ms: sender clock*/) override {
    loss_.on_sent(seq);
    next_seq_ = std::max(next_seq_, seq + 1);
    used_ = static_cast<double>(next_seq_ - std::min(next_seq_, acked_through_));
  }
  void on_ack(uint64_t seq, double send_ms, double recv_ms, double ack_ms) override {
    // send_ms, ack_ms: sender clock; recv_ms: receiver clock.
    rtt_.add(ack_ms - send_ms);
    acked_through_ = std::max(acked_through_, seq + 1);
    add_delay(recv_ms - send_ms, ack_ms);
    if (loss_.on_ack(seq)) {
      cwnd_ = std::max(cwnd_ / 2, kMinCwnd);
      return;
    }
    const double queue_ms = std::max(filtered_delay() - base_delay(), 0.0);
    const double off_target = (target_ms_ - queue_ms) / target_ms_;
    cwnd_ += gain_ * off_target / cwnd_;
    // The RFC's flightsize: what the sender had in flight when it last sent, so that an
    // unused window does not grow, but a burst of ACKs between two sends does not shrink it.
    cwnd_ = clamp_window(std::clamp(cwnd_, kMinCwnd, std::max(used_, kMinCwnd) + kAllowedIncrease));
  }
  double timeout_ms() override { return rtt_.rto(); }
  void on_timeout(double /*now_ms: sender clock*/) override {
    loss_.on_timeout();
    cwnd_ = 1;
  }
  std::string name() const override { return "ledbat"; }

 private:
  static constexpr double kInf = std::numeric_limits<double>::infinity();

  void add_delay(double one_way_ms, double now_ms /* sender clock */) {
    if (!std::isfinite(one_way_ms)) return;
    current_[current_next_++ % kCurrentFilter] = one_way_ms;
    // A new minute starts a new bucket and forgets the oldest.
    const auto minute = static_cast<int64_t>(std::floor(now_ms / kBucketMs));
    if (minute != last_minute_) {
      last_minute_ = minute;
      base_next_ = (base_next_ + 1) % base_history_;
      base_[base_next_] = one_way_ms;
    } else {
      base_[base_next_] = std::min(base_[base_next_], one_way_ms);
    }
  }
  double filtered_delay() const {
    return *std::min_element(current_.begin(), current_.end());
  }
  double base_delay() const {
    return *std::min_element(base_.begin(), base_.begin() + static_cast<long>(base_history_));
  }

  double target_ms_;
  double gain_;
  std::size_t base_history_;
  double cwnd_ = kInitialCwnd;
  uint64_t next_seq_ = 0;
  uint64_t acked_through_ = 0;  // 1 + the highest seq acknowledged
  double used_ = 0;             // in flight just after the latest send
  std::array<double, kMaxBaseHistory> base_{};  // one-way delay minima per minute, a ring
  std::size_t base_next_ = 0;
  int64_t last_minute_ = std::numeric_limits<int64_t>::min();
  std::array<double, kCurrentFilter> current_{};  // the latest one-way delays, a ring
  std::size_t current_next_ = 0;
  RttEstimator rtt_;
  LossDetector loss_;
};

std::unique_ptr<Controller> make(const Params& params, uint64_t) {
  const double history = param(params, "base_history_min");
  check_param(history == std::floor(history), "ledbat", "base_history_min", "a whole number",
              history);
  return std::make_unique<Ledbat>(param(params, "target_ms"), param(params, "gain"), history);
}

}  // namespace

SchemeEntry ledbat_scheme() {
  return {{"ledbat",
           "LEDBAT (RFC 6817), the scavenger: holds its one-way queueing delay near target_ms "
           "and yields to flows that queue more",
           {{"target_ms", 100, "queueing delay (ms) it aims at: RFC 6817's TARGET",
             in_left_open(0, 10000)},
            {"gain", 1, "window change per RTT at zero queue, in packets (RFC: at most 1)",
             in_left_open(0, 1)},
            {"base_history_min", 10, "minutes of one-minute minima behind the base delay",
             in_closed(1, static_cast<double>(kMaxBaseHistory))}}},
          &make};
}

}  // namespace ccgym::schemes
