// Threads that live as long as their owner and run one function on a fixed set of parts,
// once per call: the stepping engine of VecSimulator. A step of a few simulations takes
// microseconds, so the hand-off costs must stay below that: no mutex, no condition
// variable, no task queue. The caller bumps a generation counter; each worker spins on it
// briefly, then sleeps on it (std::atomic::wait, a futex on Linux); the caller runs part 0
// itself and waits on a countdown of the parts left the same way.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include <sys/types.h>

namespace ccgym {

class StepWorkers {
 public:
  // parts >= 1; parts - 1 threads start here and wait for run().
  StepWorkers(int parts, std::function<void(int)> work);
  ~StepWorkers();
  StepWorkers(const StepWorkers&) = delete;
  StepWorkers& operator=(const StepWorkers&) = delete;

  int parts() const { return parts_; }
  // Runs work(p) for every part p, part 0 on the calling thread; returns when all are done.
  // One caller at a time.
  void run();
  // False in a child forked after the threads started: they do not exist there.
  bool usable() const;

 private:
  void loop(int part);

  int parts_;
  std::function<void(int)> work_;
  std::vector<std::thread> threads_;
  pid_t owner_;
  std::atomic<uint32_t> generation_{0};  // bumped once per run(); 32 bits: a futex word
  std::atomic<int> pending_{0};          // parts of this run not yet done
  std::atomic<bool> stop_{false};
};

}  // namespace ccgym
