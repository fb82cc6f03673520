// The mahimahi trace parser on arbitrary bytes: a Trace that keeps its invariants, or a clear
// std::invalid_argument.
#include <cstddef>
#include <cstdint>
#include <string>

#include "emulators/cpp/delivery.hh"
#include "tests/fuzz/fuzz_common.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const ccgym::Trace trace = ccgym::parse_trace(text, "fuzz.trace");
    if (trace.timestamps.empty() || trace.timestamps.back() == 0) {
      ccgym::fuzz::fail("accepted a trace with no period", text);
    }
    for (std::size_t i = 1; i < trace.timestamps.size(); ++i) {
      if (trace.timestamps[i] < trace.timestamps[i - 1]) {
        ccgym::fuzz::fail("accepted decreasing timestamps", text);
      }
    }
    if (trace.timestamps.back() > ccgym::kMaxTraceMs) ccgym::fuzz::fail("beyond the bound", text);
  } catch (const std::invalid_argument& e) {
    ccgym::fuzz::check_message(e);
  }
  return 0;
}
