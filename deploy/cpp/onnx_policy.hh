// The learned policy in the C++ sender: one step of the exported LSTM graph,
// (obs[kObsDim], h, c) -> (logits[kNumActions], h', c'), run by a small runtime of
// its own: the operators `ccgym export` writes (MatMul, Add, Mul, Sigmoid, Tanh,
// Relu, Exp, Log on 2-D float tensors, no broadcasting), compiled at load into a
// list of loops over one preallocated buffer, constant matrices packed. OpenCV dnn,
// which ran it before, spent its own bookkeeping on each of some 60 nodes a decision
// (docs/results.md, "Decision time in the C++ sender").
//
// The graph's inputs are named "obs", "h", "c" and its outputs "logits",
// "h_out", "c_out" (deploy's ONNX export writes them so). The recurrent state
// stays inside the runner between steps; the hidden size is read from the shape
// of input "h" in the file unless given. A model using another operator, a
// broadcast or weights of another type is refused at load, naming the node.
#pragma once
#include <array>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "policies/cpp/actions.hh"
#include "policies/cpp/features.hh"

namespace ccgym {

// Input and output shapes of an ONNX model, read from the file itself (a few
// protobuf fields). A dimension that is symbolic or unknown is -1. Throws std::runtime_error naming the file when it is not ONNX.
struct OnnxShapes {
  struct Tensor {
    std::string name;
    std::vector<int64_t> dims;
  };
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  // The model's metadata_props (ccgym export writes observation_version among them).
  std::vector<std::pair<std::string, std::string>> metadata;
  const Tensor* input(const std::string& name) const;
  const Tensor* output(const std::string& name) const;
};
OnnxShapes read_onnx_shapes(const std::string& path);

class PolicyRunner {
 public:
  // The first observation_dim(observation_version()) entries are read (kMaxObsDim fits any).
  using Observation = std::array<float, kMaxObsDim>;
  using Logits = std::array<float, kNumActions>;

  // Loads the model. hidden_size 0: from the file's "h" input. Throws
  // std::runtime_error naming the file on a missing or malformed model, a
  // missing input or output, or shapes that do not match its observation version's length or kNumActions.
  explicit PolicyRunner(const std::string& path, int hidden_size = 0);
  // The same from the model's bytes, `name` standing for the file in errors
  // (tests/fuzz/fuzz_onnx_policy.cc gives it arbitrary bytes).
  static std::unique_ptr<PolicyRunner> from_bytes(std::string_view model, const std::string& name,
                                                  int hidden_size = 0);
  ~PolicyRunner();
  PolicyRunner(const PolicyRunner&) = delete;
  PolicyRunner& operator=(const PolicyRunner&) = delete;

  int hidden_size() const { return hidden_size_; }
  // The observation the model reads: its metadata's observation_version (ccgym export writes
  // it), kObservationVersion for a model without one.
  int observation_version() const { return observation_version_; }
  // Zeroes the recurrent state (the start of an episode).
  void reset();
  // One step: returns the logits and keeps h', c' for the next step.
  const Logits& step(const Observation& obs);
  // The action the sender takes: the argmax of step()'s logits (first on ties).
  int act(const Observation& obs);
  // The state after the last step (h', c'): the next step's h and c.
  std::span<const float> h() const;
  std::span<const float> c() const;

 private:
  PolicyRunner(std::string_view model, const std::string& name, int hidden_size);
  struct Net;
  std::unique_ptr<Net> net_;
  std::string path_;
  int hidden_size_ = 0;
  int observation_version_ = kObservationVersion;
  Logits logits_{};
};

}  // namespace ccgym
