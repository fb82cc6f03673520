// A learned policy's decision, applied to the window it drives: the one place that
// turns an action into a window, for the simulator, the environments, `ccgym eval`
// and the UDP sender alike.
#pragma once
#include "policies/cpp/actions.hh"
#include "policies/cpp/controller.hh"
#include "policies/cpp/features.hh"

namespace ccgym {

// Applies `action` to `window` (the flow's ExternalWindow), obeying the no-growth-
// before-the-first-ACK rule of apply_policy_action; `features` are the flow's. Returns
// the new window.
inline double take_policy_action(const Features& features, ExternalWindow& window, int action) {
  const bool acked = features.values().min_rtt_ms > 0;  // 0 until the first ACK
  window.set_window(apply_policy_action(window.window_size(), action, acked));
  return window.window_size();
}

}  // namespace ccgym
