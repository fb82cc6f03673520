// The vectorized environments' engine: N simulations, each with one or more external flows
// beside classic ones, stepped together on threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <sched.h>

#include "emulators/cpp/step_workers.hh"
#include "emulators/cpp/vec_simulator.hh"
#include "policies/cpp/actions.hh"
#include "policies/cpp/controller.hh"
#include "policies/cpp/features.hh"

namespace ccgym {
namespace {

constexpr const char* kLink = "rate_mbps=12,delay_ms=20";

TEST(VecSimulator, StepsEverySimulationOneStepOfTheSharedClock) {
  VecSimulator vec(3, /*threads=*/1);
  // A window of one BDP (40 packets of 1 ms at 12 Mbit/s over a 40 ms RTT): a steady flow.
  for (std::size_t i = 0; i < 3; ++i) vec.reset(i, kLink, /*seed=*/i + 1, /*window=*/40);
  const std::vector<int32_t> hold(3, kHoldAction);
  for (int step = 0; step < 10; ++step) vec.step(hold.data());
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(vec.sim(i).now_ms(), 10 * kStepMs);
    EXPECT_EQ(vec.previous_action(i), kHoldAction);
  }
  std::vector<double> stats(3 * kStatColumns);
  vec.stats(stats.data());
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(stats[i * kStatColumns + kStatDeliveredBytes], 10 * 1500, 1500);  // 10 in 10 ms
    EXPECT_GE(stats[i * kStatColumns + kStatMeanDelayMs], 20);
    EXPECT_DOUBLE_EQ(stats[i * kStatColumns + kStatWindow], 40);
  }
}

TEST(VecSimulator, ActionsMoveTheirOwnWindowAndShowInTheObservation) {
  VecSimulator vec(2, /*threads=*/2);
  vec.reset(0, kLink, 1, 10);
  vec.reset(1, kLink, 1, 10);
  const std::vector<int32_t> hold(2, kHoldAction);
  for (int step = 0; step < 5; ++step) vec.step(hold.data());  // 50 ms: the first ACKs are in
  const std::vector<int32_t> mixed = {0 /* /2 */, -1 /* leave it */};
  vec.step(mixed.data());
  EXPECT_DOUBLE_EQ(vec.sim(0).sender(0).window(), 5);
  EXPECT_DOUBLE_EQ(vec.sim(1).sender(0).window(), 10);
  std::vector<float> obs(2 * kObsDim);
  vec.observations(obs.data());
  EXPECT_EQ(obs[kObsActionOffset + 0], 1.0f);                     // slot 0: its /2
  EXPECT_EQ(obs[kObsDim + kObsActionOffset + kHoldAction], 1.0f);  // slot 1: still "hold"
  EXPECT_GT(obs[4], 0.0f);  // a min RTT was measured
}

TEST(VecSimulator, RowsObserveTheVersionSetAsTheirFeaturesComputeIt) {
  VecSimulator vec(2, /*threads=*/1);
  vec.reset(0, kLink, 1, 30);
  vec.reset(1, kLink, 2, 30);
  EXPECT_EQ(vec.obs_dim(), static_cast<std::size_t>(kObsDim));
  vec.set_observation_version(kCompetitionObservationVersion);
  EXPECT_EQ(vec.obs_dim(), static_cast<std::size_t>(kObsDimV6));
  const std::vector<int32_t> hold(2, kHoldAction);
  std::vector<float> stepped(2 * kObsDimV6);
  for (int step = 0; step < 20; ++step) vec.step(hold.data(), {stepped.data()});
  std::vector<float> obs(2 * kObsDimV6);
  vec.observations(obs.data());
  EXPECT_EQ(obs, stepped);
  for (std::size_t row = 0; row < 2; ++row) {
    Simulator& sim = vec.sim(row);
    std::vector<float> direct(kObsDimV6);
    sim.sender(0).features().observation_into(kCompetitionObservationVersion,
                                              sim.sender(0).window(), kHoldAction, sim.now_ms(),
                                              direct.data());
    EXPECT_TRUE(std::equal(direct.begin(), direct.end(), obs.begin() + row * kObsDimV6)) << row;
  }
  EXPECT_THROW(vec.set_observation_version(5), std::invalid_argument);
}

FlowSpec flow(std::string_view scheme, double start_ms = 0, double stop_ms = kNever) {
  FlowSpec f;
  f.scheme = scheme;
  f.start_ms = start_ms;
  f.stop_ms = stop_ms;
  return f;
}

// Two external flows and a cubic competitor per simulation, its start staggered by slot.
void reset_shared(VecSimulator& vec) {
  for (std::size_t i = 0; i < vec.size(); ++i) {
    const double start = 100.0 * static_cast<double>(i % 4);
    vec.reset_flows(i, "rate_mbps=24,delivery=poisson,delay_ms=15,queue=droptail:packets=80",
                    i + 7, {flow(kExternalScheme), flow("cubic", start), flow(kExternalScheme, 200)}, 10);
  }
}

TEST(VecSimulator, RowsAreTheExternalFlowsInSimulationOrder) {
  VecSimulator vec(3, 1);
  reset_shared(vec);
  vec.reset(1, kLink, 3, 10);  // one external flow only
  ASSERT_EQ(vec.rows(), 5u);
  EXPECT_EQ(vec.row_begin(1), 2u);
  EXPECT_EQ(vec.row_begin(2), 3u);
  EXPECT_EQ(vec.row_begin(3), 5u);
  EXPECT_EQ(vec.row_flows(), (std::vector<uint32_t>{0, 2, 0, 0, 2}));
  EXPECT_THROW(vec.reset_flows(0, kLink, 1, {flow("cubic")}, 10), std::invalid_argument);
}

void expect_threads_give_what_one_gives(std::size_t n) {
  VecSimulator one(n, 1), three(n, 3);
  reset_shared(one);
  reset_shared(three);
  EXPECT_EQ(three.threads(), 3);
  const std::size_t rows = one.rows();
  std::vector<int32_t> actions(rows);
  std::vector<float> obs_one(rows * kObsDim), obs_three(rows * kObsDim);
  std::vector<double> st_one(rows * kStatColumns), st_three(rows * kStatColumns);
  for (int step = 0; step < 300; ++step) {
    for (std::size_t r = 0; r < rows; ++r) actions[r] = static_cast<int32_t>((step * 7 + r) % kNumActions);
    one.step(actions.data());
    three.step(actions.data());
    one.observations(obs_one.data());
    three.observations(obs_three.data());
    one.stats(st_one.data());
    three.stats(st_three.data());
    ASSERT_EQ(obs_one, obs_three) << "step " << step;
    for (std::size_t k = 0; k < st_one.size(); ++k) {
      if (std::isnan(st_one[k])) {
        ASSERT_TRUE(std::isnan(st_three[k]));
      } else {
        ASSERT_EQ(st_one[k], st_three[k]) << "step " << step << " entry " << k;
      }
    }
  }
}

TEST(VecSimulator, ThreadsGiveWhatOneThreadGivesStepByStep) {
  expect_threads_give_what_one_gives(9);   // one chunk per thread, slices of unequal sizes
  expect_threads_give_what_one_gives(40);  // several per thread, taken from each other
}

TEST(VecSimulator, TheDefaultThreadsSwitchingToTheCallerGiveTheSameSteps) {
  const std::size_t n = 3 * kMinFlowsPerThread;  // several threads where there are cores
  VecSimulator one(n, 1), chosen(n, 0);
  reset_shared(one);
  reset_shared(chosen);
  EXPECT_EQ(chosen.threads(), default_threads(3 * n));
  const std::size_t rows = one.rows();
  std::vector<int32_t> actions(rows);
  std::vector<float> obs_one(rows * kObsDim), obs_chosen(rows * kObsDim);
  // Past two probes: the caller alone, then the threads, then the faster.
  for (uint64_t step = 0; step < 3 * kProbeSteps; ++step) {
    for (std::size_t r = 0; r < rows; ++r) actions[r] = static_cast<int32_t>((step + r) % kNumActions);
    one.step(actions.data());
    chosen.step(actions.data());
    one.observations(obs_one.data());
    chosen.observations(obs_chosen.data());
    ASSERT_EQ(obs_one, obs_chosen) << "step " << step;
  }
}

TEST(VecSimulator, FlowsCountAsActiveBetweenTheirStartAndStop) {
  VecSimulator vec(1, 1);
  vec.reset_flows(0, kLink, 1, {flow(kExternalScheme, 0, 300), flow("cubic", 100, 200),
                                flow(kExternalScheme, 150)}, 10);
  const std::vector<int32_t> hold(2, kHoldAction);
  std::vector<double> st(2 * kStatColumns);
  auto at = [&](std::size_t row, std::size_t col) { return st[row * kStatColumns + col]; };
  for (int step = 1; step <= 40; ++step) {
    vec.step(hold.data());
    vec.stats(st.data());
    const double now = step * kStepMs;
    const double expected = (now < 300) + (now >= 100 && now < 200) + (now >= 150);
    ASSERT_EQ(at(0, kStatActiveFlows), expected) << now;
    ASSERT_EQ(at(0, kStatActive), now < 300 ? 1 : 0) << now;
    ASSERT_EQ(at(1, kStatActive), now >= 150 ? 1 : 0) << now;
    // A constant 12 Mbit/s link offers one 1500-byte opportunity per ms.
    ASSERT_NEAR(at(1, kStatCapacityBytes), 10 * 1500, 1500) << now;
  }
}

TEST(VecSimulator, ClassicFlowsSendingAndTheirMeanInFlightAreEveryRowsStatistics) {
  VecSimulator vec(1, 1);
  // Fixed windows of 30 and 50 keep exactly that many packets in flight once sending.
  vec.reset_flows(0, kLink, 1, {flow(kExternalScheme), flow("fixed:window=30", 0, 300),
                                flow("fixed:window=50", 100), flow(kExternalScheme, 50)}, 10);
  const std::vector<int32_t> hold(2, kHoldAction);
  std::vector<double> st(2 * kStatColumns);
  auto at = [&](std::size_t row, std::size_t col) { return st[row * kStatColumns + col]; };
  for (int step = 1; step <= 40; ++step) {
    vec.step(hold.data());
    vec.stats(st.data());
    const double now = step * kStepMs;
    const double classic = (now < 300) + (now >= 100);
    for (std::size_t row = 0; row < 2; ++row) {  // both rows see their simulation's
      ASSERT_EQ(at(row, kStatClassicFlows), classic) << now;
    }
    if (now >= 150 && now < 300) {
      ASSERT_EQ(at(1, kStatClassicInFlight), (30 + 50) / 2.0) << now;
    }
    if (now >= 350) {
      ASSERT_EQ(at(0, kStatClassicInFlight), 50) << now;
    }
  }
  vec.reset(0, kLink, 1, 10);  // alone: no classic flow, nothing in flight
  vec.step(hold.data());
  vec.stats(st.data());
  EXPECT_EQ(at(0, kStatClassicFlows), 0);
  EXPECT_EQ(at(0, kStatClassicInFlight), 0);
}

TEST(VecSimulator, DefaultThreadsGrowWithTheFlows) {
  EXPECT_EQ(default_threads(1), 1);
  EXPECT_EQ(default_threads(kMinFlowsPerThread - 1), 1);
  EXPECT_GE(default_threads(1000 * kMinFlowsPerThread), 1);
  EXPECT_EQ(default_threads(1000 * kMinFlowsPerThread), usable_cores());
}

TEST(VecSimulator, BadIndicesAndActionsAreErrors) {
  VecSimulator vec(1, 1);
  EXPECT_THROW(vec.sim(0), std::invalid_argument);  // never reset
  EXPECT_THROW(vec.reset(1, kLink, 1, 10), std::out_of_range);
  vec.reset(0, kLink, 1, 10);
  const int32_t too_big = kNumActions;
  EXPECT_THROW(vec.step(&too_big), std::invalid_argument);
}


// Feeds the tuner one period of steps that take `alone` on the caller and `threads` on the
// threads, the step at `slow_step` a second longer (a caller that paused to train, a thread
// preempted mid-chunk); returns where the steps after the probe run and the period they run
// for, and the steps the threads ran.
struct Tuned {
  bool parallel;
  uint64_t period;
  std::size_t on_threads;
  bool operator==(const Tuned&) const = default;
};

Tuned tune(ThreadTuner& tuner, std::chrono::microseconds alone, std::chrono::microseconds threads,
           std::size_t slow_step = 3) {
  auto now = tuner.last_start;
  std::vector<bool> where;
  do {  // one period: to the next probe
    const std::size_t step = where.size();
    where.push_back(tuner.start_step(now));
    now += where.back() ? threads : alone;
    if (step == slow_step) now += std::chrono::seconds(1);
  } while (tuner.steps != 0);
  EXPECT_EQ(where.size(), tuner.period);
  for (std::size_t step = 2 * kProbeSteps + 1; step < where.size(); ++step) {
    EXPECT_EQ(where[step], where.back()) << step;  // the choice holds to the next probe
  }
  EXPECT_FALSE(where[0]);
  EXPECT_TRUE(where[kProbeSteps]);
  const auto probe_end = where.begin() + 2 * kProbeSteps;
  return {where.back(), tuner.period,
          static_cast<std::size_t>(std::count(where.begin(), probe_end, true))};
}

TEST(ThreadTuner, RunsTheFasterByMedianAndProbesLessWhileOneSideWins) {
  using std::chrono::microseconds;
  ThreadTuner tuner;
  tuner.adaptive = true;
  // The caller's slow step (a pause to train) decides nothing: a sum would pick the threads.
  const std::size_t k = kProbeSteps;
  EXPECT_EQ(tune(tuner, microseconds(50), microseconds(30)), (Tuned{true, kTunePeriodSteps, k}));
  EXPECT_EQ(tune(tuner, microseconds(50), microseconds(70)), (Tuned{false, 2 * kTunePeriodSteps, k}));
  EXPECT_EQ(tune(tuner, microseconds(50), microseconds(70)), (Tuned{false, 4 * kTunePeriodSteps, k}));
  EXPECT_EQ(tune(tuner, microseconds(50), microseconds(40)), (Tuned{true, kTunePeriodSteps, k}));
  EXPECT_EQ(tune(tuner, microseconds(50), microseconds(40)), (Tuned{true, 2 * kTunePeriodSteps, k}));
  // About as fast (within kThreadsMustSave): the caller alone.
  EXPECT_EQ(tune(tuner, microseconds(50), microseconds(49)), (Tuned{false, 4 * kTunePeriodSteps, k}));
}

TEST(ThreadTuner, AThreadedStepLongerThanTheCallersWholeProbeEndsItForTheCaller) {
  using std::chrono::microseconds;
  ThreadTuner tuner;
  tuner.adaptive = true;
  // The threads' fourth step waits a second for a preempted worker: faster by median, but
  // already slower in all than the caller's 32 steps; the rest of the probe runs alone.
  const std::size_t slow = kProbeSteps + 3;
  EXPECT_EQ(tune(tuner, microseconds(50), microseconds(30), slow),
            (Tuned{false, 2 * kTunePeriodSteps, 4}));
  // Without the stall the threads win again.
  EXPECT_EQ(tune(tuner, microseconds(50), microseconds(30), 0),
            (Tuned{true, kTunePeriodSteps, kProbeSteps}));
}

TEST(StepWorkers, ThreadsCountTheCoresThisProcessMayUse) {
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof all, &all), 0);
  EXPECT_EQ(usable_cores(), CPU_COUNT(&all));
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &all)) {
      CPU_SET(cpu, &one);
      break;
    }
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  const int cores = usable_cores();
  const int threads = default_threads(1000 * kMinFlowsPerThread);
  ASSERT_EQ(sched_setaffinity(0, sizeof all, &all), 0);
  EXPECT_EQ(cores, 1);
  EXPECT_EQ(threads, 1);  // as many as the cores it may use, not the machine's
}

}  // namespace
}  // namespace ccgym
