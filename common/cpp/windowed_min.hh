// A windowed minimum, for the schemes' filters (copa's standing RTT) and the learned flow's
// competitive mode (the least of its seconds' median packet-pair gaps).
#pragma once
#include <cstddef>
#include <limits>

#include "common/cpp/ring.hh"

namespace ccgym {

// Minimum of (time, value) samples over a sliding time window, as a monotonic
// deque on a Ring: O(1) amortized per sample, and no allocation once the ring has
// grown to the longest run of rising samples in a window.
class WindowedMin {
 public:
  explicit WindowedMin(std::size_t capacity = 256) : items_(capacity) {}

  // Adds a sample at t_ms and forgets samples older than t_ms - window_ms.
  void add(double t_ms, double value, double window_ms) {
    while (!items_.empty() && items_.back().value >= value) items_.pop_back();
    items_.push_back(Sample{t_ms, value});
    expire(t_ms, window_ms);
  }
  void expire(double now_ms, double window_ms) {
    // The newest sample stays: a window shorter than the sample spacing still has a minimum.
    while (items_.size() > 1 && items_.front().t_ms < now_ms - window_ms) items_.pop_front();
  }
  bool empty() const { return items_.empty(); }
  double min() const {
    return items_.empty() ? std::numeric_limits<double>::infinity() : items_.front().value;
  }

 private:
  struct Sample {
    double t_ms;
    double value;
  };
  Ring<Sample> items_;
};

}  // namespace ccgym
