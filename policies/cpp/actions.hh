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
// Linux's initial window (RFC 6928), the classic schemes' and the learned policy's.
inline constexpr double kInitialWindow = 10;
// While ACKs flow, a learned policy may grow its window to this many times the flight they
// have shown (delivery rate x smoothed RTT, Features::flight_packets), or to kInitialWindow:
// at most a doubling per RTT, as slow start grows. Without the limit a policy could double
// every step (32 times per 320 ms RTT): on Indigo's Poisson traces, whose first seconds
// deliver a packet per 100 ms, policies reached windows of 2560 before the first RTT ended
// and queued seconds. The flight, not the pipe (delivery rate x min RTT): where the uplink
// stalls ACKs, the window must also cover datagrams delivered but not yet acknowledged. On
// ATT-LTE-driving the expert itself (the RTT-behind oracle's window within this whole ceiling,
// once-per-ACK rule included) reaches 85% of the link (score -4.96, `ccgym eval`, whole trace).
inline constexpr double kGrowthFlights = 2;

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

// The most a learned policy may grow its window to (0: not at all). Nothing before the flow's
// first ACK (flight_packets < 0), as TCP keeps its initial window for the first RTT: until the
// link has answered, every link looks the same to the policy (its features are all zero), and
// growing blind (x2 every 10 ms over a 200 ms RTT) overshoots a 15-packet pipe by orders of
// magnitude and costs seconds of queue. Nothing either until an ACK has come since the window
// last grew (ack_since_growth): TCP's window grows only on ACKs, and policies grew theirs
// through ATT-LTE-driving's 10 s outage into a queue that took seconds to drain. (Asking
// instead for an ACK within the last step trapped small windows: one packet per 40 ms RTT
// left 3 steps in 4 without an ACK, and a policy sat below 2 packets for 30 s after an outage.)
// Otherwise kGrowthFlights times the flight measured, or kInitialWindow.
inline double growth_ceiling(double flight_packets, bool ack_since_growth) {
  if (flight_packets < 0 || !ack_since_growth) return 0;
  return std::max(kInitialWindow, kGrowthFlights * flight_packets);
}

// The window after a learned policy's action, in the simulator, the environments and the UDP
// sender alike: it may shrink freely, and grow up to the ceiling (never below where it is).
inline double apply_policy_action(double window, int action, double ceiling) {
  const double next = apply_action(window, action);
  return next <= window ? next : std::max(window, std::min(next, ceiling));
}

// The action whose result, under the growth ceiling, is closest to the target window (the
// expert's choice); ties go to the smaller change, so that an expert held back by the ceiling
// asks for no more growth than it can get.
inline int closest_action(double window, double target, double ceiling = kMaxWindow) {
  int best = kHoldAction;
  double best_gap = std::abs(apply_policy_action(window, kHoldAction, ceiling) - target);
  for (int a = 0; a < kNumActions; ++a) {
    const double gap = std::abs(apply_policy_action(window, a, ceiling) - target);
    if (gap < best_gap - 1e-9) {
      best = a;
      best_gap = gap;
    }
  }
  return best;
}

}  // namespace ccgym
