// A learned policy's decision, applied to the window it drives: the one place that
// turns an action into a window, for the simulator, the environments, `ccgym eval`
// and the UDP sender alike.
#pragma once
#include "policies/cpp/actions.hh"
#include "policies/cpp/controller.hh"
#include "policies/cpp/features.hh"

namespace ccgym {

// The growth ceiling (actions.hh) of a flow, from its features.
inline double growth_ceiling(const Features& features) {
  return growth_ceiling(features.flight_packets());
}

// Applies `action` to `window` (the flow's ExternalWindow), within the flow's growth ceiling
// (apply_policy_action). Returns the new window.
inline double take_policy_action(const Features& features, ExternalWindow& window, int action) {
  const double next = apply_policy_action(window.window_size(), action, growth_ceiling(features));
  window.set_window(next);
  return next;
}

}  // namespace ccgym
