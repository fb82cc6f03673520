#include "deploy/cpp/onnx_policy.hh"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>
#include <stdexcept>
#include <string_view>

namespace ccgym {

namespace {

// Just enough of the protobuf wire format to walk ModelProto -> GraphProto ->
// ValueInfoProto -> TypeProto.Tensor -> TensorShapeProto (field numbers from onnx.proto).
constexpr uint32_t kModelGraph = 7;
constexpr uint32_t kModelMetadata = 14;
constexpr uint32_t kEntryKey = 1;
constexpr uint32_t kEntryValue = 2;
constexpr uint32_t kGraphInput = 11;
constexpr uint32_t kGraphOutput = 12;
constexpr uint32_t kValueInfoName = 1;
constexpr uint32_t kValueInfoType = 2;
constexpr uint32_t kTypeTensor = 1;
constexpr uint32_t kTensorShape = 2;
constexpr uint32_t kShapeDim = 1;
constexpr uint32_t kDimValue = 1;

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

struct Field {
  uint32_t number = 0;
  uint32_t type = 0;
  uint64_t varint = 0;         // kVarint
  std::string_view bytes;      // kBytes
};

class Reader {
 public:
  Reader(std::string_view data, const std::string& file) : data_(data), file_(file) {}
  bool done() const { return pos_ >= data_.size(); }

  Field next() {
    Field f;
    const uint64_t key = varint();
    f.number = static_cast<uint32_t>(key >> 3);
    f.type = static_cast<uint32_t>(key & 7);
    switch (f.type) {
      case kVarint:
        f.varint = varint();
        break;
      case kFixed64:
        skip(8);
        break;
      case kFixed32:
        skip(4);
        break;
      case kBytes: {
        const uint64_t len = varint();
        if (len > data_.size() - pos_) fail();
        f.bytes = data_.substr(pos_, static_cast<std::size_t>(len));
        pos_ += static_cast<std::size_t>(len);
        break;
      }
      default:
        fail();
    }
    return f;
  }

 private:
  uint64_t varint() {
    uint64_t out = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) fail();
      const auto byte = static_cast<uint8_t>(data_[pos_++]);
      out |= static_cast<uint64_t>(byte & 0x7F) << shift;
      if ((byte & 0x80) == 0) return out;
    }
    fail();
  }
  void skip(std::size_t n) {
    if (n > data_.size() - pos_) fail();
    pos_ += n;
  }
  [[noreturn]] void fail() const {
    throw std::runtime_error(file_ + ": not an ONNX model (malformed protobuf)");
  }

  std::string_view data_;
  const std::string& file_;
  std::size_t pos_ = 0;
};

OnnxShapes::Tensor read_value_info(std::string_view bytes, const std::string& file) {
  OnnxShapes::Tensor tensor;
  for (Reader info(bytes, file); !info.done();) {
    const Field f = info.next();
    if (f.number == kValueInfoName && f.type == kBytes) tensor.name = std::string(f.bytes);
    if (f.number != kValueInfoType || f.type != kBytes) continue;
    for (Reader type(f.bytes, file); !type.done();) {
      const Field t = type.next();
      if (t.number != kTypeTensor || t.type != kBytes) continue;
      for (Reader ttype(t.bytes, file); !ttype.done();) {
        const Field s = ttype.next();
        if (s.number != kTensorShape || s.type != kBytes) continue;
        for (Reader shape(s.bytes, file); !shape.done();) {
          const Field d = shape.next();
          if (d.number != kShapeDim || d.type != kBytes) continue;
          int64_t value = -1;  // symbolic (dim_param) or absent
          for (Reader dim(d.bytes, file); !dim.done();) {
            const Field v = dim.next();
            if (v.number == kDimValue && v.type == kVarint) value = static_cast<int64_t>(v.varint);
          }
          tensor.dims.push_back(value);
        }
      }
    }
  }
  return tensor;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open the ONNX model");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    out += (i ? ", " : "") + (dims[i] < 0 ? std::string("?") : std::to_string(dims[i]));
  }
  return out + "]";
}

}  // namespace

const OnnxShapes::Tensor* OnnxShapes::input(const std::string& name) const {
  for (const Tensor& t : inputs) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const OnnxShapes::Tensor* OnnxShapes::output(const std::string& name) const {
  for (const Tensor& t : outputs) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

OnnxShapes read_onnx_shapes(const std::string& path) {
  const std::string data = read_file(path);
  OnnxShapes shapes;
  bool have_graph = false;
  for (Reader model(data, path); !model.done();) {
    const Field f = model.next();
    if (f.number == kModelMetadata && f.type == kBytes) {
      std::pair<std::string, std::string> entry;
      for (Reader kv(f.bytes, path); !kv.done();) {
        const Field e = kv.next();
        if (e.number == kEntryKey && e.type == kBytes) entry.first = std::string(e.bytes);
        if (e.number == kEntryValue && e.type == kBytes) entry.second = std::string(e.bytes);
      }
      shapes.metadata.push_back(std::move(entry));
    }
    if (f.number != kModelGraph || f.type != kBytes) continue;
    have_graph = true;
    for (Reader graph(f.bytes, path); !graph.done();) {
      const Field g = graph.next();
      if (g.type != kBytes) continue;
      if (g.number == kGraphInput) shapes.inputs.push_back(read_value_info(g.bytes, path));
      if (g.number == kGraphOutput) shapes.outputs.push_back(read_value_info(g.bytes, path));
    }
  }
  if (!have_graph) throw std::runtime_error(path + ": not an ONNX model (no graph)");
  return shapes;
}

struct PolicyRunner::Net {
  cv::dnn::Net net;
  cv::Mat obs;
  cv::Mat h;
  cv::Mat c;
  std::vector<cv::String> output_names{"logits", "h_out", "c_out"};
  std::vector<cv::Mat> outputs;
};

PolicyRunner::PolicyRunner(const std::string& path, int hidden_size)
    : net_(std::make_unique<Net>()), path_(path), hidden_size_(hidden_size) {
  const OnnxShapes shapes = read_onnx_shapes(path);
  for (const char* name : {"obs", "h", "c"}) {
    if (shapes.input(name) == nullptr) {
      throw std::runtime_error(path + ": the model has no input '" + name +
                               "' (expected inputs obs, h, c)");
    }
  }
  for (const char* name : {"logits", "h_out", "c_out"}) {
    if (shapes.output(name) == nullptr) {
      throw std::runtime_error(path + ": the model has no output '" + name +
                               "' (expected outputs logits, h_out, c_out)");
    }
  }
  // A model exported by ccgym says which observation it was trained on; one from elsewhere
  // is taken on its shapes alone.
  for (const auto& [key, value] : shapes.metadata) {
    if (key == "observation_version" && value != std::to_string(kObservationVersion)) {
      throw std::runtime_error(path + ": trained on observation version " + value +
                               ", but this sender computes version " +
                               std::to_string(kObservationVersion) + "; train the policy again");
    }
  }
  const auto& obs_dims = shapes.input("obs")->dims;
  if (!obs_dims.empty() && obs_dims.back() >= 0 && obs_dims.back() != kObsDim) {
    throw std::runtime_error(path + ": input obs has shape " + dims_text(obs_dims) +
                             ", the sender's features have " + std::to_string(kObsDim));
  }
  const auto& logit_dims = shapes.output("logits")->dims;
  if (!logit_dims.empty() && logit_dims.back() >= 0 && logit_dims.back() != kNumActions) {
    throw std::runtime_error(path + ": output logits has shape " + dims_text(logit_dims) +
                             ", the sender has " + std::to_string(kNumActions) + " actions");
  }
  if (hidden_size_ <= 0) {
    const auto& h_dims = shapes.input("h")->dims;
    if (h_dims.empty() || h_dims.back() <= 0) {
      throw std::runtime_error(path + ": input h has shape " + dims_text(h_dims) +
                               ": give the hidden size explicitly");
    }
    hidden_size_ = static_cast<int>(h_dims.back());
  }

  try {
    net_->net = cv::dnn::readNetFromONNX(path);
  } catch (const cv::Exception& e) {
    throw std::runtime_error(path + ": OpenCV cannot load the model: " + e.what());
  }
  // One step of a small LSTM is a few microseconds of work: OpenCV's worker threads
  // would only add hand-offs to it (and compete with the sender's event loop).
  cv::setNumThreads(1);
  net_->net.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
  net_->net.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
  net_->obs = cv::Mat(1, kObsDim, CV_32F, cv::Scalar(0));
  net_->h = cv::Mat(1, hidden_size_, CV_32F, cv::Scalar(0));
  net_->c = cv::Mat(1, hidden_size_, CV_32F, cv::Scalar(0));
  h_.assign(static_cast<std::size_t>(hidden_size_), 0.0F);
  c_.assign(static_cast<std::size_t>(hidden_size_), 0.0F);
}

PolicyRunner::~PolicyRunner() = default;

void PolicyRunner::reset() {
  std::fill(h_.begin(), h_.end(), 0.0F);
  std::fill(c_.begin(), c_.end(), 0.0F);
}

const PolicyRunner::Logits& PolicyRunner::step(const Observation& obs) {
  std::copy(obs.begin(), obs.end(), net_->obs.ptr<float>());
  std::copy(h_.begin(), h_.end(), net_->h.ptr<float>());
  std::copy(c_.begin(), c_.end(), net_->c.ptr<float>());
  try {
    net_->net.setInput(net_->obs, "obs");
    net_->net.setInput(net_->h, "h");
    net_->net.setInput(net_->c, "c");
    net_->net.forward(net_->outputs, net_->output_names);
  } catch (const cv::Exception& e) {
    throw std::runtime_error(path_ + ": OpenCV failed to run the model: " + e.what());
  }
  const auto check = [&](const cv::Mat& m, std::size_t want, const char* name) {
    if (m.total() != want || m.type() != CV_32F) {
      throw std::runtime_error(path_ + ": output " + name + " has " + std::to_string(m.total()) +
                               " values, expected " + std::to_string(want));
    }
  };
  check(net_->outputs[0], logits_.size(), "logits");
  check(net_->outputs[1], h_.size(), "h_out");
  check(net_->outputs[2], c_.size(), "c_out");
  const float* logits = net_->outputs[0].ptr<float>();
  std::copy(logits, logits + logits_.size(), logits_.begin());
  const float* h = net_->outputs[1].ptr<float>();
  std::copy(h, h + h_.size(), h_.begin());
  const float* c = net_->outputs[2].ptr<float>();
  std::copy(c, c + c_.size(), c_.begin());
  return logits_;
}

int PolicyRunner::act(const Observation& obs) {
  const Logits& logits = step(obs);
  return static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

}  // namespace ccgym
