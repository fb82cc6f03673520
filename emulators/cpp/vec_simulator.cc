#include "emulators/cpp/vec_simulator.hh"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "emulators/cpp/spec.hh"
#include "policies/cpp/actions.hh"
#include "policies/cpp/features.hh"
#include "policies/cpp/policy_action.hh"

namespace ccgym {

VecSimulator::VecSimulator(std::size_t n, int threads)
    : sims_(n), previous_action_(n, kHoldAction), threads_(threads) {
  stepping_.reserve(n);
}

void VecSimulator::reset(std::size_t i, const std::string& link, uint64_t seed, double window) {
  if (i >= sims_.size()) throw std::out_of_range("no such environment");
  FlowSpec flow;
  flow.scheme = "external";
  sims_[i] = std::make_unique<Simulator>(parse_link_spec(link), std::vector<FlowSpec>{flow}, seed,
                                         /*record_log=*/false);
  sims_[i]->external(0)->set_window(window);
  previous_action_[i] = kHoldAction;
}

Simulator& VecSimulator::sim(std::size_t i) {
  if (i >= sims_.size()) throw std::out_of_range("no such environment");
  if (!sims_[i]) throw std::invalid_argument("environment not reset");
  return *sims_[i];
}

void VecSimulator::step(const int32_t* actions) {
  stepping_.clear();
  for (std::size_t i = 0; i < sims_.size(); ++i) {
    Simulator& s = sim(i);
    const int a = actions[i];
    if (a >= kNumActions) throw std::invalid_argument("action out of range");
    s.clear_step_stats();
    if (a >= 0) {
      take_policy_action(s.sender(0).features(), *s.external(0), a);
      previous_action_[i] = a;
    }
    stepping_.push_back(&s);
  }
  // The slots share one clock: every episode starts and ends together (envs/vector.py).
  const double until = sims_.empty() ? 0 : sim(0).now_ms() + kStepMs;
  run_all_until(stepping_, until, threads_);
}

void VecSimulator::observations(float* out) {
  for (std::size_t i = 0; i < sims_.size(); ++i) {
    Simulator& s = sim(i);
    SenderModel& sender = s.sender(0);
    const auto obs =
        sender.features().observation(sender.window(), previous_action_[i], s.now_ms());
    std::copy(obs.begin(), obs.end(), out + i * kObsDim);
  }
}

void VecSimulator::stats(double* out) {
  for (std::size_t i = 0; i < sims_.size(); ++i) {
    Simulator& s = sim(i);
    const StepStats& st = s.step_stats(0);
    double* row = out + i * kStatColumns;
    row[kStatDeliveredBytes] = st.delivered_bytes;
    row[kStatMeanDelayMs] = st.arrivals ? st.delay_sum_ms / static_cast<double>(st.arrivals)
                                        : std::numeric_limits<double>::quiet_NaN();
    row[kStatWindow] = s.sender(0).window();
  }
}

}  // namespace ccgym
