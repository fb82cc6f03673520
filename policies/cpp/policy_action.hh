// A learned policy's decision, applied to the window it drives: the one place that
// turns an action into a window, for the simulator, the environments, `ccgym eval`
// and the UDP sender alike.
#pragma once
#include "policies/cpp/actions.hh"
#include "policies/cpp/controller.hh"
#include "policies/cpp/features.hh"

namespace ccgym {

// The growth ceiling (actions.hh) of a flow driven through `window`, from its features.
inline double growth_ceiling(const Features& features, const ExternalWindow& window) {
  return growth_ceiling(features.flight_packets(),
                        features.values().last_ack_ms > window.grown_at_ack_ms());
}

// Applies `action` to `window` (the flow's ExternalWindow), within the flow's growth ceiling
// (apply_policy_action). Returns the new window.
inline double take_policy_action(const Features& features, ExternalWindow& window, int action) {
  const double before = window.window_size();
  const double next = apply_policy_action(before, action, growth_ceiling(features, window));
  if (next > before) window.note_growth(features.values().last_ack_ms);
  window.set_window(next);
  return next;
}

}  // namespace ccgym
