// Threads that live as long as their owner and run one function over a fixed set of chunks,
// once per call: the stepping engine of VecSimulator. A step of a few simulations takes
// microseconds, so the hand-off must cost less: no mutex, no condition variable, no task
// queue. The caller bumps a generation counter; each worker spins on it briefly, then
// sleeps on it (std::atomic::wait, a futex on Linux).
//
// The chunks are statically owned: thread t runs its own chunks [t*k, (t+1)*k) each call, so
// a simulation stays on one core and in its cache. A thread that has finished its own takes
// any chunk not yet begun, from the end of another's range (its owner works from the
// start: they meet, rather than contend for the same chunks). So the caller never waits for
// a worker that is asleep or not scheduled (a busy machine): it runs the worker's chunks
// itself and waits only for chunks under way, and a call is never much slower than one
// thread running everything. A thread adds the chunks it ran to the shared count once for
// its own and once for each it took: in most calls, one write to that word per thread.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include <sys/types.h>

namespace ccgym {

// The cores this process may run on (its CPU affinity: what taskset or a container's cpuset
// leaves it), at least 1. std::thread::hardware_concurrency() counts the whole machine's, and
// threads beyond the cores one may use only wait for each other.
int usable_cores();

class StepWorkers {
 public:
  // threads >= 1 (threads - 1 of them start here), each owning chunks_per_thread chunks.
  StepWorkers(int threads, int chunks_per_thread, std::function<void(int)> work);
  ~StepWorkers();
  StepWorkers(const StepWorkers&) = delete;
  StepWorkers& operator=(const StepWorkers&) = delete;

  int threads() const { return threads_; }
  int chunks() const { return chunks_; }
  // Runs work(c) once for every chunk c; returns when all are done. One caller at a time.
  void run();
  // False in a child forked after the threads started: they do not exist there.
  bool usable() const;

 private:
  void loop(int thread);
  // Runs every chunk of this generation it can claim, its own first.
  void work_through(int thread, uint32_t generation);
  // Claims chunk c for this generation and runs it; false if another thread had it.
  bool run_chunk(int chunk, uint32_t generation);
  // Adds chunks run to done_, waking the caller if they were the last.
  void count_done(int ran);

  // A claim word on a cache line of its own: a thread claiming its own chunks does not
  // take the line from another that is reading its neighbours' claims.
  struct alignas(64) Claim {
    std::atomic<uint32_t> generation{0};  // the generation that last claimed the chunk
  };

  int threads_;
  int per_thread_;
  std::function<void(int)> work_;
  std::vector<std::thread> threads_list_;
  pid_t owner_;
  std::atomic<uint32_t> generation_{0};  // bumped once per run(); 32 bits: a futex word
  std::atomic<int> done_{0};             // chunks of this run done
  std::atomic<bool> stop_{false};
  std::unique_ptr<Claim[]> claims_;
  int chunks_;
};

}  // namespace ccgym
