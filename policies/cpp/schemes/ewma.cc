// ewma: the contest winners' idea. The receiver's timestamps tell the rate at
// which the link delivered our packets (bytes over recv_ms gaps, so ACK-path
// jitter does not count); its EWMA times the minimum RTT is the BDP, and the
// window adds `target_queue_ms` of queue on top so that the link stays busy.
// While the window is below the BDP the measured rate is window/min RTT, so the
// window grows by (1 + target_queue_ms/min RTT) per RTT until the link is full.
// The sender paces at pacing_gain x window / min RTT: a window that jumps with
// a new rate sample would otherwise leave as one burst and overflow a shallow
// buffer that the same packets, spread over an RTT, fit in. (On a 96 Mbit/s,
// 100 ms path with a 30-packet buffer, gain 1 keeps the link full; 2 halves
// its use, unpaced leaves 8%.)
// The EWMA gain is 0.1: at 0.25, one rate sample over a cellular outage shrank
// the window so far that it never recovered (Verizon-LTE-short: 0.67 Mbit/s,
// score -5.22; at 0.1, 3.99 Mbit/s and -3.50).
// Simplified: the rate is sampled over receiver-clock intervals of at least
// `sample_ms`; the minimum RTT is the minimum ever seen; loss and timeouts are
// ignored (a rate sample spanning an outage is low, which shrinks the window).
#include "policies/cpp/schemes/schemes.hh"

namespace ccgym::schemes {
namespace {

class Ewma final : public Controller {
 public:
  Ewma(double target_queue_ms, double gain, double sample_ms, double pacing_gain)
      : target_queue_ms_(target_queue_ms), gain_(gain), sample_ms_(sample_ms),
        pacing_gain_(pacing_gain) {}

  double window_size() override { return window_; }
  double pacing_rate_mbps() override {
    if (!rtt_.have() || pacing_gain_ <= 0) return 0;
    const double rtt_ms = std::max(rtt_.min(), kMinDivisorRttMs);
    return packets_per_ms_to_mbps(pacing_gain_ * window_ / rtt_ms);
  }
  void on_ack(uint64_t, double send_ms, double recv_ms, double ack_ms) override {
    // send_ms, ack_ms: sender clock; recv_ms: receiver clock.
    rtt_.add(ack_ms - send_ms);
    if (!interval_open_) {
      interval_open_ = true;
      interval_start_ms_ = recv_ms;
      interval_packets_ = 0;
      return;
    }
    ++interval_packets_;
    const double elapsed_ms = recv_ms - interval_start_ms_;
    if (elapsed_ms < sample_ms_) return;
    const double sample = interval_packets_ / elapsed_ms;  // packets per ms
    rate_ = have_rate_ ? rate_ + gain_ * (sample - rate_) : sample;
    have_rate_ = true;
    interval_start_ms_ = recv_ms;
    interval_packets_ = 0;
    window_ = clamp_window(rate_ * (rtt_.min() + target_queue_ms_));
  }
  double timeout_ms() override { return rtt_.rto(); }
  std::string name() const override { return "ewma"; }

 private:
  double target_queue_ms_;
  double gain_;
  double sample_ms_;
  double pacing_gain_;
  double window_ = kInitialWindow;
  bool interval_open_ = false;
  double interval_start_ms_ = 0;  // receiver clock
  double interval_packets_ = 0;
  bool have_rate_ = false;
  double rate_ = 0;  // packets per ms
  RttEstimator rtt_;
};

std::unique_ptr<Controller> make(const Params& params, uint64_t) {
  const double target = param(params, "target_queue_ms");
  const double gain = param(params, "gain");
  const double sample = param(params, "sample_ms");
  const double pacing = param(params, "pacing_gain");
  check_param(pacing == 0 || pacing >= 1, "ewma", "pacing_gain", "0 (off) or >= 1", pacing);
  return std::make_unique<Ewma>(target, gain, sample, pacing);
}

}  // namespace

SchemeEntry ewma_scheme() {
  return {{"ewma",
           "contest winners' idea: window = EWMA of receive rate x (min RTT + target queue)",
           {{"target_queue_ms", 20, "queueing delay (ms) the window allows above the BDP",
             above(0)},
            {"gain", 0.1, "EWMA weight of each new receive-rate sample", in_left_open(0, 1)},
            {"sample_ms", 10, "receiver-clock interval (ms) over which one rate sample is taken",
             above(0)},
            {"pacing_gain", 1, "pace at this many windows per min RTT; 0: unpaced", at_least(0)}}},
          &make};
}

}  // namespace ccgym::schemes
