// c2tcp: C2TCP (Abbasloo, Xu & Chao, "C2TCP: A Flexible Cellular TCP to Meet
// Stringent Delay Requirements", IEEE JSAC 2019): a delay target wrapped around
// an unchanged loss-based scheme (CUBIC here, as in the authors' kernel patch).
// Target = alpha x min RTT; the interval starts at one min RTT. On every ACK:
// an RTT below the target is a good condition (reset); the first RTT above it
// starts a timer of one interval; if the RTT is still above the target when the
// timer expires, the window drops to 1 with ssthresh kept (slow start climbs back
// within a few RTTs) and the next check comes interval / sqrt(n) later, n counting
// the drops since the last good condition: CoDel's control law applied at the
// sender. Between drops CUBIC does what it always does, with HyStart's delay test
// ending its first slow start as in the Linux CUBIC under the authors' C2TCP (ours
// leaves HyStart out): without it ssthresh stays unbounded until a loss, and each
// drop to 1 slow-starts far past the target again. Its timeouts are Linux's, as cubic's
// are by default: the authors' C2TCP runs inside Linux's TCP (linux_rto=0: RFC 6298's).
// Window-based and unpaced, as CUBIC.
#include "policies/cpp/schemes/cubic.hh"

namespace ccgym::schemes {
namespace {

constexpr double kHystartMinEtaMs = 4;
constexpr double kHystartMaxEtaMs = 16;
constexpr double kHystartLowWindow = 16;  // HyStart acts from this window (packets) on

class C2tcp final : public Controller {
 public:
  C2tcp(double alpha, double c, double beta, bool linux_rto)
      : alpha_(alpha), cubic_(c, beta, /*hystart=*/0, linux_rto) {}

  double window_size() override { return cubic_.window_size(); }
  void on_sent(uint64_t seq, double send_ms /* sender clock */) override {
    cubic_.on_sent(seq, send_ms);
  }
  void on_ack(uint64_t seq, double send_ms, double recv_ms, double ack_ms) override {
    // send_ms, ack_ms: sender clock; recv_ms: receiver clock.
    cubic_.on_ack(seq, send_ms, recv_ms, ack_ms);
    const double rtt_ms = ack_ms - send_ms;
    if (!(rtt_ms >= 0)) return;
    min_rtt_ms_ = std::min(min_rtt_ms_, rtt_ms);
    const double target_ms = alpha_ * min_rtt_ms_;
    const double interval_ms = min_rtt_ms_;
    // HyStart's delay test, as Linux's CUBIC under the authors' C2TCP has it: an RTT
    // above the minimum by min_rtt/8 (4 to 16 ms) ends the first slow start.
    const double eta_ms = std::clamp(min_rtt_ms_ / 8, kHystartMinEtaMs, kHystartMaxEtaMs);
    if (cubic_.window_size() >= kHystartLowWindow && rtt_ms > min_rtt_ms_ + eta_ms) {
      cubic_.end_first_slow_start();
    }
    if (rtt_ms < target_ms) {
      above_ = false;
      drops_ = 1;
    } else if (!above_) {
      above_ = true;
      next_check_ms_ = ack_ms + interval_ms;
    } else if (ack_ms > next_check_ms_) {
      next_check_ms_ = ack_ms + interval_ms / std::sqrt(drops_);
      drops_ += 1;
      cubic_.restart_from_one();
    }
  }
  double timeout_ms() override { return cubic_.timeout_ms(); }
  void on_timeout(double now_ms /* sender clock */) override { cubic_.on_timeout(now_ms); }
  std::string name() const override { return "c2tcp"; }

 private:
  double alpha_;
  Cubic cubic_;
  double min_rtt_ms_ = std::numeric_limits<double>::infinity();
  bool above_ = false;        // the RTT has been above the target since next_check_ms_ was set
  double next_check_ms_ = 0;  // sender clock
  double drops_ = 1;          // CoDel's count: drops since the last good condition, plus 1
};

std::unique_ptr<Controller> make(const Params& params, uint64_t) {
  return std::make_unique<C2tcp>(param(params, "alpha"), param(params, "c"),
                                 param(params, "beta"), param(params, "linux_rto") != 0);
}

}  // namespace

SchemeEntry c2tcp_scheme() {
  return {{"c2tcp",
           "C2TCP: CUBIC under a delay target (alpha x min RTT); a whole interval above it "
           "sets the window to 1",
           {{"alpha", 2, "delay target as a multiple of the min RTT", above(1)},
            {"c", 0.4, "the underlying CUBIC's scaling constant (packets / s^3)", above(0)},
            {"beta", 0.7, "the underlying CUBIC's decrease factor on a loss event",
             in_open(0, 1)},
            {"linux_rto", 1, "1: the underlying CUBIC's timeouts are Linux's; 0: RFC 6298's",
             in_closed(0, 1)}}},
          &make};
}

}  // namespace ccgym::schemes
