// ccgym-policy: runs the ONNX policy exactly as ccgym-sender does, on
// observations read from stdin, so the C++ runtime can be compared with
// onnxruntime step by step without a network.
//
// Input: one observation per line, as many numbers as the model's observation version has
// (kObsDim for version 4), separated by blanks; the recurrent state carries over from line to
// line (one episode). Output: one line
// per observation: the action (argmax), then the kNumActions logits, then h' and
// c' (hidden size each), blank-separated, with float precision (%.9g).
#include <algorithm>
#include <cstdio>
#include <exception>
#include <iostream>
#include <sstream>
#include <string>

#include "deploy/cpp/flags.hh"
#include "deploy/cpp/onnx_policy.hh"

namespace ccgym {
namespace {

int run(int argc, char** argv) {
  net::Flags flags("ccgym-policy",
                   "Runs an exported policy on observations from stdin (one per line).",
                   {{"model", "FILE.onnx", "the exported policy", "", true},
                    {"hidden", "N", "LSTM hidden size; 0 reads it from the file", "0"}});
  flags.parse(argc, argv);
  std::unique_ptr<PolicyRunner> runner;
  try {
    runner = std::make_unique<PolicyRunner>(flags.text("model"),
                                            static_cast<int>(flags.integer("hidden")));
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "ccgym-policy: %s\n", e.what());
    return net::kExitUsage;
  }

  std::string line;
  for (int line_number = 1; std::getline(std::cin, line); ++line_number) {
    std::istringstream fields(line);
    PolicyRunner::Observation obs{};
    const int dim = observation_dim(runner->observation_version());
    for (int i = 0; i < dim; ++i) {
      if (!(fields >> obs[static_cast<std::size_t>(i)])) {
        std::fprintf(stderr, "ccgym-policy: stdin:%d: expected %d numbers\n", line_number, dim);
        return 1;
      }
    }
    const PolicyRunner::Logits logits = runner->step(obs);
    // The sender's choice: the first largest logit (PolicyRunner::act).
    const auto action = std::max_element(logits.begin(), logits.end()) - logits.begin();
    std::printf("%d", static_cast<int>(action));
    for (float v : logits) std::printf(" %.9g", static_cast<double>(v));
    for (float v : runner->h()) std::printf(" %.9g", static_cast<double>(v));
    for (float v : runner->c()) std::printf(" %.9g", static_cast<double>(v));
    std::printf("\n");
  }
  return 0;
}

}  // namespace
}  // namespace ccgym

int main(int argc, char** argv) {
  return ccgym::net::run_program("ccgym-policy", ccgym::run, argc, argv);
}
