// A learned policy's decision, applied to the window it drives: the one place that
// turns an action into a window, for the simulator, the environments, `ccgym eval`
// and the UDP sender alike.
#pragma once
#include "policies/cpp/actions.hh"
#include "policies/cpp/controller.hh"
#include "policies/cpp/features.hh"

namespace ccgym {

// Applies `action` to `window` (the flow's ExternalWindow), within the growth ceiling of the
// pipe the flow's `features` measure (apply_policy_action). Returns the new window.
inline double take_policy_action(const Features& features, ExternalWindow& window, int action) {
  const double ceiling = growth_ceiling(features.pipe_packets());
  window.set_window(apply_policy_action(window.window_size(), action, ceiling));
  return window.window_size();
}

}  // namespace ccgym
