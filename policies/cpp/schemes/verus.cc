// verus: Verus (Zaki et al., SIGCOMM 2015), for cellular links whose rate swings.
// It learns a delay profile, the RTT seen at each sending window (an EWMA per
// window), and once per epoch (epoch_ms) moves a target delay: down by delta2 if
// the epoch's largest RTT exceeds r x the minimum RTT, down by delta1 if the
// largest RTT grew since the last epoch, up by delta2 otherwise; the target stays
// within [min RTT, r x min RTT]. The window for the next epoch is the largest
// window whose profiled delay is within the target. Slow start (+1 per ACK)
// runs until a loss or an RTT above r x min RTT. A loss event (once per RTT) or
// a timeout multiplies the window by `decrease` and sets the target to that
// window's profiled delay.
// Simplified: the profile is a table of 1-packet bins up to kProfileBins, linear
// between explored windows (the paper fits a spline) and, beyond the largest
// explored window, extrapolated as a queue would have it (delay in proportion to
// the window); the window is paced at one window per min RTT instead of being
// spread over the epoch's packets; the target is frozen for one smoothed RTT
// after a decrease (the paper's loss-recovery phase). Our addition: each lost
// packet enters the profile, at its window, as twice the largest tolerated delay;
// behind a shallow buffer the RTT saturates below r x min RTT, and without it the
// profile would lead straight back to the window that overflowed.
#include <array>

#include "common/cpp/ring.hh"
#include "policies/cpp/schemes/schemes.hh"

namespace ccgym::schemes {
namespace {

// Windows above this share the last bin; 4095 packets is 49 Mbit/s at 120 ms.
constexpr std::size_t kProfileBins = 4096;
constexpr double kProfileGain = 0.125;
// The delay a loss counts as in the profile, in units of the largest tolerated (r x min RTT).
constexpr double kLossDelayFactor = 2;

class Verus final : public Controller {
 public:
  Verus(double r, double epoch_ms, double delta1, double delta2, double decrease)
      : r_(r), epoch_ms_(epoch_ms), delta1_(delta1), delta2_(delta2), decrease_(decrease) {
    profile_.fill(0);
    known_.fill(false);
  }

  double window_size() override { return window_; }
  // Verus spreads each epoch's packets over the epoch; pacing at a window per
  // min RTT does the same without bursts when the window jumps.
  double pacing_rate_mbps() override {
    if (!rtt_.have()) return 0;
    return packets_per_ms_to_mbps(window_ / std::max(rtt_.min(), kMinDivisorRttMs));
  }
  void on_sent(uint64_t seq, double /*send_ms: sender clock*/) override {
    loss_.on_sent(seq);
    sent_.push_back(SentWindow{seq, window_});
  }
  void on_ack(uint64_t seq, double send_ms, double /*recv_ms: receiver clock*/,
              double ack_ms) override {
    // send_ms, ack_ms: sender clock.
    const double rtt_ms = ack_ms - send_ms;
    if (!(rtt_ms >= 0)) return;
    rtt_.add(rtt_ms);
    // A lost packet teaches its window a delay beyond the tolerated one: where
    // the buffer is shallow the RTT saturates and only losses say "too many".
    while (!sent_.empty() && sent_.front().seq < seq) {
      learn(sent_.front().window, kLossDelayFactor * r_ * rtt_.min());
      sent_.pop_front();
    }
    if (!sent_.empty() && sent_.front().seq == seq) {
      learn(sent_.front().window, rtt_ms);
      sent_.pop_front();
    }

    if (loss_.on_ack(seq)) {
      decrease(ack_ms);
      return;
    }
    if (slow_start_) {
      if (rtt_ms > r_ * rtt_.min()) {
        slow_start_ = false;
        target_ms_ = std::clamp(rtt_.srtt(), rtt_.min(), r_ * rtt_.min());
        epoch_end_ms_ = ack_ms + epoch_ms_;
      } else {
        window_ = clamp_window(window_ + 1);
      }
      return;
    }
    if (ack_ms >= epoch_end_ms_) {
      end_epoch(ack_ms);
      // After an idle gap the next epoch starts now, not at a long-past boundary.
      epoch_end_ms_ = std::max(epoch_end_ms_ + epoch_ms_, ack_ms);
    }
    epoch_max_rtt_ms_ = std::max(epoch_max_rtt_ms_, rtt_ms);
  }
  double timeout_ms() override { return rtt_.rto(); }
  void on_timeout(double now_ms /* sender clock */) override {
    loss_.on_timeout();
    decrease(now_ms);
  }
  std::string name() const override { return "verus"; }

 private:
  struct SentWindow {
    uint64_t seq;
    double window;
  };

  static std::size_t bin(double window) {
    return std::min(static_cast<std::size_t>(std::lround(std::max(window, 1.0))), kProfileBins - 1);
  }

  void learn(double window, double rtt_ms) {
    const std::size_t b = bin(window);
    profile_[b] = known_[b] ? profile_[b] + kProfileGain * (rtt_ms - profile_[b]) : rtt_ms;
    known_[b] = true;
    max_known_ = std::max(max_known_, b);
  }

  void decrease(double now_ms /* sender clock */) {
    window_ = clamp_window(window_ * decrease_);
    slow_start_ = false;
    const double d_min = rtt_.min();
    if (std::isfinite(d_min)) {
      // The delay the reduced window had; unexplored, the floor of the range.
      double delay = d_min;
      for (std::size_t b = bin(window_); b >= 1; --b) {
        if (known_[b]) {
          delay = profile_[b];
          break;
        }
      }
      target_ms_ = std::clamp(delay, d_min, r_ * d_min);
    }
    hold_until_ms_ = now_ms + (rtt_.have() ? rtt_.srtt() : 0);
    epoch_max_rtt_ms_ = 0;
    prev_epoch_max_rtt_ms_ = 0;
  }

  void end_epoch(double now_ms /* sender clock */) {
    const double epoch_max = epoch_max_rtt_ms_;
    epoch_max_rtt_ms_ = 0;
    if (epoch_max <= 0 || now_ms < hold_until_ms_) return;  // no ACK in it, or recovering
    const double d_min = rtt_.min();
    if (epoch_max > r_ * d_min) {
      target_ms_ -= delta2_;
    } else if (prev_epoch_max_rtt_ms_ > 0 && epoch_max > prev_epoch_max_rtt_ms_) {
      target_ms_ -= delta1_;
    } else {
      target_ms_ += delta2_;
    }
    prev_epoch_max_rtt_ms_ = epoch_max;
    target_ms_ = std::clamp(target_ms_, d_min, r_ * d_min);
    window_ = clamp_window(window_for(target_ms_));
  }

  // The largest window whose delay, on the profile made piecewise linear
  // between explored windows, is within target_ms.
  double window_for(double target_ms) const {
    double best = 0;
    std::size_t prev = 0;  // the last explored bin, 0 before the first
    for (std::size_t b = 1; b <= max_known_; ++b) {
      if (!known_[b]) continue;
      const double d = profile_[b];
      if (d <= target_ms) {
        best = static_cast<double>(b);
      } else if (prev > 0 && profile_[prev] <= target_ms) {
        const double f = (target_ms - profile_[prev]) / (d - profile_[prev]);
        best = std::max(best, static_cast<double>(prev) + f * static_cast<double>(b - prev));
      }
      prev = b;
    }
    if (best == 0) return window_ - 1;  // even the smallest explored window is too slow
    if (best == static_cast<double>(max_known_)) {
      // Beyond the profile: delay in proportion to the window, as a queue has it.
      return std::min(std::max(best + 1, best * target_ms / profile_[max_known_]),
                      static_cast<double>(kProfileBins - 1));
    }
    return best;
  }

  double r_;
  double epoch_ms_;
  double delta1_;
  double delta2_;
  double decrease_;
  double window_ = kInitialWindow;
  bool slow_start_ = true;
  double target_ms_ = 0;
  double epoch_end_ms_ = 0;        // sender clock
  double hold_until_ms_ = 0;       // sender clock
  double epoch_max_rtt_ms_ = 0;
  double prev_epoch_max_rtt_ms_ = 0;
  std::array<double, kProfileBins> profile_;
  std::array<bool, kProfileBins> known_;
  std::size_t max_known_ = 0;
  Ring<SentWindow> sent_{1024};
  RttEstimator rtt_;
  LossDetector loss_;
};

std::unique_ptr<Controller> make(const Params& params, uint64_t) {
  const double r = param(params, "r");
  const double epoch = param(params, "epoch_ms");
  const double delta1 = param(params, "delta1");
  const double delta2 = param(params, "delta2");
  const double decrease = param(params, "decrease");
  return std::make_unique<Verus>(r, epoch, delta1, delta2, decrease);
}

}  // namespace

SchemeEntry verus_scheme() {
  return {{"verus",
           "Verus: learned window->delay profile, target delay moved per epoch by the delay trend",
           {{"r", 2, "R: largest tolerated ratio of an epoch's max RTT to the min RTT", above(1)},
            {"epoch_ms", 5, "epoch (ms) between target-delay updates", above(0)},
            {"delta1", 1, "target-delay decrease (ms) when the epoch's max RTT grew", above(0)},
            {"delta2", 2, "target-delay increase (ms), and decrease when the ratio exceeds r",
             above(0)},
            {"decrease", 0.5, "factor applied to the window on a loss event or timeout",
             in_open(0, 1)}}},
          &make};
}

}  // namespace ccgym::schemes
