#include "emulators/cpp/step_workers.hh"

#include <unistd.h>

namespace ccgym {

namespace {

// About 10-50 us of spinning: longer than a hand-off between busy cores, shorter than the
// Python between two steps, after which a waiting thread sleeps and leaves the core free.
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

StepWorkers::StepWorkers(int parts, std::function<void(int)> work)
    : parts_(parts < 1 ? 1 : parts), work_(std::move(work)), owner_(getpid()) {
  threads_.reserve(static_cast<std::size_t>(parts_ - 1));
  for (int p = 1; p < parts_; ++p) threads_.emplace_back([this, p] { loop(p); });
}

StepWorkers::~StepWorkers() {
  if (!usable()) {
    // The threads were the parent's: nothing here can join or detach them, and a
    // joinable std::thread must not be destroyed, so their handles are left behind.
    new std::vector<std::thread>(std::move(threads_));
    return;
  }
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (auto& t : threads_) t.join();
}

bool StepWorkers::usable() const { return getpid() == owner_; }

void StepWorkers::run() {
  if (parts_ == 1) {
    work_(0);
    return;
  }
  pending_.store(parts_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  work_(0);
  for (int left = pending_.load(std::memory_order_acquire); left != 0;
       left = pending_.load(std::memory_order_acquire)) {
    await_change(pending_, left);
  }
}

void StepWorkers::loop(int part) {
  // The threads start before the first run() can bump the counter from 0; reading it
  // here instead could miss that bump and wait forever.
  uint32_t seen = 0;
  for (;;) {
    await_change(generation_, seen);
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;
    work_(part);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

}  // namespace ccgym
