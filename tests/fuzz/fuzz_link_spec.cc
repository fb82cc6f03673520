// The link spec parser on arbitrary text: a spec whose canonical string parses back to itself,
// within the bounds spec.hh states, or a clear std::invalid_argument.
#include <cstddef>
#include <cstdint>
#include <string>

#include "emulators/cpp/spec.hh"
#include "tests/fuzz/fuzz_common.hh"

namespace {

void check_direction(const ccgym::DirectionSpec& d, const std::string& text) {
  const bool in_bounds = d.rate_mbps >= ccgym::kMinRateMbps && d.rate_mbps <= ccgym::kMaxRateMbps;
  if (d.rate_mbps != 0 && !in_bounds) {
    ccgym::fuzz::fail("accepted a rate out of bounds", text);
  }
  if (!(d.loss >= 0 && d.loss < 1)) ccgym::fuzz::fail("accepted a loss out of [0, 1)", text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // Trace keys would read files named by the input: the trace parser has its own harness.
  if (text.find("trace") != std::string::npos) return 0;
  try {
    const ccgym::LinkSpec spec = ccgym::parse_link_spec(text);
    if (!(spec.delay_ms >= 0 && spec.delay_ms <= ccgym::kMaxDelayMs)) {
      ccgym::fuzz::fail("accepted a delay out of bounds", text);
    }
    check_direction(spec.data, text);
    check_direction(spec.ack, text);
    const std::string canonical = spec.to_string();
    const std::string again = ccgym::parse_link_spec(canonical).to_string();
    if (again != canonical) ccgym::fuzz::fail("canonical form does not round-trip", canonical);
  } catch (const std::invalid_argument& e) {
    ccgym::fuzz::check_message(e);
  }
  return 0;
}
