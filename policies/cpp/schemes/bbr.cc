// bbr: BBR v1 (Cardwell et al. 2016; Linux's tcp_bbr.c as the reference for the
// details). It models the path by two numbers: btlbw, the windowed maximum of
// delivery-rate samples over the last 10 round trips (in three samples, as the kernel
// keeps it), and rtprop, the windowed minimum RTT over 10 s. It paces at pacing_gain x
// btlbw and caps the window at cwnd_gain x btlbw x rtprop (cwnd_gain 2). Modes: STARTUP
// (gains 2/ln 2) until btlbw stops growing by 25% for 3 rounds; DRAIN (pacing gain
// ln 2 / 2) until in-flight falls to one BDP; PROBE_BW cycling pacing gains
// [1.25, 0.75, 1, 1, 1, 1, 1, 1], one phase per rtprop, from a random phase
// other than 0.75; PROBE_RTT when rtprop is 10 s old: window 4 for 200 ms and a
// round trip, then back.
//
// Delivery-rate samples (Cheng & Cardwell's draft): each datagram remembers, when
// it leaves, how much had been delivered and when; its ACK gives
// delivered-since / max(send interval, ACK interval). Those records live in a
// Ring in seq order, pushed in on_sent and popped as ACKs (or gaps) pass them.
// The window adds what Linux adds on top of cwnd_gain x BDP (tcp_bbr.c), each a
// parameter, 0 turning it off: extra_acked, the most data ACKed beyond btlbw x the
// time since an aggregation epoch began (the largest over 5 to 10 rounds, capped at
// extra_acked_max_ms of btlbw and at the window), so that bursts of ACKs (delayed
// ACKs, a late receiver, a wireless link) do not leave the sender window-limited; and
// the quantization budget, 3 send quanta (quantum_ms of the pacing rate, at least 2
// packets: the kernel's TSO burst) rounded up to an even count, +2 while probing up. The
// same budget is on the in-flight that ends a probe (or a first loss does) and a drain.
// Each paced send is such a quantum, back to back (send_quantum_packets), as the kernel
// sends one TSO/GSO skb per pacing slot: through the link shell kernel bbr sends 98% of
// its packets in pairs at 12 Mbit/s and 85% in threes and fours at 48 (docs/results.md).
// The pacing rate is pacing_margin below the gain x btlbw, as the kernel's; until the first
// RTT (the kernel's handshake gives it before any data) bbr is window-limited only.
// PROBE_RTT marks the flow application-limited, as tcp_bbr.c does: its low samples do
// not enter the max filter. Simplified: no other app-limited marking (a bulk sender
// never runs out of data), no idle restart; timeouts change nothing; the sender does
// not retransmit.
#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include "common/cpp/ring.hh"
#include "common/cpp/splitmix.hh"
#include "policies/cpp/schemes/schemes.hh"
#include "policies/cpp/schemes/windowed_max.hh"

namespace ccgym::schemes {
namespace {

// 2/ln 2: the smallest gain that doubles the delivery rate each round in startup.
constexpr double kHighGain = 2.885;
constexpr std::array<double, 8> kCycleGains = {1.25, 0.75, 1, 1, 1, 1, 1, 1};
constexpr int kDrainPhase = 1;
constexpr uint64_t kBtlBwRounds = 10;
constexpr double kRtpropWindowMs = 10000;
constexpr double kProbeRttMs = 200;
constexpr double kMinCwnd = 4;  // BBR's floor: enough for delayed ACKs to keep flowing
constexpr double kFullBwGrowth = 1.25;
constexpr int kFullBwRounds = 3;
constexpr uint64_t kExtraAckedWindowRounds = 5;  // each of the two extra_acked slots
constexpr double kMinQuantumPackets = 2;         // the kernel's smallest TSO burst
constexpr double kQuantumBudgetQuanta = 3;       // tcp_bbr.c's quantization budget
constexpr uint64_t kLongTermMinRounds = 4;       // a long-term interval: 4 to 16 rounds
constexpr double kLongTermLossRate = 50.0 / 256; // lost / delivered that ends an interval
constexpr double kLongTermSameRate = 4000.0 / kDataPacketBytes / 1000;  // 4 kB/s, packets/ms
constexpr uint64_t kLongTermUseRounds = 48;      // rounds the long-term bandwidth stands

// How the window's headroom is modelled on the kernel's (see the file's comment).
struct KernelHeadroom {
  double extra_acked_gain;
  double extra_acked_max_ms;
  double quantum_ms;
  double pacing_margin;
  double host_stalls_per_s;
  double host_stall_ms;
  bool recovery;        // tcp_bbr.c's window in loss recovery
  bool long_term_bw;    // tcp_bbr.c's long-term bandwidth (policer) estimate
};

class Bbr final : public Controller {
 public:
  Bbr(double cwnd_gain, KernelHeadroom headroom, uint64_t seed)
      : cwnd_gain_(cwnd_gain),
        headroom_(headroom),
        rng_(seed),
        noise_state_(splitmix64_mix(seed)) {}

  double window_size() override { return cwnd_; }
  double pacing_rate_mbps() override { return packets_per_ms_to_mbps(pacing_rate_); }
  double send_quantum_packets() override {
    return headroom_.quantum_ms > 0 ? send_quantum() : 1;
  }

  void on_sent(uint64_t seq, double send_ms /* sender clock */) override {
    // Nothing in flight: the next sample's intervals start now, not at an old ACK.
    if (sent_.empty()) {
      first_sent_ms_ = send_ms;
      delivered_ms_ = send_ms;
    }
    sent_.push_back(
        SentRecord{seq, delivered_, delivered_ms_, first_sent_ms_, send_ms, app_limited_until_ > 0});
    highest_sent_seq_ = seq;
  }

  void on_ack(uint64_t seq, double send_ms, double /*recv_ms: receiver clock*/,
              double ack_ms) override {
    // send_ms, ack_ms: sender clock.
    ack_ms = noisy_ack_ms(ack_ms);
    now_ms_ = ack_ms;
    double losses = 0;
    while (!sent_.empty() && sent_.front().seq < seq) {  // lost
      sent_.pop_front();
      losses += 1;
    }
    lost_ += losses;
    bool have_record = false;
    SentRecord rec{};
    if (!sent_.empty() && sent_.front().seq == seq) {
      rec = sent_.front();
      sent_.pop_front();
      have_record = true;
    }
    delivered_ += 1;
    delivered_ms_ = ack_ms;
    if (app_limited_until_ > 0 && delivered_ > app_limited_until_) app_limited_until_ = 0;

    const double rtt_ms = ack_ms - send_ms;
    rtt_.add(rtt_ms);
    // tcp_bbr.c's bbr_init_pacing_rate_from_rtt: the first RTT sets the pacing rate to the
    // high gain x the initial window per RTT. Startup then only raises it, so the first
    // delivery-rate samples (a packet or two over a round trip) cannot slow the next round.
    if (!have_rtprop_ && rtt_ms > 0) {
      pacing_rate_ = std::max(
          pacing_rate_, kHighGain * kInitialWindow / rtt_ms * (1 - headroom_.pacing_margin));
    }
    const bool rtprop_expired = have_rtprop_ && ack_ms > rtprop_stamp_ms_ + kRtpropWindowMs;
    if (rtt_ms >= 0 && (!have_rtprop_ || rtt_ms <= rtprop_ms_ || rtprop_expired)) {
      rtprop_ms_ = rtt_ms;
      rtprop_stamp_ms_ = ack_ms;
      have_rtprop_ = true;
    }

    bool round_start = false;
    if (have_record) {
      first_sent_ms_ = rec.send_ms;
      if (rec.delivered >= next_round_delivered_) {
        next_round_delivered_ = delivered_;
        ++round_count_;
        round_start = true;
        packet_conservation_ = false;  // it lasts the first round of a recovery
      }
      const double send_elapsed = rec.send_ms - rec.first_sent_ms;
      const double ack_elapsed = ack_ms - rec.delivered_ms;
      const double interval = std::max(send_elapsed, ack_elapsed);
      // Shorter than a round trip, a sample measures ACK compression, not the link.
      if (interval > 0 && (!have_rtprop_ || interval >= rtprop_ms_)) {
        const double rate = (delivered_ - rec.delivered) / interval;
        // A sample of a packet sent while the sender held back (PROBE_RTT) only counts if
        // it is a new maximum, as tcp_bbr.c's: otherwise a PROBE_RTT of more than 10 round
        // trips (200 ms at a 20 ms RTT) would age the estimate out and leave the flow at a
        // window of 4 packets' rate.
        if (!rec.app_limited || rate >= btlbw()) btlbw_filter_.add(round_count_, rate);
      }
      if (headroom_.long_term_bw) sample_long_term_bw(round_start, losses > 0, ack_ms);
      update_ack_aggregation(round_start, ack_ms);
    }

    const double in_flight = static_cast<double>(sent_.size());
    update_mode(round_start, rtprop_expired, in_flight, losses > 0);
    if (!headroom_.recovery || !window_in_recovery(seq, losses, in_flight)) update_cwnd();
    if (mode_ == Mode::kProbeRtt) cwnd_ = std::min(cwnd_, kMinCwnd);
    update_pacing();
  }

  void on_timeout(double now_ms /* sender clock */) override { now_ms_ = now_ms; }
  double timeout_ms() override { return rtt_.rto(); }
  std::string name() const override { return "bbr"; }

 private:
  enum class Mode { kStartup, kDrain, kProbeBw, kProbeRtt };

  struct SentRecord {
    uint64_t seq;
    double delivered;      // packets delivered when it left
    double delivered_ms;   // sender clock: when the last of those was acknowledged
    double first_sent_ms;  // sender clock: send time of the packet most recently acked then
    double send_ms;        // sender clock
    bool app_limited;      // sent while the sender held back (tcp_rate.c's is_app_limited)
  };

  // When the host's stack takes the ACK in. The host stalls now and then (host_stalls_per_s,
  // a Poisson process; each stall exponential with mean host_stall_ms); an ACK that comes
  // during a stall is taken in at its end, with every other that waited, as one batch.
  double noisy_ack_ms(double ack_ms) {
    if (headroom_.host_stalls_per_s <= 0 || headroom_.host_stall_ms <= 0) return ack_ms;
    if (ack_ms >= stall_end_ms_) {
      const double since_ms = std::max(0.0, ack_ms - last_ack_ms_);
      const double p_stall = 1 - std::exp(-headroom_.host_stalls_per_s * since_ms / 1000);
      if (splitmix64_uniform(noise_state_) < p_stall) {
        const double start_ms = last_ack_ms_ + since_ms * splitmix64_uniform(noise_state_);
        const double length_ms =
            -headroom_.host_stall_ms * std::log1p(-splitmix64_uniform(noise_state_));
        stall_end_ms_ = start_ms + length_ms;
      }
    }
    last_ack_ms_ = ack_ms;
    return std::max(ack_ms, stall_end_ms_);
  }

  // The bandwidth the model uses: the long-term estimate while it stands, else btlbw.
  double btlbw() const { return btlbw_filter_.value(); }  // packets per ms
  double bw() const { return long_term_in_use_ ? long_term_bw_ : btlbw(); }

  // tcp_bbr.c's bbr_set_cwnd_to_recover_or_restore. Recovery (as TCP's: from a loss until the
  // ACK of what was sent then) takes each loss off the window, holds the window at what is in
  // flight for its first round (packet conservation), and restores it when it ends. True while
  // the window is conservation's, not the model's.
  bool window_in_recovery(uint64_t seq, double losses, double in_flight) {
    double cwnd = cwnd_;
    if (losses > 0) cwnd = std::max(cwnd - losses, 1.0);
    if (!in_recovery_ && losses > 0) {
      in_recovery_ = true;
      recovery_end_seq_ = highest_sent_seq_;
      prior_cwnd_ = mode_ == Mode::kProbeRtt ? std::max(prior_cwnd_, cwnd_) : cwnd_;
      packet_conservation_ = true;
      next_round_delivered_ = delivered_;  // the conservation round starts now
      cwnd = in_flight + 1;
    } else if (in_recovery_ && seq >= recovery_end_seq_) {
      in_recovery_ = false;
      packet_conservation_ = false;
      cwnd = std::max(cwnd, prior_cwnd_);
    }
    cwnd_ = cwnd;
    if (!packet_conservation_) return false;
    cwnd_ = clamp_window(std::max(cwnd_, in_flight + 1));
    return true;
  }

  // tcp_bbr.c's bbr_lt_bw_sampling: two intervals of 4-16 rounds, each ending at a loss with
  // at least 20% lost, whose delivery rates agree within 1/8 mean a policer; their mean is
  // then the bandwidth, at pacing gain 1, for 48 rounds of PROBE_BW.
  void sample_long_term_bw(bool round_start, bool lost, double ack_ms /* sender clock */) {
    if (long_term_in_use_) {
      if (mode_ == Mode::kProbeBw && round_start && ++long_term_rounds_ >= kLongTermUseRounds) {
        reset_long_term_bw();
        enter_probe_bw();
      }
      return;
    }
    if (!long_term_sampling_) {
      if (!lost) return;  // a policer's tokens run out at the first loss: start there
      start_long_term_interval(ack_ms);
      long_term_sampling_ = true;
    }
    if (round_start) ++long_term_rounds_;
    if (long_term_rounds_ < kLongTermMinRounds) return;
    if (long_term_rounds_ > 4 * kLongTermMinRounds) {
      reset_long_term_bw();
      return;
    }
    if (!lost) return;
    const double lost_in = lost_ - long_term_lost_;
    const double delivered_in = delivered_ - long_term_delivered_;
    if (delivered_in <= 0 || lost_in < kLongTermLossRate * delivered_in) return;
    const double elapsed_ms = ack_ms - long_term_stamp_ms_;
    if (elapsed_ms < 1) return;
    const double rate = delivered_in / elapsed_ms;
    if (long_term_bw_ > 0 && (std::abs(rate - long_term_bw_) <= long_term_bw_ / 8 ||
                              std::abs(rate - long_term_bw_) <= kLongTermSameRate)) {
      long_term_bw_ = (rate + long_term_bw_) / 2;
      long_term_in_use_ = true;
      if (mode_ == Mode::kProbeBw) pacing_gain_ = 1;
      long_term_rounds_ = 0;
      return;
    }
    long_term_bw_ = rate;
    start_long_term_interval(ack_ms);
  }

  void start_long_term_interval(double ack_ms) {
    long_term_stamp_ms_ = ack_ms;
    long_term_delivered_ = delivered_;
    long_term_lost_ = lost_;
    long_term_rounds_ = 0;
  }

  void reset_long_term_bw() {
    long_term_bw_ = 0;
    long_term_in_use_ = false;
    long_term_sampling_ = false;
    start_long_term_interval(now_ms_);
  }

  // tcp_bbr.c's bbr_update_ack_aggregation, one packet per ACK.
  void update_ack_aggregation(bool round_start, double ack_ms /* sender clock */) {
    if (round_start && ++extra_acked_rounds_ >= kExtraAckedWindowRounds) {
      extra_acked_rounds_ = 0;
      extra_acked_slot_ ^= 1;
      extra_acked_[extra_acked_slot_] = 0;
    }
    double expected = bw() * (ack_ms - ack_epoch_ms_);
    // ACKs at or below the modelled rate: a new epoch starts here.
    if (ack_epoch_acked_ <= expected) {
      ack_epoch_acked_ = 0;
      ack_epoch_ms_ = ack_ms;
      expected = 0;
    }
    ack_epoch_acked_ += 1;
    const double extra = std::min(ack_epoch_acked_ - expected, cwnd_);
    extra_acked_[extra_acked_slot_] = std::max(extra_acked_[extra_acked_slot_], extra);
  }

  double aggregation_headroom() const {
    if (!filled_pipe_) return 0;
    const double extra = std::max(extra_acked_[0], extra_acked_[1]);
    return std::min(headroom_.extra_acked_gain * extra, bw() * headroom_.extra_acked_max_ms);
  }

  // tcp_bbr.c's bbr_quantization_budget, with a send quantum of quantum_ms at the pacing rate.
  double quantization_budget(double cwnd) const {
    if (headroom_.quantum_ms <= 0) return cwnd;
    cwnd += kQuantumBudgetQuanta * send_quantum();
    cwnd = 2 * std::ceil(cwnd / 2);
    if (mode_ == Mode::kProbeBw && pacing_gain_ > 1) cwnd += 2;
    return cwnd;
  }

  // The kernel's send quantum (tcp_tso_autosize with bbr_min_tso_segs): quantum_ms of the
  // pacing rate in whole packets, at least 2.
  double send_quantum() const {
    return std::floor(std::max(kMinQuantumPackets, pacing_rate_ * headroom_.quantum_ms));
  }

  double bdp(double gain) const {
    if (!have_rtprop_ || bw() <= 0) return kInitialWindow;
    return gain * bw() * rtprop_ms_;
  }
  // tcp_bbr.c's bbr_inflight: the in-flight that ends DRAIN and PROBE_BW's phases, the BDP at
  // the gain with the quantization budget, as the window has it.
  double inflight_target(double gain) const { return quantization_budget(bdp(gain)); }

  void enter_probe_bw() {
    mode_ = Mode::kProbeBw;
    pacing_gain_ = 1;
    cwnd_gain_now_ = cwnd_gain_;
    std::uniform_int_distribution<int> pick(0, static_cast<int>(kCycleGains.size()) - 2);
    cycle_index_ = pick(rng_);
    if (cycle_index_ >= kDrainPhase) ++cycle_index_;
    pacing_gain_ = cycle_gain();
    cycle_stamp_ms_ = now_ms_;
  }

  // The gain of the cycle's phase; 1 throughout while the long-term bandwidth stands.
  double cycle_gain() const {
    return long_term_in_use_ ? 1 : kCycleGains[static_cast<std::size_t>(cycle_index_)];
  }

  void update_mode(bool round_start, bool rtprop_expired, double in_flight, bool lost) {
    if (mode_ == Mode::kStartup && round_start && !filled_pipe_) {
      if (btlbw() >= full_bw_ * kFullBwGrowth) {
        full_bw_ = btlbw();
        full_bw_count_ = 0;
      } else if (++full_bw_count_ >= kFullBwRounds) {
        filled_pipe_ = true;
      }
    }
    if (mode_ == Mode::kStartup && filled_pipe_) {
      mode_ = Mode::kDrain;
      pacing_gain_ = 1 / kHighGain;
      cwnd_gain_now_ = kHighGain;
    }
    if (mode_ == Mode::kDrain && in_flight <= inflight_target(1)) enter_probe_bw();

    if (mode_ == Mode::kProbeBw) {
      const bool full_length = now_ms_ - cycle_stamp_ms_ > rtprop_ms_;
      bool advance = full_length;
      // A probe lasts until its in-flight target is reached or a packet is lost (a buffer
      // too small to hold it); a drain until its round trip is over or in-flight is down.
      if (pacing_gain_ > 1) {
        advance = full_length && (lost || in_flight >= inflight_target(pacing_gain_));
      } else if (pacing_gain_ < 1) {
        advance = full_length || in_flight <= inflight_target(1);
      }
      if (advance) {
        cycle_index_ = (cycle_index_ + 1) % static_cast<int>(kCycleGains.size());
        pacing_gain_ = cycle_gain();
        cycle_stamp_ms_ = now_ms_;
      }
    }

    if (rtprop_expired && mode_ != Mode::kProbeRtt) {
      mode_ = Mode::kProbeRtt;
      pacing_gain_ = 1;
      cwnd_gain_now_ = 1;
      prior_cwnd_ = cwnd_;
      probe_rtt_done_ms_ = -1;
    }
    if (mode_ == Mode::kProbeRtt) {
      // tcp_bbr.c marks the connection application-limited through PROBE_RTT, up to what
      // is delivered once all now in flight is: its samples are low by design.
      app_limited_until_ = std::max(1.0, delivered_ + in_flight);
      if (probe_rtt_done_ms_ < 0 && in_flight <= kMinCwnd) {
        probe_rtt_done_ms_ = now_ms_ + kProbeRttMs;
        probe_rtt_round_done_ = false;
        next_round_delivered_ = delivered_;
      } else if (probe_rtt_done_ms_ >= 0) {
        if (round_start) probe_rtt_round_done_ = true;
        if (probe_rtt_round_done_ && now_ms_ > probe_rtt_done_ms_) {
          rtprop_stamp_ms_ = now_ms_;
          cwnd_ = std::max(cwnd_, prior_cwnd_);
          if (filled_pipe_) {
            enter_probe_bw();
          } else {
            mode_ = Mode::kStartup;
            pacing_gain_ = kHighGain;
            cwnd_gain_now_ = kHighGain;
          }
        }
      }
    }
  }

  void update_cwnd() {
    const double target =
        std::max(quantization_budget(bdp(cwnd_gain_now_) + aggregation_headroom()), kMinCwnd);
    if (filled_pipe_) {
      cwnd_ = std::min(cwnd_ + 1, target);
    } else if (cwnd_ < target || delivered_ < kInitialWindow) {
      cwnd_ += 1;
    }
    cwnd_ = clamp_window(std::max(cwnd_, kMinCwnd));
  }

  void update_pacing() {
    const double rate = pacing_gain_ * bw() * (1 - headroom_.pacing_margin);
    // Startup only raises the rate: an early low sample must not slow the ramp.
    if (filled_pipe_ || rate > pacing_rate_) pacing_rate_ = rate;
  }

  double cwnd_gain_;
  KernelHeadroom headroom_;
  std::mt19937_64 rng_;
  uint64_t noise_state_;            // the ACK noise's own stream: rng_'s draws stay as they were
  double last_ack_ms_ = 0;          // sender clock: the latest ACK as it came
  double stall_end_ms_ = 0;         // sender clock: the end of the latest stall
  Mode mode_ = Mode::kStartup;
  double pacing_gain_ = kHighGain;
  double cwnd_gain_now_ = kHighGain;
  double cwnd_ = kInitialWindow;
  double pacing_rate_ = 0;  // packets per ms; 0 until the first RTT: window-limited only
  double now_ms_ = 0;       // sender clock: the latest ACK or timeout
  RttEstimator rtt_;        // for the timeout only: BBR's own model is rtprop

  Ring<SentRecord> sent_{1024};
  double delivered_ = 0;
  double delivered_ms_ = 0;    // sender clock
  double first_sent_ms_ = 0;   // sender clock
  double app_limited_until_ = 0;  // packets delivered; 0: not application-limited

  WindowedMax btlbw_filter_{kBtlBwRounds};  // btlbw, packets per ms
  uint64_t round_count_ = 0;
  double next_round_delivered_ = 0;
  bool have_rtprop_ = false;
  double rtprop_ms_ = 0;
  double rtprop_stamp_ms_ = 0;  // sender clock

  double full_bw_ = 0;
  int full_bw_count_ = 0;
  bool filled_pipe_ = false;
  int cycle_index_ = 0;
  double cycle_stamp_ms_ = 0;  // sender clock
  double probe_rtt_done_ms_ = -1;  // sender clock; -1 until in-flight has fallen to kMinCwnd
  bool probe_rtt_round_done_ = false;
  double prior_cwnd_ = kInitialWindow;

  std::array<double, 2> extra_acked_{0, 0};  // packets, the max of each window of rounds
  int extra_acked_slot_ = 0;
  uint64_t extra_acked_rounds_ = 0;
  double ack_epoch_ms_ = 0;  // sender clock
  double ack_epoch_acked_ = 0;

  double lost_ = 0;  // packets
  uint64_t highest_sent_seq_ = 0;
  bool in_recovery_ = false;
  bool packet_conservation_ = false;
  uint64_t recovery_end_seq_ = 0;

  bool long_term_sampling_ = false;
  bool long_term_in_use_ = false;
  double long_term_bw_ = 0;  // packets per ms
  uint64_t long_term_rounds_ = 0;
  double long_term_stamp_ms_ = 0;  // sender clock
  double long_term_delivered_ = 0;
  double long_term_lost_ = 0;
};

std::unique_ptr<Controller> make(const Params& params, uint64_t seed) {
  const KernelHeadroom headroom{param(params, "extra_acked_gain"),
                                param(params, "extra_acked_max_ms"), param(params, "quantum_ms"),
                                param(params, "pacing_margin"), param(params, "host_stalls_per_s"),
                                param(params, "host_stall_ms"), param(params, "recovery") != 0,
                                param(params, "long_term_bw") != 0};
  return std::make_unique<Bbr>(param(params, "cwnd_gain"), headroom, seed);
}

}  // namespace

SchemeEntry bbr_scheme() {
  return {{"bbr",
           "BBR v1: paces at the max delivery rate, window 2 BDP, probes bandwidth and min RTT",
           {{"cwnd_gain", 2, "window in BDPs (btlbw x rtprop) outside startup and drain",
             at_least(1)},
            {"extra_acked_gain", 1,
             "window headroom for ACK aggregation, in extra_acked (Linux: 1; 0: none)",
             at_least(0)},
            {"extra_acked_max_ms", 100, "the aggregation headroom's cap, in ms of btlbw",
             at_least(0)},
            {"quantum_ms", 1,
             "send quantum in ms of the pacing rate (>= 2 packets), sent back to back at each "
             "paced send; 3 of them are headroom in the window and in the in-flight that ends a "
             "probe or a drain (Linux: 1 ms, its TSO autosizing; 0: none, packet by packet)",
             at_least(0)},
            {"pacing_margin", 0.01, "pace this fraction below gain x btlbw (Linux: 1%)",
             in_closed(0, 0.5)},
            {"host_stalls_per_s", 0,
             "the host's stalls in taking ACKs in, per second (a Poisson process; 0: none, as "
             "kernel bbr through the link shell on a quiet host; with host_stall_ms 2, 40: on "
             "one with a load of 13-17 on 2 cores)",
             in_closed(0, 1000)},
            {"host_stall_ms", 2, "a stall's mean length (exponential)", in_closed(0, 100)},
            {"recovery", 1,
             "1: Linux's window in loss recovery (each loss off, packet conservation for a "
             "round, restored after); 0: losses leave the window alone",
             in_closed(0, 1)},
            {"long_term_bw", 1,
             "1: Linux's policer estimate (two intervals of >= 20% loss at one delivery rate "
             "pin the bandwidth to it for 48 rounds); 0: none",
             in_closed(0, 1)}}},
          &make};
}

}  // namespace ccgym::schemes
