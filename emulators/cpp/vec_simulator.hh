// N independent single-flow simulations whose window a learned policy sets every kStepMs:
// the engine of the vectorized environment (envs/vector.py) and of DAgger's rollouts. One
// call steps them all, on threads; observations and per-step statistics come out as flat
// row-major arrays the binding hands to numpy.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "emulators/cpp/simulator.hh"

namespace ccgym {

// Columns of VecSimulator::stats(), one row per simulation, for the last step: bytes
// delivered, mean one-way delay of the packets that arrived (ms; NaN if none), the window.
inline constexpr std::size_t kStatDeliveredBytes = 0;
inline constexpr std::size_t kStatMeanDelayMs = 1;
inline constexpr std::size_t kStatWindow = 2;
inline constexpr std::size_t kStatColumns = 3;

class VecSimulator {
 public:
  VecSimulator(std::size_t n, int threads);
  VecSimulator(const VecSimulator&) = delete;
  VecSimulator& operator=(const VecSimulator&) = delete;

  std::size_t size() const { return sims_.size(); }
  // Starts simulation i afresh on `link` with one external flow at `window`.
  void reset(std::size_t i, const std::string& link, uint64_t seed, double window);
  // Simulation i; std::out_of_range for no such one, std::invalid_argument if never reset.
  Simulator& sim(std::size_t i);
  // Applies actions[i] to simulation i (-1 leaves its window), then runs all kStepMs.
  void step(const int32_t* actions);
  int previous_action(std::size_t i) const { return previous_action_.at(i); }
  // size() x kObsDim observations, written to out.
  void observations(float* out);
  // size() x kStatColumns statistics of the last step, written to out.
  void stats(double* out);

 private:
  std::vector<std::unique_ptr<Simulator>> sims_;
  std::vector<Simulator*> stepping_;  // reused by step(): no allocation per step
  std::vector<int> previous_action_;
  int threads_;
};

}  // namespace ccgym
