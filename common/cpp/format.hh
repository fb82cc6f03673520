// Numbers and lists in spec strings and error messages, formatted once for the whole core.
#pragma once
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

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

// The items with `sep` between them: "a, b, c", as error messages list valid choices.
inline std::string join(const std::vector<std::string>& items, std::string_view sep = ", ") {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += sep;
    out += items[i];
  }
  return out;
}

// Text from a user's file or flag, safe to put in an error message: bytes outside printable
// ASCII become \xNN (a NUL would otherwise end the message in C and Python), and at most
// `max_chars` of it are kept, then "...".
inline std::string printable(std::string_view text, std::size_t max_chars) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i == max_chars) return out + "...";
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

}  // namespace ccgym
