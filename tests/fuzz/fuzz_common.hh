// What every harness checks of a parser's failure: it is the one error type its callers turn
// into a clear line (std::invalid_argument; the ONNX runtime's std::runtime_error), and its
// message is not empty and all printable ASCII: the user's bytes are escaped (a NUL would cut
// it short in C and Python, a control byte garble a terminal, an invalid UTF-8 byte fail
// Python's decoding). Anything else thrown, or a sanitizer report, is a crash libFuzzer keeps.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace ccgym::fuzz {

[[noreturn]] inline void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

inline void check_message(const std::exception& e) {
  const std::string message = e.what();
  if (message.empty()) fail("empty error message", "");
  for (const char c : message) {
    if (c < 0x20 || c > 0x7e) fail("a raw byte in an error message", message);
  }
}

}  // namespace ccgym::fuzz
