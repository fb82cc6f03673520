// A FIFO on a power-of-two ring that doubles when full: after warm-up a packet
// costs no allocation (std::deque allocates a block every few elements).
#pragma once
#include <cassert>
#include <cstddef>
#include <vector>

namespace ccgym {

template <typename T>
class Ring {
 public:
  explicit Ring(std::size_t capacity = 64) : items_(round_up(capacity)) {}

  bool empty() const { return count_ == 0; }
  std::size_t size() const { return count_; }
  const T& front() const { assert(count_ > 0); return items_[head_]; }
  T& front() { assert(count_ > 0); return items_[head_]; }
  const T& back() const { assert(count_ > 0); return items_[(head_ + count_ - 1) & mask()]; }
  const T& operator[](std::size_t i) const { return items_[(head_ + i) & mask()]; }
  T& operator[](std::size_t i) { return items_[(head_ + i) & mask()]; }

  void push_back(const T& item) {
    if (count_ == items_.size()) grow();
    items_[(head_ + count_) & mask()] = item;
    ++count_;
  }
  void pop_front() {
    assert(count_ > 0);
    head_ = (head_ + 1) & mask();
    --count_;
  }
  void pop_back() {
    assert(count_ > 0);
    --count_;
  }
  void clear() { head_ = 0; count_ = 0; }

 private:
  static std::size_t round_up(std::size_t n) {
    std::size_t c = 1;
    while (c < n) c <<= 1;
    return c;
  }
  std::size_t mask() const { return items_.size() - 1; }
  void grow() {
    std::vector<T> bigger(items_.size() * 2);
    for (std::size_t i = 0; i < count_; ++i) bigger[i] = items_[(head_ + i) & mask()];
    items_.swap(bigger);
    head_ = 0;
  }

  std::vector<T> items_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
};

}  // namespace ccgym
