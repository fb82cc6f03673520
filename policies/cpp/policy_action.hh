// A learned policy's decision, applied to the window it drives: the one place that
// turns an action into a window, for the simulator, the environments, `ccgym eval`
// and the UDP sender alike.
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>

#include "common/cpp/packet.hh"
#include "policies/cpp/actions.hh"
#include "policies/cpp/controller.hh"
#include "policies/cpp/features.hh"

namespace ccgym {

// The growth ceiling (actions.hh) of a flow driven through `window`, from its features.
inline double growth_ceiling(const Features& features, const ExternalWindow& window) {
  return growth_ceiling(features.flight_packets(),
                        features.values().last_ack_ms > window.grown_at_ack_ms());
}

// When a flow with a classic underneath (ExternalWindow::compete_with) changes mode: Copa's
// switch (NSDI 2018), read from the drain test of observation version 6 (Features'
// standing_queue, 0 when the queue emptied within the last kDrainRtts smoothed RTTs).
struct CompeteRule {
  // Copa's threshold: the least RTT of the span more than a tenth of the span's range above
  // the min RTT means the queue did not nearly empty, which a flow that keeps its own queue
  // short sees only when something beside it fills the buffer.
  double standing_above = 0.1;
  // And the smoothed queueing delay at least this fraction of the min RTT: the reading is a
  // ratio, and a queue of a datagram or two that never quite empties (the packaged generalist
  // keeps 0.5 ms at 24 Mbit/s, 40 ms, read as 0.5) is the flow's own, not a buffer filler's,
  // which stands at a good part of the buffer (a BDP is a min RTT of delay).
  double queue_above_min_rtt = 0.1;
  // And more than this many of the flow's own datagrams queued (the smoothed queue at its
  // delivery rate, Features::flight_packets - pipe_packets): alone on slow short paths the
  // generalist keeps one (4 ms at 3 Mbit/s, 15 ms, 0.12 of the min RTT; with bbr underneath
  // it then sat in the mode 86-96% of the time on three held-out-grid links), while a buffer
  // filler's queue holds several of the flow's own ahead of each new one.
  double queue_above_packets = 2;
  // Unless the smoothed queue is this many times what the flow's own queued datagrams (at
  // least one) take at the link's rate (ShareMeter's packet pairs): a flow that a buffer
  // filler has starved to a datagram or two has none of its own queued, yet waits behind a
  // queue (beside bbr on 24 Mbit/s, 20 ms, 1 BDP: 34 ms at a window of 1, 0.5 ms a
  // datagram), where alone on a slow recorded link one datagram of its own is 10-30 ms.
  double foreign_queue_ratio = 4;
  // Entering waits for the queue to stand this many smoothed RTTs beyond the kDrainRtts the
  // reading already spans: a policy's own passing queue (slow start's overshoot, a cellular
  // link's rate drop) must not switch it, while a buffer filler that stays is met within a
  // second or two on paths of up to about 100 ms.
  double enter_after_rtts = 8;
  // And at least this long (ms): on short paths 8 RTTs pass within a policy's start-up, whose
  // overshoot stood for 0.2 s alone on 35 Mbit/s, 5 ms (held-out-grid) and switched it on.
  // 1 s sufficed there; 2 s came with the share's rule below, not measured apart from it.
  double enter_after_ms = 2000;
  // Within this long (ms, ACK time) of leaving, entering again waits only reenter_after_rtts
  // and no enter_after_ms: a drain that came from the competitor stepping back (bbr's
  // PROBE_RTT every 10 s) is not its leaving, and the policy, back in charge meanwhile, yields
  // what the mode had won (beside bbr, 5 s spans at 0.09-0.15 after each such drain).
  double reenter_within_ms = 15000;
  double reenter_after_rtts = 2;
  // A fresh entry (not a re-entry) also asks the flow's share of the link (ShareMeter) to lie
  // outside [enter_share_low, enter_share_high]: starved, or holding most of the link beside a
  // filler (the generalist takes 0.9 beside cubic on half a BDP). A flow between them shares
  // already, as learned flows beside each other do, whose start-up queues otherwise read to
  // each other as a filler's. No share yet (no packet pairs) lets the queue decide. Once the
  // flow has left the mode on its share (share_ceiling: nothing filled the buffer), only a
  // starved one enters, and not as a re-entry: alone on att-lte-driving, whose own queue
  // stands, the flow held the whole link, left and came back within 2 RTTs, in the mode for
  // 53% of its decisions.
  double enter_share_low = 0.25;
  double enter_share_high = 0.75;
  // The classic's window is held to this many of the link's BDPs (ShareMeter's rate x the
  // min RTT): in a buffer without a bound (the recorded links' queues) cubic meets no loss,
  // and its queue grew to seconds beside learned flows. bbr keeps 2 of its own.
  double classic_window_bdps = 4;
  // With a first classic (ExternalWindow::compete_with's make_first: loss-based), the mode
  // hands over to the other (bbr) once the flow's share of the link (ShareMeter) has stayed
  // below share_floor for switch_after_ms: the competitor does not back off on loss. And
  // back once it has stayed above share_ceiling as long: the competitor does.
  double share_floor = 0.3;
  double share_ceiling = 0.7;
  double switch_after_ms = 4000;
  // Leaving on a drain waits for nothing: one drained queue is Copa's evidence that nothing
  // fills the buffer, and the reading already holds it for kDrainRtts. (A share above
  // share_ceiling leaves too, after switch_after_ms.)
};

// One decision's mode change, from the newest ACK's reading: the mode flips once the drain
// test has asked for the other one for the rule's hold, measured in ACK time (sender clock),
// so that no ACKs (an outage) change nothing. Counts the decision (ExternalWindow::decisions).
inline void update_competitive_mode(const Features& features, ExternalWindow& window,
                                    const CompeteRule& rule = {}) {
  // The drain test's readings are kept from the first decision, before the first ACK.
  features.keep_competition_readings();
  const FeatureValues& v = features.values();
  double classic_ceiling = growth_ceiling(features.flight_packets(), true);
  const double capacity_mbps = window.share_meter().capacity_mbps();
  if (!std::isnan(capacity_mbps)) {
    const double link_bdp_packets = mbps_to_packets_per_ms(capacity_mbps) * v.min_rtt_ms;
    classic_ceiling = std::min(classic_ceiling,
                               std::max(kMinWindow, rule.classic_window_bdps * link_bdp_packets));
  }
  window.set_classic_ceiling(classic_ceiling);
  const double own_queued_packets = features.flight_packets() - features.pipe_packets();
  const bool own_queue = own_queued_packets > rule.queue_above_packets;
  const double share = window.share_meter().share();
  // NaN before the first packet pairs: then only the flow's own datagrams count.
  const double own_queue_ms =
      std::max(own_queued_packets, 1.0) / mbps_to_packets_per_ms(capacity_mbps);
  const bool foreign_queue = v.delay_ewma_ms > rule.foreign_queue_ratio * own_queue_ms;
  const bool queue_stands = v.standing_queue > rule.standing_above &&
                            v.delay_ewma_ms > rule.queue_above_min_rtt * v.min_rtt_ms &&
                            (own_queue || foreign_queue);
  // In the mode: too little under the loss-based first classic hands over to the other;
  // too much under the other hands back, and under the first (or the only) one ends the
  // mode, as no buffer filler holds the link (two learned flows, one of which took the
  // other's queue for a filler's).
  enum class ShareAsks { kNothing, kSwitch, kLeave };
  ShareAsks asks = ShareAsks::kNothing;
  if (window.competing()) {
    const bool under_first_or_only = window.using_first_classic() == window.has_first_classic();
    if (share > rule.share_ceiling) {
      asks = under_first_or_only ? ShareAsks::kLeave : ShareAsks::kSwitch;
    } else if (window.using_first_classic() && share < rule.share_floor) {
      asks = ShareAsks::kSwitch;
    }
  }
  bool won = false;
  if (asks == ShareAsks::kNothing) {
    window.set_switch_asked_ms(std::numeric_limits<double>::quiet_NaN());
  } else {
    if (std::isnan(window.switch_asked_ms())) window.set_switch_asked_ms(v.last_ack_ms);
    if (v.last_ack_ms - window.switch_asked_ms() >= rule.switch_after_ms) {
      if (asks == ShareAsks::kLeave) {
        won = true;
      } else {
        window.switch_classic();
      }
      window.set_switch_asked_ms(std::numeric_limits<double>::quiet_NaN());
    }
  }
  if (won) window.set_held_link();
  const bool just_left = v.last_ack_ms - window.left_mode_at_ms() < rule.reenter_within_ms;
  const bool may_enter_afresh = std::isnan(share) || share < rule.enter_share_low ||
                                (share > rule.enter_share_high && !window.held_link());
  const bool standing =
      queue_stands && !won && (window.competing() || just_left || may_enter_afresh);
  if (standing == window.competing() || v.last_ack_ms <= 0) {
    window.set_mode_change_asked_ms(std::numeric_limits<double>::quiet_NaN());
  } else {
    if (std::isnan(window.mode_change_asked_ms())) window.set_mode_change_asked_ms(v.last_ack_ms);
    const double smoothed_rtt_ms = v.min_rtt_ms + v.delay_ewma_ms;
    const double hold_ms =
        !standing ? 0.0
        : just_left ? rule.reenter_after_rtts * smoothed_rtt_ms
                    : std::max(rule.enter_after_rtts * smoothed_rtt_ms, rule.enter_after_ms);
    if (v.last_ack_ms - window.mode_change_asked_ms() >= hold_ms) {
      // Leaving, the policy restarts from the classic's window, capped at the pipe the flow
      // measures (its delivery rate x min RTT): the share it has won, without a queue of its
      // own. (From the classic's window alone, bbr's 2 BDPs, the policy's queue stood at once
      // and the flow re-entered within 0.3 s, alone on held-out-grid's 5 ms links.)
      const double classic_window = window.window_size();
      window.set_competing(standing, just_left);
      if (!standing) {
        // Left on its share: no quick re-entry (reenter_within_ms is for a drained queue).
        window.set_left_mode_at_ms(won ? -std::numeric_limits<double>::infinity()
                                       : v.last_ack_ms);
        window.set_window(std::clamp(std::min(classic_window, features.pipe_packets()),
                                     kMinWindow, kMaxWindow));
      }
      window.set_mode_change_asked_ms(std::numeric_limits<double>::quiet_NaN());
    }
  }
  window.count_decision();
}

// Applies `action` to `window` (the flow's ExternalWindow), within the flow's growth ceiling
// (apply_policy_action). Returns the new window. A flow with a classic underneath first
// updates its mode (update_competitive_mode); in competitive mode the classic's window
// stands and the action changes nothing (the policy still reads the flow and keeps its
// memory, ready to take over).
inline double take_policy_action(const Features& features, ExternalWindow& window, int action) {
  if (window.can_compete()) {
    update_competitive_mode(features, window);
    if (window.competing()) return window.window_size();
  }
  const double before = window.window_size();
  const double next = apply_policy_action(before, action, growth_ceiling(features, window));
  if (next > before) window.note_growth(features.values().last_ack_ms);
  window.set_window(next);
  return next;
}

}  // namespace ccgym
