#include "emulators/cpp/vec_simulator.hh"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "emulators/cpp/spec.hh"
#include "policies/cpp/actions.hh"
#include "policies/cpp/controller.hh"
#include "policies/cpp/features.hh"
#include "policies/cpp/policy_action.hh"

namespace ccgym {

int default_threads(std::size_t flows) {
  const auto cores = static_cast<std::size_t>(usable_cores());
  return static_cast<int>(std::clamp<std::size_t>(flows / kMinFlowsPerThread, 1, cores));
}

VecSimulator::VecSimulator(std::size_t n, int threads)
    : sims_(n), rows_(n), stale_(n, 1), requested_threads_(threads) {
  if (threads < 0) throw std::invalid_argument("threads must be >= 0 (0: chosen by size)");
}

VecSimulator::~VecSimulator() = default;

void VecSimulator::reset(std::size_t i, const std::string& link, uint64_t seed, double window) {
  FlowSpec flow;
  flow.scheme = kExternalScheme;
  reset_flows(i, link, seed, {flow}, window);
}

void VecSimulator::reset_flows(std::size_t i, const std::string& link, uint64_t seed,
                               const std::vector<FlowSpec>& flows, double window) {
  if (i >= sims_.size()) throw std::out_of_range("no such environment");
  const std::shared_ptr<const LinkSpec> spec = cached_link_spec(link);  // parsed once
  auto sim = std::make_unique<Simulator>(*spec, flows, seed, /*record_log=*/false,
                                         /*start_spread_ms=*/0);
  SimRows rows;
  for (std::size_t f = 0; f < flows.size(); ++f) {
    if (!sim->external(f)) continue;
    sim->external(f)->set_window(window);
    rows.flows.push_back(static_cast<uint32_t>(f));
  }
  if (rows.flows.empty()) throw std::invalid_argument("a simulation needs an external flow");
  rows.previous.assign(rows.flows.size(), kHoldAction);
  rows.delay.assign(rows.flows.size(), spec->delay_ms);
  // The slices balance flows: a simulation with more or fewer of them redraws them.
  dirty_ = dirty_ || !sims_[i] || rows.flows != rows_[i].flows ||
           sims_[i]->num_flows() != sim->num_flows();
  sims_[i] = std::move(sim);
  rows_[i] = std::move(rows);
  stale_[i] = 1;
}

void VecSimulator::advance(std::size_t i, double until_ms) {
  sim(i).run_until(until_ms);
  sim(i).clear_step_stats();
  stale_[i] = 1;
}

Simulator& VecSimulator::sim(std::size_t i) {
  if (i >= sims_.size()) throw std::out_of_range("no such environment");
  if (!sims_[i]) throw std::invalid_argument("environment not reset");
  return *sims_[i];
}

VecSimulator::Layout& VecSimulator::layout() {
  if (dirty_) rebuild_layout();
  return layout_;
}

std::size_t VecSimulator::rows() { return layout().flow.size(); }

std::size_t VecSimulator::row_begin(std::size_t i) {
  if (i > sims_.size()) throw std::out_of_range("no such environment");
  return layout().begin[i];
}

const std::vector<uint32_t>& VecSimulator::row_flows() { return layout().flow; }

void VecSimulator::rebuild_layout() {
  Layout& l = layout_;
  l.begin.assign(1, 0);
  l.flow.clear();
  std::size_t flows = 0;
  for (std::size_t i = 0; i < sims_.size(); ++i) {
    flows += sim(i).num_flows();
    l.flow.insert(l.flow.end(), rows_[i].flows.begin(), rows_[i].flows.end());
    l.begin.push_back(l.flow.size());
  }
  l.obs.assign(l.flow.size() * obs_dim(), 0.0f);
  l.stats.assign(l.flow.size() * kStatColumns, 0.0);
  std::fill(stale_.begin(), stale_.end(), 1);
  const std::size_t n = sims_.size();
  threads_ = requested_threads_ > 0 ? static_cast<int>(std::min<std::size_t>(
                                          static_cast<std::size_t>(requested_threads_), n))
                                    : default_threads(flows);
  threads_ = std::max(1, threads_);
  // Contiguous chunks with about equal numbers of flows: a flow's packets are the work.
  const auto threads = static_cast<std::size_t>(threads_);
  chunks_per_thread_ =
      std::clamp<std::size_t>(n / (threads * kMinSimsPerChunk), 1, kChunksPerThread);
  const std::size_t chunks = threads * chunks_per_thread_;
  l.slice.assign(1, 0);
  std::size_t done = 0;
  for (std::size_t part = 1; part < chunks; ++part) {
    const std::size_t goal = flows * part / chunks;
    std::size_t i = l.slice.back();
    while (i < n && done + sims_[i]->num_flows() <= goal) done += sims_[i++]->num_flows();
    l.slice.push_back(i);
  }
  l.slice.push_back(n);
  if (!workers_ || workers_->threads() != threads_ || !workers_->usable() ||
      workers_->chunks() != static_cast<int>(chunks)) {
    make_workers();
  }
  tuner_ = ThreadTuner{};
  tuner_.adaptive = requested_threads_ == 0 && threads_ > 1;
  dirty_ = false;
}

int VecSimulator::previous_action(std::size_t row) {
  const Layout& l = layout();
  if (row >= l.flow.size()) throw std::out_of_range("no such row");
  const auto i = static_cast<std::size_t>(std::upper_bound(l.begin.begin(), l.begin.end(), row) -
                                          l.begin.begin()) - 1;
  return rows_[i].previous[row - l.begin[i]];
}

void VecSimulator::record_sim(std::size_t i, uint64_t capacity_bytes, bool stepped) {
  Simulator& s = *sims_[i];
  const double active_flows = static_cast<double>(s.active_flows());
  double classic_flows = 0, classic_in_flight = 0;
  for (std::size_t f = 0; f < s.num_flows(); ++f) {
    if (s.external(f) != nullptr || !s.sender(f).active(s.now_ms())) continue;
    classic_flows += 1;
    classic_in_flight += static_cast<double>(s.sender(f).in_flight());
  }
  if (classic_flows > 0) classic_in_flight /= classic_flows;
  const std::size_t first = layout_.begin[i];
  for (std::size_t r = first; r < layout_.begin[i + 1]; ++r) {
    const uint32_t f = layout_.flow[r];
    SenderModel& sender = s.sender(f);
    sender.features().observation_into(observation_version_, sender.window(),
                                       rows_[i].previous[r - first], s.now_ms(),
                                       layout_.obs.data() + r * obs_dim());
    const StepStats& st = s.step_stats(f);
    double* row = layout_.stats.data() + r * kStatColumns;
    row[kStatDeliveredBytes] = st.delivered_bytes;
    row[kStatMeanDelayMs] = st.arrivals ? st.delay_sum_ms / static_cast<double>(st.arrivals)
                                        : std::numeric_limits<double>::quiet_NaN();
    row[kStatWindow] = sender.window();
    row[kStatActive] = sender.active(s.now_ms()) ? 1.0 : 0.0;
    row[kStatActiveFlows] = active_flows;
    row[kStatCapacityBytes] = static_cast<double>(capacity_bytes);
    row[kStatGrowthCeiling] = growth_ceiling(sender.features(), *s.external(f));
    row[kStatClassicFlows] = classic_flows;
    row[kStatClassicInFlight] = classic_in_flight;
    row[kStatDeliveredMbps] = st.delivered_bytes * kBitsPerByte / kStepMs / kBitsPerKbit;
    double& delay = rows_[i].delay[r - first];
    if (stepped) {
      delay = std::isnan(row[kStatMeanDelayMs]) ? delay + kStepMs : row[kStatMeanDelayMs];
    }
    row[kStatDelayMs] = delay;
  }
}

void VecSimulator::write_outputs(std::size_t first_row, std::size_t end_row) {
  const auto at = [](std::size_t index) { return static_cast<std::ptrdiff_t>(index); };
  if (out_.obs) {
    const std::size_t dim = obs_dim();
    std::copy(layout_.obs.begin() + at(first_row * dim),
              layout_.obs.begin() + at(end_row * dim), out_.obs + first_row * dim);
  }
  if (out_.columns) {  // column by column: each a run of contiguous writes
    const std::size_t rows = layout_.flow.size();
    for (std::size_t c = 0; c < kStatColumns; ++c) {
      double* column = out_.columns + c * rows;
      for (std::size_t r = first_row; r < end_row; ++r) {
        column[r] = layout_.stats[r * kStatColumns + c];
      }
    }
  }
  if (out_.experts) {
    for (std::size_t r = first_row; r < end_row; ++r) {
      const double* row = layout_.stats.data() + r * kStatColumns;
      out_.experts[r] = closest_action(row[kStatWindow], out_.targets[r], row[kStatGrowthCeiling]);
    }
  }
}

void VecSimulator::make_workers() {
  if (workers_ && !workers_->usable()) {
    workers_.release();  // a forked child: the parent's threads cannot be joined here
  }
  workers_ = std::make_unique<StepWorkers>(threads_, static_cast<int>(chunks_per_thread_),
                                           [this](int chunk) { step_chunk(chunk); });
}

void VecSimulator::step_chunk(int part) {
  const auto p = static_cast<std::size_t>(part);
  for (std::size_t i = layout_.slice[p]; i < layout_.slice[p + 1]; ++i) {
    Simulator& s = *sims_[i];
    s.clear_step_stats();
    const std::size_t first = layout_.begin[i];
    for (std::size_t r = first; r < layout_.begin[i + 1]; ++r) {
      const int a = actions_[r];
      if (a < 0) continue;
      take_policy_action(s.sender(layout_.flow[r]).features(), *s.external(layout_.flow[r]), a);
      rows_[i].previous[r - first] = a;
    }
    const uint64_t before = s.data_direction().opportunity_count();
    s.run_until(s.now_ms() + kStepMs);
    record_sim(i, (s.data_direction().opportunity_count() - before) * kOpportunityBytes, true);
    stale_[i] = 0;
  }
  write_outputs(layout_.begin[layout_.slice[p]], layout_.begin[layout_.slice[p + 1]]);
}

void VecSimulator::step(const int32_t* actions, const StepOutputs& out) {
  Layout& l = layout();
  for (std::size_t r = 0; r < l.flow.size(); ++r) {
    if (actions[r] >= kNumActions) throw std::invalid_argument("action out of range");
  }
  if (out.experts && !out.targets) throw std::invalid_argument("experts need targets");
  if (!workers_->usable()) make_workers();  // a forked child: threads of its own
  actions_ = actions;
  out_ = out;
  if (threads_ == 1 || !tuner_.start_step(ThreadTuner::Clock::now())) {
    // On the caller alone: the same chunks in the same order, so the same results.
    for (int c = 0; c < workers_->chunks(); ++c) step_chunk(c);
  } else {
    workers_->run();
  }
  actions_ = nullptr;
  out_ = {};
}

namespace {

ThreadTuner::Clock::duration median(ThreadTuner::Clock::duration* first,
                                    ThreadTuner::Clock::duration* last) {
  auto* middle = first + (last - first) / 2;
  std::nth_element(first, middle, last);
  return *middle;
}

}  // namespace

void ThreadTuner::decide(bool threads_faster) {
  const bool again = !threads_faster || (decided && parallel);
  period = again ? std::min(2 * period, kMaxTunePeriodSteps) : kTunePeriodSteps;
  parallel = threads_faster;
  decided = true;
  probing = false;
}

bool ThreadTuner::start_step(Clock::time_point now) {
  if (!adaptive) return true;
  if (steps == 0) {
    probing = true;
    alone_total = threads_total = Clock::duration::zero();
  }
  if (steps >= 1 && steps <= 2 * kProbeSteps) {
    const auto took = now - last_start;
    probe[steps - 1] = took;
    (steps <= kProbeSteps ? alone_total : threads_total) += took;
  }
  if (probing && steps > kProbeSteps) {
    auto* const alone = probe.data();
    auto* const threads = alone + kProbeSteps;
    if (threads_total > alone_total) {
      decide(false);  // already slower in all than the caller's whole probe
    } else if (steps == 2 * kProbeSteps) {
      const double alone_median = std::chrono::duration<double>(median(alone, threads)).count();
      const double threads_median =
          std::chrono::duration<double>(median(threads, alone + probe.size())).count();
      decide(threads_median < (1 - kThreadsMustSave) * alone_median);
    }
  }
  last_start = now;
  const uint64_t step = steps;
  steps = steps + 1 == period ? 0 : steps + 1;
  if (step < kProbeSteps) return false;
  return probing || parallel;
}

// Simulations reset since the last step have not been recorded: their first observation,
// and statistics of nothing (no step yet, capacity 0).
void VecSimulator::record_stale() {
  layout();
  for (std::size_t i = 0; i < sims_.size(); ++i) {
    if (!stale_[i]) continue;
    record_sim(i, 0, false);
    stale_[i] = 0;
  }
}

void VecSimulator::set_observation_version(int version) {
  if (observation_dim(version) < 0) {
    throw std::invalid_argument("observation version " + std::to_string(version) +
                                " is not computed by this build");
  }
  observation_version_ = version;
  dirty_ = true;  // the rows' observations are laid out again, at the new length
}

void VecSimulator::observations(float* out) {
  record_stale();
  std::copy(layout_.obs.begin(), layout_.obs.end(), out);
}

void VecSimulator::stats(double* out) {
  record_stale();
  std::copy(layout_.stats.begin(), layout_.stats.end(), out);
}

void VecSimulator::closest_actions(const double* targets, int32_t* out) {
  Layout& l = layout();
  for (std::size_t i = 0; i < sims_.size(); ++i) {
    Simulator& s = *sims_[i];
    for (std::size_t r = l.begin[i]; r < l.begin[i + 1]; ++r) {
      SenderModel& sender = s.sender(l.flow[r]);
      const double ceiling = growth_ceiling(sender.features(), *s.external(l.flow[r]));
      out[r] = closest_action(sender.window(), targets[r], ceiling);
    }
  }
}

}  // namespace ccgym
