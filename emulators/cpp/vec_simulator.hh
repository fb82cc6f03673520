// N independent simulations whose external flows a learned policy drives every kStepMs: the
// engine of the vectorized environments (envs/) and of DAgger's rollouts. Each simulation
// holds one or more external flows (the learned ones) beside any classic competitors, each
// flow with its own start and stop time. One call steps every external flow of every
// simulation; observations and per-step statistics come out as flat row-major arrays, one
// row per external flow ("row"), rows ordered by simulation, then by flow within it.
//
// Stepping scales with cores: worker threads live as long as the VecSimulator, each owns
// fixed chunks of the simulations (balanced by their flows), and a step costs one hand-off
// (step_workers.hh). Buffers are sized at reset, never per step. What a step's caller does
// between steps is the part that more threads cannot speed up, so the threads also write the
// step's results where the caller wants them (StepOutputs) and compute what the envs would
// otherwise compute after the step: the delivered rate, the step's delay, the expert action.
#pragma once
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "emulators/cpp/simulator.hh"
#include "emulators/cpp/step_workers.hh"

namespace ccgym {

// Columns of VecSimulator::stats(), one row per external flow, for the last step: bytes
// delivered, mean one-way delay of the packets that arrived (ms; NaN if none), the window,
// whether the flow sends at the step's end (1: started, not stopped), how many flows of its
// simulation send then (classic ones included), the bytes the link could carry during the
// step (its delivery opportunities), the flow's growth ceiling (actions.hh) now, and of its
// simulation's classic (not external) flows sending now: how many, and their mean packets in
// flight (0 if none) - what the shared-link expert (oracle/shared.py) matches. The last two
// are what the envs report and reward (envs/engine.py's Rewards reads them; this is the one
// place they are computed): the delivered rate (Mbit/s over the step) and the step's delay
// (ms): the mean of the step's arrivals, else the last step's plus kStepMs, from the link's
// propagation delay at reset. Both are computed on the step's threads, not after the step on
// the caller's.
inline constexpr std::size_t kStatDeliveredBytes = 0;
inline constexpr std::size_t kStatMeanDelayMs = 1;
inline constexpr std::size_t kStatWindow = 2;
inline constexpr std::size_t kStatActive = 3;
inline constexpr std::size_t kStatActiveFlows = 4;
inline constexpr std::size_t kStatCapacityBytes = 5;
inline constexpr std::size_t kStatGrowthCeiling = 6;
inline constexpr std::size_t kStatClassicFlows = 7;
inline constexpr std::size_t kStatClassicInFlight = 8;
inline constexpr std::size_t kStatDeliveredMbps = 9;
inline constexpr std::size_t kStatDelayMs = 10;
inline constexpr std::size_t kStatColumns = 11;

// Bytes over a step to Mbit/s: bytes x 8 / ms / 1000 (envs/engine.py's capacity_mbps too).
inline constexpr double kBitsPerByte = 8;
inline constexpr double kBitsPerKbit = 1000;

// Where a step also writes its results, besides the buffers that observations() and
// stats() copy from: each thread writes its own rows, so the caller copies nothing after
// the step. The statistics come by column, each a contiguous array (what numpy reads
// fastest). Every pointer may be null (nothing written); experts needs targets.
struct StepOutputs {
  float* obs = nullptr;              // rows() x obs_dim(), as observations()
  double* columns = nullptr;         // kStatColumns x rows(): stats() transposed
  const double* targets = nullptr;   // rows(): a window per row, read
  int64_t* experts = nullptr;        // rows(): closest_actions(targets), as it would after
};

// The default number of threads spreads at least this many flows onto each, so 8 flows run
// on the caller alone, with no worker and no tuner. A step of 8 flows takes some tens of
// microseconds, as long as a worker takes to wake, and what a second thread can save there is
// small where it saves anything: 1.16x on the developers' quiet 2 cores, at best 1.26x on
// 16, against 0.72x of one thread on a fresh 2-core machine (issue 61; benchmarks/bench_env.py,
// docs/design.md "How it scales"). From 16 flows the threads pay more often (1.44x at 32 on
// 2 quiet cores), and the tuner keeps them from costing where they do not.
inline constexpr std::size_t kMinFlowsPerThread = 8;
// Chunks each thread owns: finer than one per thread, so that a thread that is late (a busy
// machine) leaves only part of its share to the others, and at the step's end one waits for
// the other's last chunk, which is short; but at least kMinSimsPerChunk simulations each.
inline constexpr std::size_t kChunksPerThread = 16;
inline constexpr std::size_t kMinSimsPerChunk = 2;

// With the default thread count, whether a step runs on the threads or on the caller alone
// is measured, not assumed: on a machine whose cores are busy with other work a thread may
// be preempted inside its chunk, and every step then waits for it. Each probe runs
// kProbeSteps steps on the caller alone, then kProbeSteps on the threads, and the faster
// runs until the next probe. A step is timed from its start to the next step's start, so
// that the caller's own work between steps counts too (a worker spinning for the next step
// takes a busy core from it), and the threads win if their median is kThreadsMustSave
// lower than the caller's alone: one step on the caller that paused between steps to
// train decides nothing, and where both are about as fast (a busy machine) the caller runs
// alone, since the default must never be slower than one thread. The threads' half of a
// probe ends, the caller winning, as soon as its steps have taken longer in all than the
// caller's whole half: a step that waits for a worker preempted mid-chunk (a busy machine)
// can take a scheduler's time slice, milliseconds, and without that bound every probe
// would pay kProbeSteps of them while its median chose the caller anyway. The next probe
// comes kTunePeriodSteps steps later or, each time the same side wins again (the caller
// alone, from its first win), twice as late, up to kMaxTunePeriodSteps: a probe runs
// kProbeSteps steps on the losing side at most, so where one side keeps winning, probing
// costs little. Only the wall-clock time of the steps is read, to choose; the results are
// the same either way (the simulations never read a clock).
inline constexpr uint64_t kTunePeriodSteps = 2048;
inline constexpr uint64_t kMaxTunePeriodSteps = 65536;
inline constexpr uint64_t kProbeSteps = 32;
inline constexpr double kThreadsMustSave = 0.05;

struct ThreadTuner {
  using Clock = std::chrono::steady_clock;
  bool adaptive = false;  // off: always on the threads
  bool parallel = true;   // the choice of the last probe
  bool decided = false;   // a probe has chosen
  bool probing = false;   // in this period's probe, not yet decided
  uint64_t steps = 0;     // steps begun in this period
  uint64_t period = kTunePeriodSteps;
  std::array<Clock::duration, 2 * kProbeSteps> probe{};  // on the caller, then on the threads
  // The probe's sums so far, on the caller and on the threads: kept as the steps come, so
  // that the early end compares two numbers rather than summing the probe on every step.
  Clock::duration alone_total{};
  Clock::duration threads_total{};
  Clock::time_point last_start{};
  // At the start of a step: times the previous one, then says where this one runs.
  bool start_step(Clock::time_point now);

 private:
  void decide(bool threads_faster);
};

class VecSimulator {
 public:
  // threads: 0 chooses by size (default_threads()) and, step by step, between those
  // threads and the caller alone (ThreadTuner); else that many (at most one per simulation).
  VecSimulator(std::size_t n, int threads);
  ~VecSimulator();
  VecSimulator(const VecSimulator&) = delete;
  VecSimulator& operator=(const VecSimulator&) = delete;

  std::size_t size() const { return sims_.size(); }
  // Starts simulation i afresh on `link` with one external flow at `window`. Each distinct
  // spec is parsed once in the process (cached_link_spec), not once per episode.
  void reset(std::size_t i, const std::string& link, uint64_t seed, double window);
  // Starts simulation i afresh with `flows`; those whose scheme is kExternalScheme are its rows,
  // each starting at `window`. std::invalid_argument if none is external. Flows start at the
  // instants asked, together ones too (no kTogetherStartSpreadMs): an environment draws its
  // flows' starts itself (envs/competitors.py) and acts on them (which flows act, the expert's
  // split, the fair share).
  void reset_flows(std::size_t i, const std::string& link, uint64_t seed,
                   const std::vector<FlowSpec>& flows, double window);
  // Simulation i; std::out_of_range for no such one, std::invalid_argument if never reset.
  Simulator& sim(std::size_t i);

  // Runs simulation i alone to until_ms, its windows as they are: a start before the
  // learned flows' (competitors that started earlier). Its statistics then describe no step.
  void advance(std::size_t i, double until_ms);

  // Rows (external flows) of all simulations; every simulation must have been reset.
  std::size_t rows();
  // The first row of simulation i; row_begin(size()) == rows().
  std::size_t row_begin(std::size_t i);
  // The flow index within its simulation of each row, in row order.
  const std::vector<uint32_t>& row_flows();

  // Applies actions[r] to row r's flow (-1 leaves its window), then runs every simulation
  // kStepMs further, each from its own clock; writes the results to `out` too.
  void step(const int32_t* actions, const StepOutputs& out = {});
  // The last action applied to row r's flow (kHoldAction since its reset).
  int previous_action(std::size_t row);
  // rows() x obs_dim() observations, written to out.
  void observations(float* out);
  // Which observation every row reads (kObservationVersions; kObservationVersion until set):
  // std::invalid_argument for another. Set before the first step after a reset.
  void set_observation_version(int version);
  int observation_version() const { return observation_version_; }
  std::size_t obs_dim() const { return static_cast<std::size_t>(observation_dim(observation_version_)); }
  // rows() x kStatColumns statistics of the last step, written to out.
  void stats(double* out);
  // The action of each row whose result (within its growth ceiling) is closest to
  // targets[r]: the expert's label for the oracle's windows.
  void closest_actions(const double* targets, int32_t* out);
  // Threads a step runs on (chosen when the rows are laid out, after the resets).
  int threads() {
    layout();
    return threads_;
  }

 private:
  struct SimRows {
    std::vector<uint32_t> flows;  // the simulation's external flows
    std::vector<int> previous;    // the last action applied to each
    std::vector<double> delay;    // each one's last step's delay (kStatDelayMs)
  };
  struct Layout {
    std::vector<std::size_t> begin;  // size() + 1 row offsets
    std::vector<uint32_t> flow;      // per row
    std::vector<float> obs;          // rows x obs_dim(), written by step()
    std::vector<double> stats;       // rows x kStatColumns, written by step()
    std::vector<std::size_t> slice;  // chunks + 1 simulation offsets (step_workers.hh)
  };
  Layout& layout();
  void rebuild_layout();
  void step_chunk(int chunk);
  void make_workers();
  // stepped: after a step (the delays move on), else after a reset (capacity 0).
  void record_sim(std::size_t i, uint64_t capacity_bytes, bool stepped);
  void write_outputs(std::size_t first_row, std::size_t end_row);
  void record_stale();

  std::vector<std::unique_ptr<Simulator>> sims_;
  std::vector<SimRows> rows_;    // per simulation
  std::vector<uint8_t> stale_;   // per simulation: reset since its rows were recorded
  Layout layout_;
  bool dirty_ = true;  // a reset changed the rows
  const int32_t* actions_ = nullptr;  // of the step under way
  StepOutputs out_;                   // of the step under way
  int requested_threads_;
  int observation_version_ = kObservationVersion;
  int threads_ = 1;
  std::size_t chunks_per_thread_ = 1;
  std::unique_ptr<StepWorkers> workers_;
  ThreadTuner tuner_;
};

// The default thread count for simulations holding `flows` flows in all: one per
// kMinFlowsPerThread flows, at most one per core this process may use (usable_cores()).
int default_threads(std::size_t flows);

}  // namespace ccgym
