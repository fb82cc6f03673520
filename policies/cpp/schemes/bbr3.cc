// bbr3: BBR v3 (Cardwell et al., draft-ietf-ccwg-bbr; Linux's tcp_bbr v3 as the
// reference for the constants). Beside v1's model (max_bw, the max delivery rate
// over the last 2 bandwidth-probing cycles; min_rtt over 10 s) it keeps bounds on
// in-flight data learned from loss:
// - inflight_hi: the in-flight level at which a probe saw a loss rate above
//   loss_thresh (2%): set to max(in flight when the lost data left, 0.7 x the
//   target), raised while probing up without such loss (1, 2, 4, ... packets per
//   round); the window stays 15% below it (headroom) outside probing;
// - bw_lo / inflight_lo: a round with loss outside probing lowers them to
//   max(latest sample, 0.7 x them); each probe starts without them.
// States: STARTUP (pacing 2.77, window 2 BDP) until max_bw grows less than 25%
// for 3 rounds or a round loses more than 2% with at least 6 losses; DRAIN
// (pacing 0.35) until in flight is one BDP; PROBE_BW cycling DOWN (pacing 0.9,
// until in flight is below the target and the headroom), CRUISE (1.0, for a
// random 2-3 s or as many rounds as a Reno flow would take to grow one BDP,
// at most 63), REFILL (1.0, one round, bounds reset), UP (1.25, window 2.25 BDP,
// until in flight is 1.25 BDP after a min_rtt, or the loss rate is too high);
// PROBE_RTT every 5 s: window 0.5 BDP for 200 ms and a round.
// Paced at pacing_gain x min(max_bw, bw_lo) x 0.99.
// Simplified: no ECN, no app-limited marking, no extra_acked aggregation term,
// no retransmission (the sender does not retransmit); a timeout changes nothing.
#include <array>
#include <random>

#include "common/cpp/ring.hh"
#include "policies/cpp/schemes/schemes.hh"

namespace ccgym::schemes {
namespace {

constexpr double kStartupPacingGain = 2.77;  // 4 ln 2
constexpr double kStartupCwndGain = 2;
constexpr double kDrainPacingGain = 0.35;
constexpr double kDownPacingGain = 0.9;
constexpr double kUpPacingGain = 1.25;
constexpr double kUpCwndGain = 2.25;
constexpr double kPacingMargin = 0.99;
constexpr double kHeadroom = 0.15;
constexpr double kMinCwnd = 4;
constexpr double kProbeRttCwndGain = 0.5;
constexpr double kMinRttWindowMs = 10000;
constexpr double kProbeRttIntervalMs = 5000;
constexpr double kProbeRttMs = 200;
constexpr double kFullBwGrowth = 1.25;
constexpr int kFullBwRounds = 3;
constexpr double kStartupFullLosses = 6;
constexpr double kRenoRoundsMax = 63;
constexpr double kProbeWaitBaseMs = 2000;
constexpr double kProbeWaitRandMs = 1000;

struct Bbr3Params {
  double loss_thresh;
  double beta;
  double cwnd_gain;
};

class Bbr3 final : public Controller {
 public:
  Bbr3(const Bbr3Params& p, uint64_t seed) : p_(p), rng_(seed) {}

  double window_size() override { return cwnd_; }
  double pacing_rate_mbps() override { return packets_per_ms_to_mbps(pacing_rate_); }

  void on_sent(uint64_t seq, double send_ms /* sender clock */) override {
    if (sent_.empty()) {
      first_sent_ms_ = send_ms;
      delivered_ms_ = send_ms;
    }
    const double in_flight = static_cast<double>(sent_.size()) + 1;
    sent_.push_back(
        Sent{seq, delivered_, lost_, delivered_ms_, first_sent_ms_, send_ms, in_flight});
  }

  void on_ack(uint64_t seq, double send_ms, double /*recv_ms: receiver clock*/,
              double ack_ms) override {
    // send_ms, ack_ms: sender clock.
    now_ms_ = ack_ms;
    while (!sent_.empty() && sent_.front().seq < seq) {  // a gap: lost
      sent_.pop_front();
      lost_ += 1;
      round_lost_ += 1;
    }
    if (sent_.empty() || sent_.front().seq != seq) return;
    const Sent rec = sent_.front();
    sent_.pop_front();
    delivered_ += 1;
    delivered_ms_ = ack_ms;
    first_sent_ms_ = rec.send_ms;
    rtt_.add(ack_ms - send_ms);
    update_min_rtt(ack_ms - send_ms);

    const bool round_start = rec.delivered >= next_round_delivered_;
    if (round_start) {
      next_round_delivered_ = delivered_;
      ++rounds_;
      ++rounds_in_phase_;
    }
    const double interval = std::max(rec.send_ms - rec.first_sent_ms, ack_ms - rec.delivered_ms);
    const double bw = interval > 0 && interval >= min_rtt_ms_
                          ? (delivered_ - rec.delivered) / interval : 0;
    if (bw > 0) update_max_bw(bw);
    latest_bw_ = std::max(latest_bw_, bw);
    // The loss rate among what was in flight when this packet left (the draft's
    // IsInflightTooHigh).
    const double lost_since = lost_ - rec.lost;
    const bool too_high = lost_since > p_.loss_thresh * rec.in_flight;
    const double in_flight = static_cast<double>(sent_.size());

    if (too_high) on_inflight_too_high(rec.in_flight);
    if (round_start) on_round_start(in_flight);
    update_state(in_flight);
    update_control();
  }

  void on_timeout(double now_ms /* sender clock */) override { now_ms_ = now_ms; }
  double timeout_ms() override { return rtt_.rto(); }
  std::string name() const override { return "bbr3"; }

 private:
  enum class State { kStartup, kDrain, kDown, kCruise, kRefill, kUp, kProbeRtt };

  struct Sent {
    uint64_t seq;
    double delivered;      // packets delivered when it left
    double lost;           // packets lost when it left
    double delivered_ms;   // sender clock: when the last of those was acknowledged
    double first_sent_ms;  // sender clock: send time of the packet most recently acked then
    double send_ms;        // sender clock
    double in_flight;      // in flight when it left, itself included
  };

  double bw() const { return std::min(max_bw(), bw_lo_); }
  double max_bw() const { return std::max(bw_slots_[0], bw_slots_[1]); }
  double bdp(double gain) const {
    if (!std::isfinite(min_rtt_ms_) || max_bw() <= 0) return kInitialWindow;
    return gain * max_bw() * min_rtt_ms_;
  }
  bool probing() const { return state_ == State::kUp || state_ == State::kRefill; }

  void update_max_bw(double bw) { bw_slots_[cycle_ % 2] = std::max(bw_slots_[cycle_ % 2], bw); }

  void update_min_rtt(double rtt_ms) {
    if (!(rtt_ms >= 0)) return;
    // 5 s without a lower RTT: time for PROBE_RTT (update_probe_rtt), whose samples
    // then start the next 5 s.
    probe_rtt_expired_ = now_ms_ > probe_rtt_stamp_ms_ + kProbeRttIntervalMs;
    if (rtt_ms <= probe_rtt_min_ms_ || probe_rtt_expired_) {
      probe_rtt_min_ms_ = rtt_ms;
      probe_rtt_stamp_ms_ = now_ms_;
    }
    if (rtt_ms <= min_rtt_ms_ || now_ms_ > min_rtt_stamp_ms_ + kMinRttWindowMs) {
      min_rtt_ms_ = rtt_ms;
      min_rtt_stamp_ms_ = now_ms_;
    }
  }

  void on_inflight_too_high(double tx_in_flight) {
    if (state_ == State::kStartup) {
      if (round_lost_ < kStartupFullLosses) return;
      filled_pipe_ = true;
      inflight_hi_ = std::max(bdp(1), tx_in_flight);
      return;
    }
    if (!probing()) return;
    inflight_hi_ = std::max(tx_in_flight, p_.beta * target_inflight());
    if (state_ == State::kUp) start_down();
  }

  double target_inflight() const { return std::min(bdp(1), cwnd_); }

  void on_round_start(double in_flight) {
    // A round with loss outside probing: the lower bounds shrink (BBRAdaptLowerBounds).
    if (round_lost_ > 0 && !probing() && state_ != State::kStartup) {
      if (!std::isfinite(bw_lo_)) bw_lo_ = max_bw();
      if (!std::isfinite(inflight_lo_)) inflight_lo_ = cwnd_;
      bw_lo_ = std::max(latest_bw_, p_.beta * bw_lo_);
      inflight_lo_ = std::max(in_flight, p_.beta * inflight_lo_);
    }
    if (state_ == State::kUp && round_lost_ == 0 && std::isfinite(inflight_hi_)) {
      inflight_hi_ += probe_up_step_;  // no loss at this level: probe higher
      probe_up_step_ *= 2;
    }
    if (state_ == State::kStartup && !filled_pipe_) {
      if (max_bw() >= full_bw_ * kFullBwGrowth) {
        full_bw_ = max_bw();
        full_bw_rounds_ = 0;
      } else if (++full_bw_rounds_ >= kFullBwRounds) {
        filled_pipe_ = true;
      }
    }
    latest_bw_ = 0;
    round_lost_ = 0;
  }

  void update_state(double in_flight) {
    if (state_ == State::kStartup && filled_pipe_) enter(State::kDrain);
    if (state_ == State::kDrain && in_flight <= bdp(1)) start_down();
    if (state_ == State::kDown && in_flight <= down_target()) enter(State::kCruise);
    if ((state_ == State::kDown || state_ == State::kCruise) && time_to_probe()) {
      enter(State::kRefill);
      bw_lo_ = inflight_lo_ = std::numeric_limits<double>::infinity();
    }
    if (state_ == State::kRefill && rounds_in_phase_ >= 1) {
      enter(State::kUp);
      probe_up_step_ = 1;
    }
    if (state_ == State::kUp && now_ms_ - phase_start_ms_ > min_rtt_ms_ &&
        in_flight >= bdp(kUpPacingGain)) {
      start_down();
    }
    update_probe_rtt(in_flight);
  }

  double down_target() const {
    return std::min(bdp(1), (1 - kHeadroom) * inflight_hi_);
  }

  bool time_to_probe() const {
    const double reno_rounds = std::min(bdp(1), kRenoRoundsMax);
    return now_ms_ - cycle_start_ms_ >= probe_wait_ms_ ||
           static_cast<double>(rounds_ - cycle_start_round_) >= reno_rounds;
  }

  void start_down() {
    enter(State::kDown);
    ++cycle_;  // the max filter keeps this cycle's and the previous one's peak
    bw_slots_[cycle_ % 2] = 0;
    cycle_start_ms_ = now_ms_;
    cycle_start_round_ = rounds_;
    probe_wait_ms_ = kProbeWaitBaseMs + std::uniform_real_distribution<double>(
                                            0, kProbeWaitRandMs)(rng_);
  }

  void update_probe_rtt(double in_flight) {
    if (state_ != State::kProbeRtt && filled_pipe_ && probe_rtt_expired_) {
      enter(State::kProbeRtt);
      probe_rtt_done_ms_ = -1;
    }
    if (state_ != State::kProbeRtt) return;
    if (probe_rtt_done_ms_ < 0 && in_flight <= probe_rtt_cwnd()) {
      probe_rtt_done_ms_ = now_ms_ + kProbeRttMs;
      rounds_in_phase_ = 0;
    } else if (probe_rtt_done_ms_ >= 0 && rounds_in_phase_ >= 1 && now_ms_ > probe_rtt_done_ms_) {
      probe_rtt_stamp_ms_ = now_ms_;
      min_rtt_ms_ = std::min(min_rtt_ms_, probe_rtt_min_ms_);
      enter(State::kCruise);
    }
  }

  double probe_rtt_cwnd() const { return std::max(bdp(kProbeRttCwndGain), kMinCwnd); }

  void enter(State s) {
    state_ = s;
    phase_start_ms_ = now_ms_;
    rounds_in_phase_ = 0;
  }

  void update_control() {
    double pacing_gain = 1;
    double cwnd_gain = p_.cwnd_gain;
    switch (state_) {
      case State::kStartup: pacing_gain = kStartupPacingGain; cwnd_gain = kStartupCwndGain; break;
      case State::kDrain: pacing_gain = kDrainPacingGain; cwnd_gain = kStartupCwndGain; break;
      case State::kDown: pacing_gain = kDownPacingGain; break;
      case State::kUp: pacing_gain = kUpPacingGain; cwnd_gain = kUpCwndGain; break;
      default: break;
    }
    const double rate = pacing_gain * bw() * kPacingMargin;
    if (filled_pipe_ || rate > pacing_rate_) pacing_rate_ = rate;

    // Toward cwnd_gain BDPs, one packet per ACK (v1's rule); startup only grows.
    const double target = bdp(cwnd_gain);
    double cwnd = cwnd_;
    if (filled_pipe_) {
      cwnd = std::min(cwnd_ + 1, target);
    } else if (cwnd_ < target || delivered_ < kInitialWindow) {
      cwnd = cwnd_ + 1;
    }
    // The bounds learned from loss: the headroom leaves room for other flows outside probing.
    const double hi = probing() ? inflight_hi_ : (1 - kHeadroom) * inflight_hi_;
    cwnd = std::min({cwnd, hi, inflight_lo_});
    if (state_ == State::kProbeRtt) cwnd = std::min(cwnd, probe_rtt_cwnd());
    cwnd_ = clamp_window(std::max(cwnd, kMinCwnd));
  }

  Bbr3Params p_;
  std::mt19937_64 rng_;
  State state_ = State::kStartup;
  double cwnd_ = kInitialWindow;
  double pacing_rate_ = 0;  // packets per ms; 0 until the first sample: window-limited only
  double now_ms_ = 0;       // sender clock: the latest ACK or timeout
  RttEstimator rtt_;        // for the timeout only

  Ring<Sent> sent_{1024};
  double delivered_ = 0;
  double lost_ = 0;
  double delivered_ms_ = 0;   // sender clock
  double first_sent_ms_ = 0;  // sender clock

  std::array<double, 2> bw_slots_{0, 0};  // packets per ms: this cycle's and the last one's peak
  uint64_t cycle_ = 0;
  double latest_bw_ = 0;  // this round's highest sample
  double bw_lo_ = std::numeric_limits<double>::infinity();
  double inflight_lo_ = std::numeric_limits<double>::infinity();
  double inflight_hi_ = std::numeric_limits<double>::infinity();
  double probe_up_step_ = 1;

  uint64_t rounds_ = 0;
  uint64_t rounds_in_phase_ = 0;
  double next_round_delivered_ = 0;
  double round_lost_ = 0;
  double phase_start_ms_ = 0;
  double cycle_start_ms_ = 0;
  uint64_t cycle_start_round_ = 0;
  double probe_wait_ms_ = kProbeWaitBaseMs;

  double min_rtt_ms_ = std::numeric_limits<double>::infinity();
  double min_rtt_stamp_ms_ = 0;
  double probe_rtt_min_ms_ = std::numeric_limits<double>::infinity();
  double probe_rtt_stamp_ms_ = 0;
  bool probe_rtt_expired_ = false;
  double probe_rtt_done_ms_ = -1;

  double full_bw_ = 0;
  int full_bw_rounds_ = 0;
  bool filled_pipe_ = false;
};

std::unique_ptr<Controller> make(const Params& params, uint64_t seed) {
  const Bbr3Params p{param(params, "loss_thresh"), param(params, "beta"),
                     param(params, "cwnd_gain")};
  return std::make_unique<Bbr3>(p, seed);
}

}  // namespace

SchemeEntry bbr3_scheme() {
  return {{"bbr3",
           "BBR v3: BBR's model plus in-flight bounds learned from loss (inflight_hi/lo); "
           "probes in DOWN/CRUISE/REFILL/UP cycles",
           {{"loss_thresh", 0.02, "loss rate of a probe above which in flight is too high",
             in_open(0, 1)},
            {"beta", 0.7, "factor on the bounds when loss says they are too high",
             in_open(0, 1)},
            {"cwnd_gain", 2, "window in BDPs outside startup and bandwidth probing",
             at_least(1)}}},
          &make};
}

}  // namespace ccgym::schemes
