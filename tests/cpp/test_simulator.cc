// The simulator stepped on the thread pool gives what it gives serially.
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

}  // namespace
}  // namespace ccgym
