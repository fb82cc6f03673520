#include "emulators/cpp/step_workers.hh"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

namespace ccgym {

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

namespace {

// Pauses before sleeping: some 10-100 us, by the processor (a pause is 10-150 cycles).
// Longer than a hand-off between running cores, shorter than the Python between two steps
// of an environment with a policy in the loop, after which a waiting thread sleeps and
// leaves the core to others.
constexpr int kSpins = 2000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Returns once `value` differs from `old`: spins first, then sleeps.
template <typename T>
void await_change(const std::atomic<T>& value, T old) {
  for (int i = 0; i < kSpins; ++i) {
    if (value.load(std::memory_order_acquire) != old) return;
    cpu_relax();
  }
  while (value.load(std::memory_order_acquire) == old) value.wait(old, std::memory_order_acquire);
}

}  // namespace

StepWorkers::StepWorkers(int threads, int chunks_per_thread, std::function<void(int)> work)
    : threads_(threads < 1 ? 1 : threads),
      per_thread_(chunks_per_thread < 1 ? 1 : chunks_per_thread),
      work_(std::move(work)),
      owner_(getpid()),
      claims_(std::make_unique<Claim[]>(static_cast<std::size_t>(threads_ * per_thread_))),
      chunks_(threads_ * per_thread_) {
  threads_list_.reserve(static_cast<std::size_t>(threads_ - 1));
  for (int t = 1; t < threads_; ++t) threads_list_.emplace_back([this, t] { loop(t); });
}

StepWorkers::~StepWorkers() {
  if (!usable()) {
    // The threads were the parent's: nothing here can join or detach them, and a
    // joinable std::thread must not be destroyed, so their handles are left behind.
    new std::vector<std::thread>(std::move(threads_list_));
    return;
  }
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (auto& t : threads_list_) t.join();
}

bool StepWorkers::usable() const { return getpid() == owner_; }

bool StepWorkers::run_chunk(int chunk, uint32_t generation) {
  // Every chunk was claimed in the previous generation (run() waits for them all), so the
  // first claim of this one finds generation - 1; a worker that woke a generation late
  // finds a newer value and takes nothing. A claim already taken is seen by a read, which
  // leaves the line shared, before an exchange that would take it.
  std::atomic<uint32_t>& claim = claims_[static_cast<std::size_t>(chunk)].generation;
  uint32_t expected = generation - 1;
  if (claim.load(std::memory_order_relaxed) != expected ||
      !claim.compare_exchange_strong(expected, generation, std::memory_order_acq_rel,
                                     std::memory_order_relaxed)) {
    return false;
  }
  work_(chunk);
  return true;
}

void StepWorkers::work_through(int thread, uint32_t generation) {
  int ran = 0;
  const int own = thread * per_thread_;
  for (int k = 0; k < per_thread_; ++k) ran += run_chunk(own + k, generation);
  count_done(ran);  // before looking for more: the caller may be waiting for these
  for (int t = 1; t < threads_; ++t) {  // then the next threads', each from its end
    const int first = (thread + t) % threads_ * per_thread_;
    for (int k = per_thread_ - 1; k >= 0; --k) count_done(run_chunk(first + k, generation));
  }
}

void StepWorkers::count_done(int ran) {
  if (ran > 0 && done_.fetch_add(ran, std::memory_order_acq_rel) + ran == chunks_) {
    done_.notify_one();
  }
}

void StepWorkers::run() {
  const int chunks = this->chunks();
  done_.store(0, std::memory_order_relaxed);
  const uint32_t generation = generation_.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (threads_ > 1) generation_.notify_all();
  work_through(0, generation);
  for (int done = done_.load(std::memory_order_acquire); done != chunks;
       done = done_.load(std::memory_order_acquire)) {
    await_change(done_, done);
  }
}

void StepWorkers::loop(int thread) {
  // The threads start before the first run() can bump the counter from 0; reading it
  // here instead could miss that bump and wait forever.
  uint32_t seen = 0;
  for (;;) {
    await_change(generation_, seen);
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;
    work_through(thread, seen);
  }
}

}  // namespace ccgym
