// Numbers in spec strings and error messages, formatted once for the whole core.
#pragma once
#include <charconv>
#include <cmath>
#include <string>

namespace ccgym {

// Shortest text that reads back to the same double (specs round-trip), in plain
// decimals unless the magnitude makes that long: "0.0006" reads better than "6e-04".
inline std::string format_number(double value) {
  char buf[400];
  const double magnitude = std::fabs(value);
  const bool plain = magnitude == 0 || (magnitude >= 1e-4 && magnitude < 1e15);
  auto result = plain ? std::to_chars(buf, buf + sizeof buf, value, std::chars_format::fixed)
                      : std::to_chars(buf, buf + sizeof buf, value);
  return std::string(buf, result.ptr);
}

}  // namespace ccgym
