// The simulator stepped on the thread pool gives what it gives serially; flows of fixed
// windows share a link in proportion to their windows.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "emulators/cpp/simulator.hh"

namespace ccgym {
namespace {

std::vector<std::unique_ptr<Simulator>> make_sims(int n) {
  std::vector<std::unique_ptr<Simulator>> sims;
  for (int i = 0; i < n; ++i) {
    FlowSpec flow;
    flow.scheme = "cubic";
    sims.push_back(std::make_unique<Simulator>(
        parse_link_spec("rate_mbps=" + std::to_string(6 + 6 * i) +
                        ",delivery=poisson,delay_ms=15,queue=droptail:packets=60"),
        std::vector<FlowSpec>{flow}, static_cast<uint64_t>(i + 1)));
  }
  return sims;
}

TEST(SimulatorPool, ManySmallParallelStepsEqualSerialRuns) {
  auto parallel = make_sims(5);
  auto serial = make_sims(5);
  std::vector<Simulator*> ptrs;
  for (auto& s : parallel) ptrs.push_back(s.get());
  for (int step = 1; step <= 300; ++step) run_all_until(ptrs, step * 10.0, 2);
  for (auto& s : serial) s->run_until(3000);
  for (std::size_t i = 0; i < parallel.size(); ++i) {
    EXPECT_GT(parallel[i]->log().size(), 100u);
    EXPECT_EQ(parallel[i]->log().send_ms, serial[i]->log().send_ms);
    EXPECT_EQ(parallel[i]->log().dropped, serial[i]->log().dropped);
  }
}

// Bytes each flow delivered from from_ms to the end, over all of them.
std::vector<double> shares(const Simulator& sim, double from_ms) {
  std::vector<double> bytes(sim.num_flows(), 0.0);
  const PacketLog& log = sim.log();
  for (std::size_t k = 0; k < log.size(); ++k) {
    if (log.arrival_ms[k] >= from_ms) bytes[log.flow[k]] += log.bytes[k];
  }
  double total = 0;
  for (double b : bytes) total += b;
  for (double& b : bytes) b /= total;
  return bytes;
}

// Window-limited flows behind a standing FIFO queue: each has its window in the queue's
// mix, so a flow's share is its share of the windows (both above a BDP of 40 packets
// together, neither dropped by the unlimited queue).
std::vector<double> fixed_window_shares(int w0, int w1) {
  FlowSpec a, b;
  a.scheme = "fixed:window=" + std::to_string(w0);
  b.scheme = "fixed:window=" + std::to_string(w1);
  b.start_ms = 500;
  Simulator sim(parse_link_spec("rate_mbps=12,delay_ms=20"), {a, b}, 1);
  sim.run_until(20000);
  return shares(sim, 5000);
}

TEST(SharedLink, EqualFixedWindowsSplitTheLinkEvenly) {
  const auto s = fixed_window_shares(50, 50);
  EXPECT_NEAR(s[0], 0.5, 0.02);
  EXPECT_NEAR(s[1], 0.5, 0.02);
}

TEST(SharedLink, UnequalFixedWindowsSplitItInProportion) {
  const auto s = fixed_window_shares(30, 90);
  EXPECT_NEAR(s[0], 0.25, 0.02);
  EXPECT_NEAR(s[1], 0.75, 0.02);
}

TEST(SharedLink, AckNoiseIsTwoPacketTimesAtTheMeanRateCapped) {
  EXPECT_DOUBLE_EQ(shared_ack_jitter_ms(parse_link_spec("rate_mbps=24,delay_ms=20")), 1.0);
  EXPECT_DOUBLE_EQ(shared_ack_jitter_ms(parse_link_spec("rate_mbps=12,delivery=poisson")), 2.0);
  EXPECT_DOUBLE_EQ(
      shared_ack_jitter_ms(parse_link_spec("burst_packets=2,burst_period_ms=4")), 4.0);
  EXPECT_DOUBLE_EQ(shared_ack_jitter_ms(parse_link_spec("rate_mbps=0.5")), kSharedAckJitterMaxMs);
}

}  // namespace
}  // namespace ccgym
