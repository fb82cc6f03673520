// The competitive mode (policy_action.hh's update_competitive_mode): a flow that keeps a
// short queue switches to the classic underneath beside a buffer filler, never alone, and
// back when the queue drains; without a classic it is the plain ExternalWindow of before.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "emulators/cpp/simulator.hh"
#include "policies/cpp/policy_action.hh"

namespace ccgym {
namespace {

// 24 Mbit/s, 20 ms: a pipe of 80 datagrams, a buffer of 4 pipes that fixed:200 keeps full.
constexpr const char* kDeepLink = "rate_mbps=24,delay_ms=20,queue=droptail:packets=320";
// The stand-in policy: a window of a quarter of the pipe, held (it never builds a queue).
constexpr double kPolicyWindow = 20;

struct Outcome {
  double competing_fraction;  // of the decisions
  double share;               // of the bytes delivered from `from_ms` on
  bool competing_at_end;
  double window_at_end;
};

// Flow 0, the external one, beside `others`, all started at 0 (a flow that joins a queue
// a constant window keeps full measures that queue as its min RTT: nothing could tell it),
// the others stopped at stop_ms; run to until_ms with a decision every kStepMs. compete:
// the classic underneath, "" for none.
Outcome run(const std::string& compete, const std::vector<std::string>& others, double until_ms,
            double from_ms, double others_stop_ms = kNever, double policy_window = kPolicyWindow) {
  std::vector<FlowSpec> flows(1);
  flows[0].scheme = std::string(kExternalScheme);
  for (const std::string& scheme : others) {
    FlowSpec f;
    f.scheme = scheme;
    f.stop_ms = others_stop_ms;
    flows.push_back(f);
  }
  Simulator sim(parse_link_spec(kDeepLink), flows, 7);
  ExternalWindow& window = *sim.external(0);
  window.set_window(policy_window);
  if (!compete.empty()) sim.compete(0, compete);
  for (double t = 0; t < until_ms; t += kStepMs) {
    if (sim.sender(0).active(t)) take_policy_action(sim.sender(0).features(), window, kHoldAction);
    sim.run_until(t + kStepMs);
  }
  double mine = 0, all = 0;
  const PacketLog& log = sim.log();
  for (std::size_t k = 0; k < log.size(); ++k) {
    if (!(log.arrival_ms[k] >= from_ms)) continue;
    all += log.bytes[k];
    if (log.flow[k] == 0) mine += log.bytes[k];
  }
  const double decisions = static_cast<double>(window.decisions());
  return {decisions > 0 ? static_cast<double>(window.competing_decisions()) / decisions : 0,
          mine / all, window.competing(), window.window_size()};
}

TEST(CompetitiveMode, NeverSwitchesOnAloneOnAConstantLink) {
  for (const char* classic : {"cubic", "bbr"}) {
    const Outcome alone = run(classic, {}, 20000, 0);
    EXPECT_EQ(alone.competing_fraction, 0) << classic;
  }
}

TEST(CompetitiveMode, SwitchesOnBesideABufferFillerAndHoldsAShare) {
  const Outcome plain = run("", {"fixed:200"}, 20000, 5000);
  for (const char* classic : {"cubic", "bbr"}) {
    const Outcome competing = run(classic, {"fixed:200"}, 20000, 5000);
    EXPECT_TRUE(competing.competing_at_end) << classic;
    EXPECT_GT(competing.competing_fraction, 0.5) << classic;
    // The held window of 20 gets 20 / 220 of the queue's mix; the classic gets far more.
    EXPECT_LT(plain.share, 0.12);
    EXPECT_GT(competing.share, 2 * plain.share) << classic;
  }
}

TEST(CompetitiveMode, AFlowStarvedToAFewDatagramsSwitchesOn) {
  // A window of 1 or 3 (a step up sends two back to back: packet pairs) never has more than
  // two datagrams of its own queued: only the queue's length against what its own take at
  // the link's rate (CompeteRule::foreign_queue_ratio) tells that a buffer filler holds it.
  for (const char* classic : {"cubic", "bbr"}) {
    FlowSpec external, filler;
    external.scheme = std::string(kExternalScheme);
    filler.scheme = "fixed:200";
    Simulator sim(parse_link_spec(kDeepLink), {external, filler}, 7);
    ExternalWindow& window = *sim.external(0);
    sim.compete(0, classic);
    int step = 0;
    for (double t = 0; t < 20000; t += kStepMs, ++step) {
      if (!window.competing()) window.set_window(step % 20 < 10 ? 1 : 3);
      take_policy_action(sim.sender(0).features(), window, kHoldAction);
      sim.run_until(t + kStepMs);
    }
    EXPECT_TRUE(window.competing()) << classic;
    EXPECT_GT(static_cast<double>(window.competing_decisions()) /
                  static_cast<double>(window.decisions()), 0.5) << classic;
  }
}

// Beside bbr, whose PROBE_RTT drains the queue every 10 s, with bbr underneath (each drain
// takes the flow out of the mode): the longest time from leaving the mode to entering it
// again, and the fraction of decisions in the mode, under `rule`.
struct Reentries {
  double longest_out_ms = 0;
  double competing_fraction = 0;
  int exits = 0;
};

Reentries reentries(const CompeteRule& rule) {
  FlowSpec external, bbr;
  external.scheme = std::string(kExternalScheme);
  bbr.scheme = "bbr";
  Simulator sim(parse_link_spec("rate_mbps=24,delay_ms=20,queue=droptail:packets=80"),
                {bbr, external}, 3);
  ExternalWindow& window = *sim.external(1);
  sim.compete(1, "bbr", true);
  Reentries out;
  double left_ms = -1;
  int step = 0;
  for (double t = 0; t < 60000; t += kStepMs, ++step) {
    const bool was = window.competing();
    // Out of the mode, a yielding policy's window, stepped up now and then (packet pairs).
    if (!was) window.set_window(step % 20 < 10 ? 2 : 4);
    update_competitive_mode(sim.sender(1).features(), window, rule);
    if (was && !window.competing()) {
      ++out.exits;
      left_ms = t;
    }
    if (!was && window.competing() && left_ms >= 0) {
      out.longest_out_ms = std::max(out.longest_out_ms, t - left_ms);
    }
    sim.run_until(t + kStepMs);
  }
  out.competing_fraction = static_cast<double>(window.competing_decisions()) /
                           static_cast<double>(window.decisions());
  return out;
}

TEST(CompetitiveMode, ADrainBesideBbrLeavesTheModeOnlyBriefly) {
  const Reentries quick = reentries(CompeteRule{});
  CompeteRule slow;
  slow.reenter_within_ms = 0;  // every entry waits enter_after_ms,
  slow.enter_share_low = std::numeric_limits<double>::infinity();  // and no share holds one off
  const Reentries waiting = reentries(slow);
  ASSERT_GE(quick.exits, 2);
  ASSERT_GE(waiting.exits, 2);
  // Out of the mode, the queue must stand again for the drain test (4 smoothed RTTs) either
  // way; waiting enter_after_ms beyond that is what the quick re-entry saves.
  EXPECT_GT(waiting.longest_out_ms, slow.enter_after_ms);
  EXPECT_LT(quick.longest_out_ms, waiting.longest_out_ms - 500);
  EXPECT_GT(waiting.longest_out_ms, slow.enter_after_ms);
  EXPECT_GT(quick.competing_fraction, waiting.competing_fraction);
}

// The stand-in policy (a window of 10) with bbr underneath and cubic first, beside `other` on
// 24 Mbit/s, 20 ms, 1 BDP, run to 40 s with the other starting first: whether the mode ends
// under the first classic, and the flow's share from 15 s on.
struct Handover {
  bool first_at_end;
  double share;
};

Handover handover(const std::string& other) {
  FlowSpec external, competitor;
  external.scheme = std::string(kExternalScheme);
  external.start_ms = 5000;
  competitor.scheme = other;
  Simulator sim(parse_link_spec("rate_mbps=24,delay_ms=20,queue=droptail:packets=80"),
                {competitor, external}, 5);
  ExternalWindow& window = *sim.external(1);
  window.set_window(10);
  sim.compete(1, "bbr", true, "cubic");
  for (double t = 0; t < 40000; t += kStepMs) {
    if (sim.sender(1).active(t)) take_policy_action(sim.sender(1).features(), window, kHoldAction);
    sim.run_until(t + kStepMs);
  }
  double mine = 0, all = 0;
  const PacketLog& log = sim.log();
  for (std::size_t k = 0; k < log.size(); ++k) {
    if (!(log.arrival_ms[k] >= 15000)) continue;
    all += log.bytes[k];
    if (log.flow[k] == 1) mine += log.bytes[k];
  }
  return {window.using_first_classic(), mine / all};
}

TEST(CompetitiveMode, HandsOverToBbrOnlyWhereTheFirstClassicIsStarved) {
  // cubic beside bbr on one BDP keeps a twentieth of the link (bench_coexist.py): the share
  // stays below the floor, and bbr takes over.
  const Handover beside_bbr = handover("bbr");
  EXPECT_FALSE(beside_bbr.first_at_end);
  EXPECT_GT(beside_bbr.share, 0.3);
  // Beside cubic the first classic holds its share, and keeps the mode.
  const Handover beside_cubic = handover("cubic");
  EXPECT_TRUE(beside_cubic.first_at_end);
  EXPECT_GT(beside_cubic.share, 0.3);
  EXPECT_LT(beside_cubic.share, 0.7);
}

// The external flow, its window stepped between `window` - 2 and + 2 every 100 ms (a step up
// sends back to back: packet pairs), with cubic underneath, beside `others` on `link` under
// `rule`, to until_ms: the fraction of its decisions in the mode, and the most its window
// was while in it.
struct Stepped {
  double competing_fraction = 0;
  double most_competing_window = 0;
  int entries = 0;
};

Stepped stepped(const char* link, const std::vector<std::string>& others, double window_mid,
                const CompeteRule& rule, double until_ms) {
  std::vector<FlowSpec> flows(1);
  flows[0].scheme = std::string(kExternalScheme);
  for (const std::string& scheme : others) {
    FlowSpec f;
    f.scheme = scheme;
    flows.push_back(f);
  }
  Simulator sim(parse_link_spec(link), flows, 7);
  ExternalWindow& window = *sim.external(0);
  sim.compete(0, "cubic");  // fed from the start
  Stepped out;
  int step = 0;
  for (double t = 0; t < until_ms; t += kStepMs, ++step) {
    const bool was = window.competing();
    if (!was) window.set_window(window_mid + (step % 20 < 10 ? -2 : 2));
    update_competitive_mode(sim.sender(0).features(), window, rule);
    if (!was && window.competing()) ++out.entries;
    if (window.competing()) {
      out.most_competing_window = std::max(out.most_competing_window, window.window_size());
    }
    sim.run_until(t + kStepMs);
  }
  out.competing_fraction = static_cast<double>(window.competing_decisions()) /
                           static_cast<double>(window.decisions());
  return out;
}

TEST(CompetitiveMode, AFlowThatAlreadySharesStaysOut) {
  // Beside a window as large as its own the queue stands (200 datagrams for a pipe of 80)
  // and holds many of its own, but it has half the link: another learned flow, not a filler.
  const Stepped sharing = stepped(kDeepLink, {"fixed:100"}, 100, CompeteRule{}, 15000);
  EXPECT_EQ(sharing.competing_fraction, 0);
  CompeteRule no_share_asked;
  no_share_asked.enter_share_low = std::numeric_limits<double>::infinity();
  EXPECT_GT(stepped(kDeepLink, {"fixed:100"}, 100, no_share_asked, 15000).competing_fraction,
            0.5);
}

TEST(CompetitiveMode, AloneAFlowThatLeftOnItsShareEntersOnlyWhenStarved) {
  // Alone with a window of 200 for a pipe of 80: its own queue stands, its share is the
  // whole link, so it enters; under cubic it holds the link and leaves on its share (4 s),
  // and stays out though its queue stands again.
  const Stepped alone = stepped(kDeepLink, {}, 200, CompeteRule{}, 30000);
  EXPECT_EQ(alone.entries, 1);
  EXPECT_LT(alone.competing_fraction, 0.3);
  // Beside a buffer filler that starves it, it enters all the same.
  const Stepped starved = stepped(kDeepLink, {"fixed:300"}, 4, CompeteRule{}, 15000);
  EXPECT_GT(starved.competing_fraction, 0.3);
}

TEST(CompetitiveMode, TheClassicIsHeldToFourPipesInABufferWithoutBound) {
  // Alone in a queue without bound, cubic meets no loss: the mode (entered on the flow's own
  // queue, which a test may do) holds it to 4 x 80 datagrams, where it grows past them.
  constexpr const char* kUnbounded = "rate_mbps=24,delay_ms=20";
  CompeteRule rule;
  rule.share_ceiling = std::numeric_limits<double>::infinity();  // it stays in the mode
  const Stepped held = stepped(kUnbounded, {}, 200, rule, 8000);
  ASSERT_GT(held.competing_fraction, 0.3);
  EXPECT_LE(held.most_competing_window, 4 * 80 * 1.02);
  EXPECT_GT(held.most_competing_window, 4 * 80 * 0.9);
  rule.classic_window_bdps = std::numeric_limits<double>::infinity();
  EXPECT_GT(stepped(kUnbounded, {}, 200, rule, 8000).most_competing_window, 2 * 4 * 80);
}

TEST(CompetitiveMode, SwitchesBackWhenTheQueueDrains) {
  // bbr's ProbeRTT empties the queue once the buffer filler has gone (at 8 s).
  const Outcome after = run("bbr", {"fixed:200"}, 30000, 0, 8000);
  EXPECT_GT(after.competing_fraction, 0.05);
  EXPECT_FALSE(after.competing_at_end);
  // The policy restarted at most at the pipe (80 datagrams), not at bbr's 2 BDPs.
  EXPECT_LE(after.window_at_end, 81);
}

TEST(CompetitiveMode, WithoutAClassicTheWindowIsThePolicys) {
  ExternalWindow window(20);
  window.set_competing(true);  // nothing underneath: no mode to enter
  EXPECT_FALSE(window.competing());
  EXPECT_DOUBLE_EQ(window.window_size(), 20);
  EXPECT_DOUBLE_EQ(window.pacing_rate_mbps(), 0);
}

TEST(CompetitiveMode, TheClassicsWindowIsCappedAtTheCeiling) {
  ExternalWindow window(20);
  window.compete_with([] { return make_controller("fixed:window=70"); });
  window.set_competing(true);
  EXPECT_DOUBLE_EQ(window.window_size(), 70);
  window.set_classic_ceiling(50);  // the growth ceiling bounds the classic's window
  EXPECT_DOUBLE_EQ(window.window_size(), 50);
  window.set_competing(false);
  EXPECT_DOUBLE_EQ(window.window_size(), 20);
}

TEST(CompetitiveMode, RestartMakesTheClassicAfreshOnEachEntryOnly) {
  for (const bool restart : {false, true}) {
    int made = 0;
    ExternalWindow window(20);
    window.compete_with([&made] { ++made; return make_controller("cubic"); }, restart);
    EXPECT_EQ(made, 1);
    window.set_competing(true);
    window.set_competing(true);  // staying in is no entry
    window.set_competing(false);
    window.set_competing(true);
    EXPECT_EQ(made, restart ? 3 : 1);
  }
}

TEST(CompetitiveMode, ASimulatorRefusesAClassicUnderANonExternalFlow) {
  FlowSpec cubic;
  cubic.scheme = "cubic";
  Simulator sim(parse_link_spec(kDeepLink), {cubic}, 1);
  EXPECT_THROW(sim.compete(0, "bbr"), std::invalid_argument);
  FlowSpec external;
  external.scheme = std::string(kExternalScheme);
  Simulator sim2(parse_link_spec(kDeepLink), {external}, 1);
  EXPECT_THROW(sim2.compete(0, "external"), std::invalid_argument);
  EXPECT_THROW(sim2.compete(0, "nosuch"), std::invalid_argument);
}

}  // namespace
}  // namespace ccgym
