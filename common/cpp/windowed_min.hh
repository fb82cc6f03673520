// A windowed minimum, for the schemes' filters (copa's standing RTT) and the learned flow's
// competitive mode (the least gap between two datagrams sent back to back).
#pragma once
#include <cstddef>
#include <limits>
#include <vector>

namespace ccgym {

// Minimum of (time, value) samples over a sliding time window, as a monotonic
// deque on a growable ring: O(1) amortized per sample, and no allocation once
// the ring has grown to the longest run of rising samples in a window.
class WindowedMin {
 public:
  explicit WindowedMin(std::size_t capacity = 256) : items_(round_up(capacity)) {}

  // Adds a sample at t_ms and forgets samples older than t_ms - window_ms.
  void add(double t_ms, double value, double window_ms) {
    while (count_ > 0 && back().value >= value) --count_;
    if (count_ == items_.size()) grow();
    items_[(head_ + count_) & mask()] = Sample{t_ms, value};
    ++count_;
    expire(t_ms, window_ms);
  }
  void expire(double now_ms, double window_ms) {
    // The newest sample stays: a window shorter than the sample spacing still has a minimum.
    while (count_ > 1 && items_[head_].t_ms < now_ms - window_ms) {
      head_ = (head_ + 1) & mask();
      --count_;
    }
  }
  bool empty() const { return count_ == 0; }
  double min() const {
    return count_ ? items_[head_].value : std::numeric_limits<double>::infinity();
  }

 private:
  struct Sample {
    double t_ms;
    double value;
  };
  static std::size_t round_up(std::size_t n) {
    std::size_t c = 1;
    while (c < n) c <<= 1;
    return c;
  }
  std::size_t mask() const { return items_.size() - 1; }
  const Sample& back() const { return items_[(head_ + count_ - 1) & mask()]; }
  void grow() {
    std::vector<Sample> bigger(items_.size() * 2);
    for (std::size_t i = 0; i < count_; ++i) bigger[i] = items_[(head_ + i) & mask()];
    items_.swap(bigger);
    head_ = 0;
  }
  std::vector<Sample> items_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
};

}  // namespace ccgym
