// The learned policy's actions, defined once (Indigo's set), applied every kStepMs.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

namespace ccgym {

inline constexpr double kStepMs = 10;  // one decision per 10 ms (Indigo)
inline constexpr double kMinWindow = 1;
inline constexpr double kMaxWindow = 5000;

enum class Op : uint8_t { kMultiply, kAdd };
struct Action {
  Op op;
  double value;
};
// Indigo's /2, -10, +0, +10, x2, with -1 and +1 added: with steps of 10 a window can only
// come within 5 packets of a pipe, which on a 22-packet pipe (9 Mbit/s, 30 ms) costs 13% of
// the rate or a queue of 7 ms; the policy trained with Indigo's set kept 87% utilization there.
inline constexpr std::array<Action, 7> kActions = {{{Op::kMultiply, 0.5},
                                                    {Op::kAdd, -10},
                                                    {Op::kAdd, -1},
                                                    {Op::kAdd, 0},
                                                    {Op::kAdd, 1},
                                                    {Op::kAdd, 10},
                                                    {Op::kMultiply, 2}}};
inline constexpr int kNumActions = static_cast<int>(kActions.size());
// Their names, for logs, tests and the ONNX metadata.
inline constexpr std::array<const char*, kNumActions> kActionNames = {"/2", "-10", "-1", "+0",
                                                                      "+1", "+10", "x2"};
// "+0": the window stays. The previous action before a flow's first decision.
inline constexpr int kHoldAction = 3;
static_assert(kActions[kHoldAction].op == Op::kAdd && kActions[kHoldAction].value == 0);

inline double apply_action(double window, int action) {
  const Action& a = kActions[static_cast<std::size_t>(action)];
  const double next = a.op == Op::kMultiply ? window * a.value : window + a.value;
  return std::clamp(next, kMinWindow, kMaxWindow);
}

// The window after a learned policy's action, in the simulator, the environments and
// the UDP sender alike. Before the flow's first ACK (acked false) the window may shrink
// but not grow, as TCP keeps its initial window for the first RTT: until the link has
// answered, every link looks the same to the policy (its features are all zero), and
// growing blind (x2 every 10 ms over a 200 ms RTT) overshoots a 15-packet pipe by
// orders of magnitude and costs seconds of queue.
inline double apply_policy_action(double window, int action, bool acked) {
  const double next = apply_action(window, action);
  return acked ? next : std::min(next, window);
}

// The action whose result is closest to the target window (the expert's choice);
// ties go to the smaller change.
inline int closest_action(double window, double target) {
  int best = kHoldAction;
  double best_gap = std::abs(apply_action(window, kHoldAction) - target);
  for (int a = 0; a < kNumActions; ++a) {
    const double gap = std::abs(apply_action(window, a) - target);
    if (gap < best_gap - 1e-9) {
      best = a;
      best_gap = gap;
    }
  }
  return best;
}

}  // namespace ccgym
