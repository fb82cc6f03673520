// vivace: PCC Vivace (Dong et al., NSDI 2018), rate control by online learning.
// Time is cut into monitor intervals (MIs) of one smoothed RTT (and at least 20
// packets), each sent at one rate; when every packet of an MI is acknowledged or
// known lost, the MI's utility is
//   u(x) = x^exponent - latency_coef * x * dRTT/dT - loss_coef * x * L
// with x its sending rate (Mbit/s), dRTT/dT the slope of RTT over send time
// within the MI (a least-squares fit) and L its loss rate. Defaults are the
// paper's Vivace-Latency. As in the authors' implementation, a slope below 0.02
// (negative ones included) counts 0: noise, and a draining queue earns no reward.
// Starting: the rate doubles every MI until an MI's utility falls below its
// predecessor's; the rate goes back to that predecessor's. Then, over and over,
// a randomized controlled trial (the authors' implementation's; the paper's
// single pair moves on noise when flows probe at once): four MIs at r(1+eps),
// r(1-eps), r(1-eps), r(1+eps) or the mirror order, at random. Each pair gives a
// gradient (u+ - u-) / (r+ - r-); if their signs differ the trial is repeated at
// r, else the rate moves by m * theta * g Mbit/s, g their mean. The confidence
// amplifier m counts the consecutive moves in the same direction (1 after a turn
// or an inconclusive trial); the dynamic change boundary caps a move at omega x r,
// omega = 0.05 + 0.1 k, k growing each time a move hits the cap, falling to the
// smallest k that allows the move when it does not, and 0 after a turn. Between a
// trial's MIs and its decision (one RTT of ACKs) it sends at r.
// Paced at the MI's rate; the window (2 x rate x sRTT + 4 packets) is only a
// safety net for when ACKs stop. A timeout halves the rate and probes again.
// Known weakness, measured: on a cellular trace with an unlimited queue a startup
// that stops at twice the capacity builds a queue faster than trials (each one
// RTT long) can agree to shrink it.
#include <array>
#include <random>

#include "common/cpp/ring.hh"
#include "policies/cpp/schemes/schemes.hh"

namespace ccgym::schemes {
namespace {

constexpr double kGradientNoise = 0.02;  // dRTT/dT below this counts 0
constexpr double kMinChangeBound = 0.05;  // omega_0
constexpr double kChangeBoundStep = 0.1;  // delta
constexpr double kMinRate = 0.1 / kMbpsPerPacketPerMs;  // a floor (0.1 Mbit/s), packets per ms
constexpr double kMinMiMs = 10;           // an MI lasts at least this long,
constexpr double kMinMiPackets = 20;      // and long enough for this many (the authors')
constexpr int kTrialMis = 4;              // two pairs

struct VivaceParams {
  double exponent;
  double latency_coef;
  double loss_coef;
  double epsilon;
  double theta;
};

// One monitor interval: the packets sent in it and what their ACKs told.
struct MonitorInterval {
  uint64_t first_seq = 0;
  uint64_t last_seq = 0;
  double start_ms = 0;  // sender clock
  double end_ms = 0;
  double rate = 0;      // the rate it was meant to send at, packets per ms
  int probe = -1;       // the trial's MI: pair = probe / 2, rate up if probe % 2 == 0; -1: none
  uint64_t generation = 0;
  double sent = 0;
  double acked = 0;
  // Sums for the least-squares slope of RTT over send time.
  double n = 0, st = 0, sr = 0, stt = 0, str = 0;

  void add_rtt(double t, double rtt) {
    t -= start_ms;  // small numbers keep the sums exact enough
    n += 1;
    st += t;
    sr += rtt;
    stt += t * t;
    str += t * rtt;
  }
  double rtt_slope() const {
    const double denom = n * stt - st * st;
    return n >= 2 && denom > 0 ? (n * str - st * sr) / denom : 0;
  }
};

class Vivace final : public Controller {
 public:
  Vivace(const VivaceParams& p, uint64_t seed) : p_(p), rng_(seed) {}

  double window_size() override {
    if (rate_ <= 0) return kInitialWindow;
    return clamp_window(2 * rate_ * rtt_.srtt() + 4);
  }
  double pacing_rate_mbps() override { return packets_per_ms_to_mbps(current_.rate); }

  void on_sent(uint64_t seq, double send_ms /* sender clock */) override {
    if (rate_ <= 0) return;  // no RTT yet: the initial window goes out unpaced
    if (!open_ || send_ms >= current_.end_ms) start_mi(seq, send_ms);
    current_.last_seq = seq;
    current_.sent += 1;
  }

  void on_ack(uint64_t seq, double send_ms, double /*recv_ms: receiver clock*/,
              double ack_ms) override {
    // send_ms, ack_ms: sender clock.
    const double rtt_ms = ack_ms - send_ms;
    if (!(rtt_ms >= 0)) return;
    rtt_.add(rtt_ms);
    if (rate_ <= 0) rate_ = current_.rate = kInitialWindow / std::max(rtt_ms, kMinDivisorRttMs);
    while (!done_.empty() && done_.front().last_seq < seq) finish_front();
    if (open_ && current_.first_seq <= seq && seq <= current_.last_seq) {
      current_.acked += 1;
      current_.add_rtt(send_ms, rtt_ms);
    }
    for (std::size_t i = 0; i < done_.size(); ++i) {
      MonitorInterval& mi = done_[i];
      if (mi.first_seq <= seq && seq <= mi.last_seq) {
        mi.acked += 1;
        mi.add_rtt(send_ms, rtt_ms);
      }
    }
    if (!done_.empty() && done_.front().last_seq == seq) finish_front();
  }

  double timeout_ms() override { return rtt_.rto(); }
  void on_timeout(double /*now_ms: sender clock*/) override {
    if (rate_ <= 0) return;
    rate_ = std::max(rate_ / 2, kMinRate);
    starting_ = false;
    restart_probing();
  }
  std::string name() const override { return "vivace"; }

 private:
  void start_mi(uint64_t seq, double now_ms) {
    if (open_ && current_.sent > 0) done_.push_back(current_);
    open_ = true;
    current_ = MonitorInterval{};
    current_.first_seq = current_.last_seq = seq;
    current_.start_ms = now_ms;
    current_.end_ms = now_ms + std::max({rtt_.srtt(), kMinMiMs, kMinMiPackets / rate_});
    current_.generation = generation_;
    if (starting_) {
      if (have_start_mi_) rate_ *= 2;
      have_start_mi_ = true;
      current_.rate = rate_;
    } else if (next_probe_ < kTrialMis) {
      const int probe = probe_order_[next_probe_++];
      current_.probe = probe;
      current_.rate = rate_ * (probe % 2 == 0 ? 1 + p_.epsilon : 1 - p_.epsilon);
    } else {
      current_.rate = rate_;
    }
  }

  void finish_front() {
    const MonitorInterval mi = done_.front();
    done_.pop_front();
    if (mi.generation != generation_) return;  // sent under a decision since replaced
    const double u = utility(mi);
    if (starting_) {
      if (have_previous_ && u < previous_utility_) {
        rate_ = previous_rate_;
        starting_ = false;
        restart_probing();
      } else {
        have_previous_ = true;
        previous_rate_ = mi.rate;
        previous_utility_ = u;
      }
      return;
    }
    if (mi.probe < 0) return;
    probe_utility_[mi.probe] = u;
    probe_rate_[mi.probe] = mi.rate;
    if (++probes_done_ == kTrialMis) move();
  }

  double utility(const MonitorInterval& mi) const {
    const double duration = std::max(mi.end_ms - mi.start_ms, kMinDivisorRttMs);
    const double x = packets_per_ms_to_mbps(mi.sent / duration);
    const double loss = mi.sent > 0 ? std::max(mi.sent - mi.acked, 0.0) / mi.sent : 0;
    double slope = mi.rtt_slope();
    if (slope < kGradientNoise) slope = 0;
    return std::pow(x, p_.exponent) - p_.latency_coef * x * slope - p_.loss_coef * x * loss;
  }

  // The utility gradient of one pair of the trial, per Mbit/s.
  double pair_gradient(int pair) const {
    const int up = 2 * pair;
    const double dr = packets_per_ms_to_mbps(probe_rate_[up] - probe_rate_[up + 1]);
    return dr != 0 ? (probe_utility_[up] - probe_utility_[up + 1]) / dr : 0;
  }

  void move() {
    const double g0 = pair_gradient(0);
    const double g1 = pair_gradient(1);
    if ((g0 >= 0) != (g1 >= 0)) {  // inconclusive: probe again from scratch
      direction_ = 0;
      restart_probing();
      return;
    }
    const double gradient = (g0 + g1) / 2;
    const double r_mbps = packets_per_ms_to_mbps(rate_);
    const int direction = gradient >= 0 ? 1 : -1;
    if (direction != direction_) {
      direction_ = direction;
      amplifier_ = 1;
      bound_steps_ = 0;
    } else {
      amplifier_ += 1;
    }
    double step = amplifier_ * p_.theta * std::abs(gradient);  // Mbit/s
    const double bound = kMinChangeBound + kChangeBoundStep * bound_steps_;
    if (step > bound * r_mbps) {
      step = bound * r_mbps;
      bound_steps_ += 1;
    } else {
      const double needed = (step / std::max(r_mbps, 1e-9) - kMinChangeBound) / kChangeBoundStep;
      bound_steps_ = std::max(0.0, std::ceil(needed));
    }
    rate_ = std::max(mbps_to_packets_per_ms(r_mbps + direction * step), kMinRate);
    restart_probing();
  }

  void restart_probing() {
    ++generation_;
    next_probe_ = 0;
    probes_done_ = 0;
    // up-down-down-up or down-up-up-down: a trend over the four MIs (the link's
    // capacity falling, a queue growing) favours one rate in the first pair and the
    // other in the second, so it makes the trial inconclusive instead of moving the rate.
    const bool up_first = std::bernoulli_distribution(0.5)(rng_);
    probe_order_ = up_first ? std::array<int, kTrialMis>{0, 1, 3, 2}
                            : std::array<int, kTrialMis>{1, 0, 2, 3};
    open_ = false;  // the next packet opens the first probe
  }

  VivaceParams p_;
  std::mt19937_64 rng_;
  RttEstimator rtt_;
  double rate_ = 0;  // packets per ms; 0 until the first RTT sample
  bool starting_ = true;
  bool have_start_mi_ = false;
  bool have_previous_ = false;
  double previous_rate_ = 0;
  double previous_utility_ = 0;

  bool open_ = false;
  MonitorInterval current_;
  Ring<MonitorInterval> done_{16};  // sent, awaiting ACKs, oldest first
  uint64_t generation_ = 0;

  std::array<int, kTrialMis> probe_order_{0, 1, 2, 3};
  int next_probe_ = 0;
  int probes_done_ = 0;
  std::array<double, kTrialMis> probe_utility_{};
  std::array<double, kTrialMis> probe_rate_{};
  int direction_ = 0;
  double amplifier_ = 1;
  double bound_steps_ = 0;
};

std::unique_ptr<Controller> make(const Params& params, uint64_t seed) {
  const VivaceParams p{param(params, "exponent"), param(params, "latency_coef"),
                       param(params, "loss_coef"), param(params, "epsilon"),
                       param(params, "theta")};
  return std::make_unique<Vivace>(p, seed);
}

}  // namespace

SchemeEntry vivace_scheme() {
  return {{"vivace",
           "PCC Vivace: gradient ascent on a utility of rate, latency gradient and loss, "
           "learned online over paced monitor intervals",
           {{"latency_coef", 900, "utility's penalty per Mbit/s per unit of dRTT/dT",
             at_least(0)},
            {"loss_coef", 11.35, "utility's penalty per Mbit/s per unit of loss rate",
             at_least(0)},
            {"exponent", 0.9, "utility's exponent of the rate (concave: below 1)",
             in_open(0, 1)},
            {"epsilon", 0.05, "probing step: MIs at r(1+epsilon) and r(1-epsilon)",
             in_open(0, 0.5)},
            {"theta", 1, "Mbit/s of rate change per unit of utility gradient", above(0)}}},
          &make};
}

}  // namespace ccgym::schemes
