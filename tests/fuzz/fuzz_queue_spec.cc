// The queue spec parser on arbitrary text: a queue whose canonical string builds the same
// queue again, or a clear std::invalid_argument.
#include <cstddef>
#include <cstdint>
#include <string>

#include "emulators/cpp/queue.hh"
#include "tests/fuzz/fuzz_common.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const std::string canonical = ccgym::make_queue(text, 1)->to_string();
    const std::string again = ccgym::make_queue(canonical, 1)->to_string();
    if (again != canonical) ccgym::fuzz::fail("canonical form does not round-trip", canonical);
  } catch (const std::invalid_argument& e) {
    ccgym::fuzz::check_message(e);
  }
  return 0;
}
