// The windowed maximum of a rate as Linux keeps bbr's (lib/minmax.c, Kathleen Nichols'
// algorithm): three samples, not one per round. The best sample, the best since a
// quarter of the window after it and the best since half the window after it; when the
// best is older than the window, the next takes its place. A rise is taken at once; a fall
// in steps between the kept samples, at times a round before or after an exact maximum
// over the window would take it.
#pragma once
#include <array>
#include <cstdint>

namespace ccgym::schemes {

class WindowedMax {
 public:
  explicit WindowedMax(uint64_t window_rounds) : window_(window_rounds) {}

  // Takes a sample at `round` (never earlier than the last one's).
  void add(uint64_t round, double value) {
    const Sample sample{round, value};
    if (value >= best_[0].value || round - best_[2].round > window_) {
      best_.fill(sample);  // a new maximum, or every kept sample out of the window
      return;
    }
    if (value >= best_[1].value) {
      best_[1] = best_[2] = sample;
    } else if (value >= best_[2].value) {
      best_[2] = sample;
    }
    const uint64_t age = round - best_[0].round;
    if (age > window_) {  // the best is out of the window: the next ones move up
      shift_in(sample);
      if (round - best_[0].round > window_) shift_in(sample);
    } else if (best_[1].round == best_[0].round && age > window_ / 4) {
      best_[1] = best_[2] = sample;  // a quarter of the window on: a second-best from here
    } else if (best_[2].round == best_[1].round && age > window_ / 2) {
      best_[2] = sample;  // half the window on: a third-best from here
    }
  }
  // The windowed maximum: the best kept sample.
  double value() const { return best_[0].value; }

 private:
  struct Sample {
    uint64_t round;
    double value;
  };
  void shift_in(const Sample& sample) {
    best_[0] = best_[1];
    best_[1] = best_[2];
    best_[2] = sample;
  }

  uint64_t window_;
  std::array<Sample, 3> best_{};
};

}  // namespace ccgym::schemes
