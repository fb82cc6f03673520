// sprout: Sprout (Winstein, Sivaraman & Balakrishnan, NSDI 2013), simplified.
// The link's delivery rate lambda is a random walk (Brownian, `sigma` packets/s
// per sqrt(s)) that can stick at 0 (an outage) and leaves it at rate `escape`.
// The sender keeps a belief over lambda in kBins bins from 0 to max_mbps, and
// every tick (tick_ms, receiver clock) evolves it by the random walk and weighs
// it by the likelihood of the packets delivered in that tick (Poisson). It then
// forecasts, cautiously, how many packets the link will deliver over the next
// horizon_ms: the `quantile` (5%) of the belief evolved to each future tick,
// summed. The window lets that many packets wait in the queue, plus what the
// same cautious rate keeps in the pipe over the minimum RTT: a queue the link is
// expected to drain within horizon_ms even if the rate drops.
//
// How deliveries are observed from the sender: the ACKs' receiver timestamps
// count the deliveries per tick. A tick is an exact observation only if the
// bottleneck had our packets waiting throughout it (a packet that could have
// reached the receiver by then was still undelivered at the tick's start and
// end); otherwise the count only says lambda was at least that high (a
// censored observation), or nothing when the count is 0. This stands in for
// Sprout's "time-to-next" field, which told its receiver when the sender idled.
//
// The Controller interface has no clock tick: ticks are closed lazily when
// on_ack (by recv_ms) or on_sent/on_timeout (by the sender clock mapped onto the
// receiver's with the latest ACK's offset) bring a newer time, so an outage
// shows once the sender's timeout fires or ACKs come back.
// Simplified: the forecast sums per-tick rate quantiles instead of taking the
// quantile of the cumulative delivery count (Sprout precomputes that table);
// no Poisson noise term beyond the rate's uncertainty. All arrays are sized in
// the constructor: nothing is allocated per packet once the Ring has grown.
#include <array>
#include <vector>

#include "common/cpp/ring.hh"
#include "policies/cpp/schemes/schemes.hh"

namespace ccgym::schemes {
namespace {

constexpr std::size_t kBins = 256;
// The diffusion kernel reaches this many standard deviations before it is cut.
constexpr double kKernelSigmas = 4;

class Sprout final : public Controller {
 public:
  Sprout(double sigma, double escape, double max_mbps, double tick_ms, double horizon_ms,
         double quantile)
      : tick_ms_(tick_ms),
        horizon_ticks_(std::max(1, static_cast<int>(std::lround(horizon_ms / tick_ms)))),
        quantile_(quantile),
        bin_rate_(mbps_to_packets_per_ms(max_mbps) / static_cast<double>(kBins - 1)),
        stay_in_outage_(std::exp(-escape * tick_ms / 1000)) {
    // One tick of the random walk, in bins: sigma (packets/s/sqrt(s)) x sqrt(tick).
    const double step_bins = sigma * std::sqrt(tick_ms / 1000) / 1000 / bin_rate_;
    const int half = std::max(1, static_cast<int>(std::ceil(kKernelSigmas * step_bins)));
    kernel_.assign(static_cast<std::size_t>(2 * half + 1), 0);
    double sum = 0;
    for (int d = -half; d <= half; ++d) {
      const double z = step_bins > 0 ? d / step_bins : 0;
      const double w = step_bins > 0 ? std::exp(-0.5 * z * z) : (d == 0 ? 1 : 0);
      kernel_[static_cast<std::size_t>(d + half)] = w;
      sum += w;
    }
    for (double& w : kernel_) w /= sum;
    // Leaving an outage: the escaping mass lands on the positive half of the kernel.
    escape_.assign(static_cast<std::size_t>(half), 0);
    double escape_sum = 0;
    for (int d = 1; d <= half; ++d) escape_sum += kernel_[static_cast<std::size_t>(d + half)];
    for (int d = 1; d <= half; ++d) {
      escape_[static_cast<std::size_t>(d - 1)] =
          escape_sum > 0 ? kernel_[static_cast<std::size_t>(d + half)] / escape_sum
                         : (d == 1 ? 1 : 0);
    }
    belief_.fill(1.0 / kBins);
    forecast();
  }

  double window_size() override { return window_; }

  void on_sent(uint64_t seq, double send_ms /* sender clock */) override {
    sent_.push_back(SentPacket{seq, send_ms});
    advance_to_sender_time(send_ms);
  }

  void on_ack(uint64_t seq, double send_ms, double recv_ms, double ack_ms) override {
    // send_ms, ack_ms: sender clock; recv_ms: receiver clock.
    rtt_.add(ack_ms - send_ms);
    owd_min_ms_ = std::min(owd_min_ms_, recv_ms - send_ms);
    recv_minus_ack_ms_ = recv_ms - ack_ms;
    while (!sent_.empty() && sent_.front().seq < seq) sent_.pop_front();  // lost
    if (!ticking_) {
      ticking_ = true;
      tick_end_ms_ = recv_ms + tick_ms_;
    }
    // This ACK's packet is the first one delivered after every tick it closes.
    close_ticks_until(recv_ms);
    if (!sent_.empty() && sent_.front().seq == seq) sent_.pop_front();
    ++tick_count_;
  }

  double timeout_ms() override { return rtt_.rto(); }
  void on_timeout(double now_ms /* sender clock */) override { advance_to_sender_time(now_ms); }
  std::string name() const override { return "sprout"; }

 private:
  struct SentPacket {
    uint64_t seq;
    double send_ms;  // sender clock
  };

  // Closes every tick whose deliveries the ACKs would have reported by now.
  void advance_to_sender_time(double now_ms /* sender clock */) {
    if (ticking_) close_ticks_until(now_ms + recv_minus_ack_ms_);
  }

  // Closes the ticks that end at or before recv_ms (receiver clock).
  void close_ticks_until(double recv_ms) {
    if (recv_ms < tick_end_ms_) return;
    for (int closed = 0; recv_ms >= tick_end_ms_; ++closed) {
      if (closed == kMaxCatchUpTicks) {
        // The belief has long reached what that many empty ticks make of it.
        tick_end_ms_ += tick_ms_ * std::floor((recv_ms - tick_end_ms_) / tick_ms_ + 1);
        break;
      }
      const bool waiting = !sent_.empty() && sent_.front().send_ms + owd_min_ms_ <= tick_end_ms_;
      close_tick(waiting);
    }
    forecast();
  }

  void close_tick(bool waiting_at_end) {
    evolve(belief_, scratch_);
    const bool exact = waiting_at_start_ && waiting_at_end;
    if (exact || tick_count_ > 0) {
      observe(tick_count_, exact);
    } else {
      normalize();  // evolve() drops negligible masses; keep the total at 1
    }
    waiting_at_start_ = waiting_at_end;
    tick_count_ = 0;
    tick_end_ms_ += tick_ms_;
  }

  // One tick of the random walk with the sticky outage at lambda = 0.
  void evolve(std::array<double, kBins>& b, std::array<double, kBins>& tmp) const {
    tmp.fill(0);
    const int half = static_cast<int>(escape_.size());
    const int last = static_cast<int>(kBins) - 1;
    tmp[0] += b[0] * stay_in_outage_;
    const double escaping = b[0] * (1 - stay_in_outage_);
    for (int d = 1; d <= half; ++d) {
      const double share = escape_[static_cast<std::size_t>(d - 1)];
      tmp[static_cast<std::size_t>(std::min(d, last))] += escaping * share;
    }
    for (int i = 1; i <= last; ++i) {
      const double mass = b[static_cast<std::size_t>(i)];
      if (mass < kNegligible) continue;
      for (int d = -half; d <= half; ++d) {
        const int j = std::clamp(i + d, 0, last);  // below 0 is an outage; the top is a wall
        tmp[static_cast<std::size_t>(j)] += mass * kernel_[static_cast<std::size_t>(d + half)];
      }
    }
    b = tmp;
  }

  // Weighs the belief by the likelihood of `count` deliveries in one tick:
  // exactly count (the queue never ran dry) or at least count.
  void observe(double count, bool exact) {
    double max_log = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < kBins; ++i) {
      const double mu = static_cast<double>(i) * bin_rate_ * tick_ms_;
      log_like_[i] = exact ? log_poisson(count, mu) : log_poisson_tail(count, mu);
      max_log = std::max(max_log, log_like_[i]);
    }
    // No rate in range explains the count (beyond max_mbps): keep the prior.
    if (!std::isfinite(max_log)) return;
    for (std::size_t i = 0; i < kBins; ++i) belief_[i] *= std::exp(log_like_[i] - max_log);
    normalize();
  }

  void normalize() {
    double sum = 0;
    for (double p : belief_) sum += p;
    if (!(sum > 0) || !std::isfinite(sum)) {
      belief_.fill(1.0 / kBins);
      return;
    }
    for (double& p : belief_) p /= sum;
  }

  // log P(K = k) for K ~ Poisson(mu), without the log k! that is the same for every bin.
  static double log_poisson(double k, double mu) {
    if (mu <= 0) return k == 0 ? 0 : -std::numeric_limits<double>::infinity();
    return k * std::log(mu) - mu;
  }

  // log P(K >= k) for K ~ Poisson(mu).
  static double log_poisson_tail(double k, double mu) {
    if (k <= 0) return 0;
    if (mu <= 0) return -std::numeric_limits<double>::infinity();
    const double log_mu = std::log(mu);
    if (k <= mu) {
      // The tail is large: 1 - P(K < k), summing the pmf upward.
      double log_term = -mu;
      double cdf = 0;
      for (double j = 0; j < k; ++j) {
        cdf += std::exp(log_term);
        log_term += log_mu - std::log(j + 1);
      }
      return std::log(std::max(1 - cdf, std::numeric_limits<double>::min()));
    }
    // The tail is small: sum its terms, which fall geometrically past the mode.
    const double log_first = -mu + k * log_mu - std::lgamma(k + 1);
    double sum = 0;
    double ratio = 1;
    for (double j = k + 1; ratio > 1e-12 * sum || sum == 0; ++j) {
      sum += ratio;
      ratio *= mu / j;
    }
    return log_first + std::log(sum);
  }

  double quantile_rate(const std::array<double, kBins>& b) const {
    double cumulative = 0;
    for (std::size_t i = 0; i < kBins; ++i) {
      cumulative += b[i];
      if (cumulative >= quantile_) return static_cast<double>(i) * bin_rate_;
    }
    return static_cast<double>(kBins - 1) * bin_rate_;
  }

  void forecast() {
    forecast_belief_ = belief_;
    const double rate_now = quantile_rate(forecast_belief_);
    double deliveries = 0;
    for (int h = 0; h < horizon_ticks_; ++h) {
      evolve(forecast_belief_, scratch_);
      deliveries += quantile_rate(forecast_belief_) * tick_ms_;
    }
    const double pipe = std::isfinite(rtt_.min()) ? rate_now * rtt_.min() : 0;
    window_ = clamp_window(deliveries + pipe);
  }

  // Below this a bin's mass is not spread: it saves most of the work on a peaked belief.
  static constexpr double kNegligible = 1e-15;
  // After an idle or dead stretch, at most this many ticks are replayed one by one.
  static constexpr int kMaxCatchUpTicks = 1000;

  double tick_ms_;
  int horizon_ticks_;
  double quantile_;
  double bin_rate_;  // packets per ms between adjacent bins
  double stay_in_outage_;
  std::vector<double> kernel_;  // offsets -half..half
  std::vector<double> escape_;  // offsets 1..half
  std::array<double, kBins> belief_{};
  std::array<double, kBins> scratch_{};
  std::array<double, kBins> forecast_belief_{};
  std::array<double, kBins> log_like_{};
  double window_ = kInitialWindow;

  bool ticking_ = false;
  double tick_end_ms_ = 0;  // receiver clock
  double tick_count_ = 0;
  bool waiting_at_start_ = false;
  double owd_min_ms_ = std::numeric_limits<double>::infinity();  // receiver minus sender clock
  double recv_minus_ack_ms_ = 0;  // receiver clock minus sender clock at the latest ACK
  Ring<SentPacket> sent_{1024};
  RttEstimator rtt_;
};

std::unique_ptr<Controller> make(const Params& params, uint64_t) {
  const double sigma = param(params, "sigma");
  const double escape = param(params, "escape");
  const double max_mbps = param(params, "max_mbps");
  const double tick = param(params, "tick_ms");
  const double horizon = param(params, "horizon_ms");
  const double quantile = param(params, "quantile");
  check_param(horizon >= tick, "sprout", "horizon_ms", ">= tick_ms", horizon);
  return std::make_unique<Sprout>(sigma, escape, max_mbps, tick, horizon, quantile);
}

}  // namespace

SchemeEntry sprout_scheme() {
  return {{"sprout",
           "Sprout: Bayesian forecast of a random-walk link rate; queue what drains in horizon_ms",
           {{"sigma", 200, "random-walk volatility of the link rate (packets/s per sqrt(s))",
             at_least(0)},
            {"escape", 1, "rate (1/s) at which an outage (rate 0) ends", at_least(0)},
            {"max_mbps", 48, "highest link rate the belief covers (Mbit/s, 256 bins)",
             in_left_open(0, 10000)},
            {"tick_ms", 20, "receiver-clock tick (ms) between belief updates", above(0)},
            {"horizon_ms", 100, "forecast horizon (ms): the queueing delay it aims at", above(0)},
            {"quantile", 0.05, "forecast quantile: lower is more cautious", in_open(0, 1)}}},
          &make};
}

}  // namespace ccgym::schemes
