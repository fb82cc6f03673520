// ewma: the contest winners' idea. The receiver's timestamps tell the rate at
// which the link delivered our packets (bytes over recv_ms gaps, so ACK-path
// jitter does not count); its EWMA times the minimum RTT is the BDP, and the
// window adds `target_queue_ms` of queue on top so that the link stays busy.
// While the window is below the BDP the measured rate is window/min RTT, so the
// window grows by (1 + target_queue_ms/min RTT) per RTT until the link is full.
// Simplified: the rate is sampled over receiver-clock intervals of at least
// `sample_ms`; the minimum RTT is the minimum ever seen; loss and timeouts are
// ignored (a rate sample spanning an outage is low, which shrinks the window).
#include "policies/cpp/schemes/schemes.hh"

namespace ccgym::schemes {
namespace {

class Ewma final : public Controller {
 public:
  Ewma(double target_queue_ms, double gain, double sample_ms)
      : target_queue_ms_(target_queue_ms), gain_(gain), sample_ms_(sample_ms) {}

  double window_size() override { return window_; }
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
  check_param(target > 0, "ewma", "target_queue_ms", "> 0", target);
  check_param(gain > 0 && gain <= 1, "ewma", "gain", "in (0, 1]", gain);
  check_param(sample > 0, "ewma", "sample_ms", "> 0", sample);
  return std::make_unique<Ewma>(target, gain, sample);
}

}  // namespace

SchemeEntry ewma_scheme() {
  return {{"ewma",
           "window = EWMA of the receive rate x (min RTT + target queue), the contest winners' idea",
           {{"target_queue_ms", 20, "queueing delay (ms) the window allows above the BDP"},
            {"gain", 0.25, "EWMA weight of each new receive-rate sample"},
            {"sample_ms", 10, "receiver-clock interval (ms) over which one rate sample is taken"}}},
          &make};
}

}  // namespace ccgym::schemes
