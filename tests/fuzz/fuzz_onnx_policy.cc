// The sender's ONNX runtime (deploy/cpp/onnx_policy.hh) on arbitrary bytes: a model it
// refuses with a clear std::runtime_error, or one that it runs, every logit a number or
// not, without a sanitizer report.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "deploy/cpp/onnx_policy.hh"
#include "tests/fuzz/fuzz_common.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view model(reinterpret_cast<const char*>(data), size);
  try {
    const auto runner = ccgym::PolicyRunner::from_bytes(model, "fuzz.onnx");
    ccgym::PolicyRunner::Observation obs{};
    for (int step = 0; step < 3; ++step) {
      const int action = runner->act(obs);
      if (action < 0 || action >= ccgym::kNumActions) {
        ccgym::fuzz::fail("an action out of range", std::to_string(action));
      }
      obs.fill(static_cast<float>(step + 1));
    }
    runner->reset();
    runner->act(obs);
  } catch (const std::runtime_error& e) {
    ccgym::fuzz::check_message(e);
  }
  return 0;
}
