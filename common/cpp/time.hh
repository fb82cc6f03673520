// Time as every part of the core counts it: double milliseconds on the clock the caller
// passes (virtual in the simulator, the wall clock in the relay and the endpoints).
#pragma once
#include <limits>

namespace ccgym {

// "Not at any time": a wakeup that never comes, a delivery that will not happen.
inline constexpr double kNever = std::numeric_limits<double>::infinity();

}  // namespace ccgym
