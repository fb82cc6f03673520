// A learned policy's decision, applied to the window it drives: the one place that
// turns an action into a window, for the simulator, the environments, `ccgym eval`
// and the UDP sender alike.
#pragma once
#include "policies/cpp/actions.hh"
#include "policies/cpp/controller.hh"
#include "policies/cpp/features.hh"

namespace ccgym {

// The growth ceiling (actions.hh) of a flow at now_ms (sender clock), from its features.
inline double growth_ceiling(const Features& features, double now_ms) {
  return growth_ceiling(features.pipe_packets(), now_ms - features.values().last_ack_ms);
}

// Applies `action` to `window` (the flow's ExternalWindow) at now_ms, within the flow's growth
// ceiling (apply_policy_action). Returns the new window.
inline double take_policy_action(const Features& features, ExternalWindow& window, int action,
                                 double now_ms) {
  const double ceiling = growth_ceiling(features, now_ms);
  window.set_window(apply_policy_action(window.window_size(), action, ceiling));
  return window.window_size();
}

}  // namespace ccgym
