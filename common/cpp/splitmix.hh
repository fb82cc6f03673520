// Splitmix64 (Steele, Lea and Flood 2014): a word of state, a few instructions a draw, and a
// finaliser that decorrelates even consecutive inputs. The core's small seeded streams
// (derived seeds, timing noise) use it where a std::mt19937_64 would be heavier than the draw.
#pragma once
#include <cstdint>

namespace ccgym {

inline constexpr uint64_t kSplitmixIncrement = 0x9e3779b97f4a7c15ULL;

// The finaliser: a bijection of the 64-bit words whose outputs look independent.
inline uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The next draw of the stream whose state is `state`, uniform on [0, 1).
inline double splitmix64_uniform(uint64_t& state) {
  return static_cast<double>(splitmix64_mix(state += kSplitmixIncrement) >> 11) * 0x1.0p-53;
}

}  // namespace ccgym
