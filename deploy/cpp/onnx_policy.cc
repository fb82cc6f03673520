#include "deploy/cpp/onnx_policy.hh"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string_view>

#include "common/cpp/format.hh"

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
// GraphProto -> NodeProto and TensorProto (the initializers: the weights).
constexpr uint32_t kGraphNode = 1;
constexpr uint32_t kGraphInitializer = 5;
constexpr uint32_t kNodeInput = 1;
constexpr uint32_t kNodeOutput = 2;
constexpr uint32_t kNodeName = 3;
constexpr uint32_t kNodeOpType = 4;
constexpr uint32_t kNodeAttribute = 5;
constexpr uint32_t kNodeDomain = 7;
constexpr uint32_t kTensorDims = 1;
constexpr uint32_t kTensorDataType = 2;
constexpr uint32_t kTensorFloatData = 4;
constexpr uint32_t kTensorName = 8;
constexpr uint32_t kTensorRawData = 9;
constexpr uint32_t kTensorDataLocation = 14;
constexpr uint64_t kFloatType = 1;      // TensorProto.DataType.FLOAT
constexpr uint64_t kExternalData = 1;   // TensorProto.DataLocation.EXTERNAL

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

struct Field {
  uint32_t number = 0;
  uint32_t type = 0;
  uint64_t varint = 0;         // kVarint
  uint32_t fixed32 = 0;        // kFixed32
  std::string_view bytes;      // kBytes
};

class Reader {
 public:
  Reader(std::string_view data, const std::string& file) : data_(data), file_(file) {}
  bool done() const { return pos_ >= data_.size(); }

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
        if (4 > data_.size() - pos_) fail();
        std::memcpy(&f.fixed32, data_.data() + pos_, 4);
        pos_ += 4;
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

// A name from the file in an error message: quoted, escaped, cut (common/cpp/format.hh).
std::string quoted(std::string_view name) { return "'" + printable(name, 80) + "'"; }

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    out += (i ? ", " : "") + (dims[i] < 0 ? std::string("?") : std::to_string(dims[i]));
  }
  return out + "]";
}

struct Node {
  std::string op;
  std::string name;
  std::string domain;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
};

struct Initializer {
  std::string name;
  std::vector<int64_t> dims;
  std::vector<float> values;
};

// What the runtime needs of the graph beside OnnxShapes: its nodes in file order (ONNX
// requires them sorted: each reads only inputs, initializers and earlier nodes' outputs)
// and its weights.
struct Graph {
  std::vector<Node> nodes;
  std::vector<Initializer> initializers;
};

Node read_node(std::string_view bytes, const std::string& file) {
  Node node;
  for (Reader r(bytes, file); !r.done();) {
    const Field f = r.next();
    if (f.type != kBytes) continue;
    const std::string text(f.bytes);
    if (f.number == kNodeInput) node.inputs.push_back(text);
    if (f.number == kNodeOutput) node.outputs.push_back(text);
    if (f.number == kNodeName) node.name = text;
    if (f.number == kNodeOpType) node.op = text;
    if (f.number == kNodeDomain) node.domain = text;
    if (f.number == kNodeAttribute) {
      // No operator the runtime runs takes one: a node with one is something else.
      node.op += " with attributes";
    }
  }
  if (node.name.empty()) node.name = node.outputs.empty() ? node.op : node.outputs.front();
  return node;
}

// Little-endian float32 values, as raw_data and packed float_data hold them.
void append_floats(std::string_view bytes, std::vector<float>* out, const std::string& what) {
  if (bytes.size() % sizeof(float) != 0) throw std::runtime_error(what + ": a partial float");
  if (bytes.empty()) return;  // memcpy with an empty vector's null data() is undefined
  const std::size_t start = out->size();
  out->resize(start + bytes.size() / sizeof(float));
  std::memcpy(out->data() + start, bytes.data(), bytes.size());
}

Initializer read_initializer(std::string_view bytes, const std::string& file) {
  Initializer tensor;
  uint64_t type = 0;
  bool external = false;
  for (Reader r(bytes, file); !r.done();) {
    const Field f = r.next();
    if (f.number == kTensorDims && f.type == kVarint) {
      tensor.dims.push_back(static_cast<int64_t>(f.varint));
    } else if (f.number == kTensorDims && f.type == kBytes) {  // packed
      for (Reader packed(f.bytes, file); !packed.done();) {
        tensor.dims.push_back(static_cast<int64_t>(packed.varint()));
      }
    } else if (f.number == kTensorDataType && f.type == kVarint) {
      type = f.varint;
    } else if (f.number == kTensorFloatData && f.type == kFixed32) {
      float value = 0.0F;
      std::memcpy(&value, &f.fixed32, sizeof value);
      tensor.values.push_back(value);
    } else if ((f.number == kTensorFloatData || f.number == kTensorRawData) && f.type == kBytes) {
      append_floats(f.bytes, &tensor.values, file + ": initializer");
    } else if (f.number == kTensorName && f.type == kBytes) {
      tensor.name = std::string(f.bytes);
    } else if (f.number == kTensorDataLocation && f.type == kVarint) {
      external = f.varint == kExternalData;
    }
  }
  if (type != kFloatType || external) {
    throw std::runtime_error(file + ": the initializer " + quoted(tensor.name) + " is " +
                             (external ? "stored outside the file" : "not float32") +
                             "; this runtime reads float32 weights held in the model");
  }
  return tensor;
}

// The model's shapes and metadata; with graph, its nodes and weights too.
OnnxShapes read_model(std::string_view data, const std::string& path, Graph* graph) {
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
    for (Reader g(f.bytes, path); !g.done();) {
      const Field part = g.next();
      if (part.type != kBytes) continue;
      if (part.number == kGraphInput) shapes.inputs.push_back(read_value_info(part.bytes, path));
      if (part.number == kGraphOutput) shapes.outputs.push_back(read_value_info(part.bytes, path));
      if (graph == nullptr) continue;
      if (part.number == kGraphNode) graph->nodes.push_back(read_node(part.bytes, path));
      if (part.number == kGraphInitializer) {
        graph->initializers.push_back(read_initializer(part.bytes, path));
      }
    }
  }
  if (!have_graph) throw std::runtime_error(path + ": not an ONNX model (no graph)");
  return shapes;
}

}  // namespace

const OnnxShapes::Tensor* OnnxShapes::input(
const std::string& name) const {
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
  return read_model(read_file(path), path, nullptr);
}

namespace {

// The operators the runtime runs: those `ccgym export` writes (deploy/export.py), each on
// 2-D float tensors with no broadcasting.
enum class OpKind { kMatMul, kAdd, kMul, kSigmoid, kTanh, kRelu, kExp, kLog };

struct OpName {
  const char* name;
  OpKind kind;
  bool binary;
};
constexpr std::array<OpName, 8> kOps{{{"MatMul", OpKind::kMatMul, true},
                                      {"Add", OpKind::kAdd, true},
                                      {"Mul", OpKind::kMul, true},
                                      {"Sigmoid", OpKind::kSigmoid, false},
                                      {"Tanh", OpKind::kTanh, false},
                                      {"Relu", OpKind::kRelu, false},
                                      {"Exp", OpKind::kExp, false},
                                      {"Log", OpKind::kLog, false}}};

std::string op_names() {
  std::vector<std::string> names;
  for (const OpName& op : kOps) names.emplace_back(op.name);
  return join(names);
}

// Bounds on what a model may ask for, so that a damaged file is refused rather than
// allocating without end: far beyond any policy ccgym trains (an ensemble of a few
// 1024-unit LSTMs holds some 10^7 values).
constexpr int64_t kMaxHiddenSize = 1 << 16;
constexpr std::size_t kMaxBufferValues = std::size_t{1} << 28;

// A tensor's place in the runner's one buffer, and its shape.
struct Slot {
  std::size_t offset = 0;
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::size_t size() const { return rows * cols; }
};

std::string shape_text(const Slot& s) {
  return "[" + std::to_string(s.rows) + ", " + std::to_string(s.cols) + "]";
}

// A constant matrix that MatMul reads is stored in column tiles: kWideTile columns at a time,
// the last fewer than that kLanes at a time; each tile holds its rows from the first to the
// last with a nonzero in any of its columns (the rest are zero), kLanes-padded with zeros.
// A tile's sums are vectors of kLanes floats (GCC's and clang's vector extension, one AVX
// register); a wide tile's several, so that their additions overlap. (Over an array of sums
// the compiler vectorised along k instead, shuffling.)
constexpr std::size_t kLanes = 8;
constexpr std::size_t kWideTile = 4 * kLanes;
using Lanes = float __attribute__((vector_size(kLanes * sizeof(float))));

// The columns [first, first + width) of a tile starting at column `first`.
std::size_t tile_width(std::size_t first, std::size_t cols) {
  return cols - first >= kWideTile ? kWideTile : kLanes;
}

// out[first, first + tile's width) = sum over k in [lo, hi) of a[k] w[k, tile's columns].
// Always inlined, as the helpers below: built inside each clone, for its target.
template <std::size_t kVectors>
[[gnu::always_inline]] inline const float* multiply_tile(const float* a, const float* packed,
                                                         std::size_t lo, std::size_t hi,
                                                         std::size_t columns, float* out) {
  std::array<Lanes, kVectors> sums{};
  for (std::size_t k = lo; k < hi; ++k) {
    for (Lanes& sum : sums) {
      Lanes weights;
      std::memcpy(&weights, packed, sizeof weights);
      sum += a[k] * weights;
      packed += kLanes;
    }
  }
  std::memcpy(out, sums.data(), columns * sizeof(float));
  return packed;
}

// out[:] = a w for a constant w stored in tiles: tile t's row range [lo_t, hi_t) in `ranges`,
// its values in `packed`, the tiles one after another. A tile's sums stay in registers over
// its rows, where a row at a time loads and stores `out` once per row; a block-diagonal
// matrix, as an ensemble's recurrent weights are (policies/lstm.py: ensemble), costs its
// blocks only. Each sum runs over k in order. Built twice where the compiler can (x86-64):
// for AVX2 and for any x86-64, the one to run picked at load.
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target_clones("avx2", "default")))
#endif
void multiply_packed(const float* a, const float* packed, const uint32_t* ranges,
                     std::size_t cols, float* out) {
  for (std::size_t first = 0; first < cols; first += tile_width(first, cols)) {
    const std::size_t lo = *ranges++;
    const std::size_t hi = *ranges++;
    const std::size_t columns = std::min(tile_width(first, cols), cols - first);
    packed = tile_width(first, cols) == kWideTile
                 ? multiply_tile<kWideTile / kLanes>(a, packed, lo, hi, columns, out + first)
                 : multiply_tile<1>(a, packed, lo, hi, columns, out + first);
  }
}

// e^x for the gates, kLanes values at once, in place: libm's expf and tanhf, one call per
// value, were half of a step (and the compiler would not vectorise this written per value: it
// turned the clamp into branches). x = n ln2 + r with |r| <= ln2 / 2, e^r by its Taylor
// series to r^7 (error under 1e-8 relative), times 2^n made in the exponent bits. x is
// clamped to [-87, 88], where 2^n stays a normal float: past them a sigmoid or tanh is 0 or 1
// within float precision anyway.
using Ints = int32_t __attribute__((vector_size(kLanes * sizeof(int32_t))));
[[gnu::always_inline]] inline void exp_in_place(Lanes& x) {
  constexpr double kLn2 = 0.69314718055994530942;
  constexpr float kLn2High = 0.693359375F;  // few bits: n * kLn2High is exact
  constexpr auto kLn2Low = static_cast<float>(kLn2 - 0.693359375);
  constexpr float kRound = 12582912.0F;     // 1.5 * 2^23: adding it rounds to an integer
  const Lanes low = Lanes{} - 87.0F;
  const Lanes high = Lanes{} + 88.0F;
  x = x < low ? low : x;
  x = x > high ? high : x;
  const Lanes n = (x * static_cast<float>(1.0 / kLn2) + kRound) - kRound;
  const Lanes r = (x - n * kLn2High) - n * kLn2Low;
  Lanes p = Lanes{} + 1.0F / 5040;
  for (const float c : {1.0F / 720, 1.0F / 120, 1.0F / 24, 1.0F / 6, 0.5F, 1.0F, 1.0F}) {
    p = p * r + c;
  }
  const Ints exponent = (__builtin_convertvector(n, Ints) + 127) << 23;
  Lanes scale;
  std::memcpy(&scale, &exponent, sizeof scale);
  x = p * scale;
}

// The values [i, i + kLanes) of n in and out, zeros past n. A whole vector is copied in one
// move: a copy of variable length goes through memory, and reading it back as a vector waits.
[[gnu::always_inline]] inline void load_lanes(const float* a, std::size_t i, std::size_t n,
                                              Lanes& x) {
  if (n - i >= kLanes) {
    std::memcpy(&x, a + i, sizeof x);
  } else {
    x = Lanes{};
    std::memcpy(&x, a + i, (n - i) * sizeof(float));
  }
}
[[gnu::always_inline]] inline void store_lanes(const Lanes& x, std::size_t i, std::size_t n,
                                               float* out) {
  std::memcpy(out + i, &x, std::min(kLanes, n - i) * sizeof(float));
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target_clones("avx2", "default")))
#endif
void sigmoid_values(const float* a, std::size_t n, float* out) {
  for (std::size_t i = 0; i < n; i += kLanes) {
    Lanes x;
    load_lanes(a, i, n, x);
    x = -x;
    exp_in_place(x);
    x = 1.0F / (1.0F + x);
    store_lanes(x, i, n, out);
  }
}

// tanh x = 1 - 2 / (e^2x + 1): near 0 this loses relative precision, but its absolute error
// stays under 1e-7, and the LSTM adds its values to others of order 1.
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target_clones("avx2", "default")))
#endif
void tanh_values(const float* a, std::size_t n, float* out) {
  for (std::size_t i = 0; i < n; i += kLanes) {
    Lanes x;
    load_lanes(a, i, n, x);
    x = 2.0F * x;
    exp_in_place(x);
    x = 1.0F - 2.0F / (x + 1.0F);
    store_lanes(x, i, n, out);
  }
}

// The same for any w (a tensor the graph computes), dense.
void multiply_add_dense(const float* a, const float* w, std::size_t inner, std::size_t cols,
                        float* out) {
  for (std::size_t k = 0; k < inner; ++k) {
    const float x = a[k];
    const float* weights = w + k * cols;
    for (std::size_t j = 0; j < cols; ++j) out[j] += x * weights[j];
  }
}

// The graph compiled once into a list of operations on offsets into one buffer that holds
// every tensor (inputs, the weights an operation reads dense, intermediates): a step
// allocates nothing, looks nothing up and copies only the observation in, the logits out and
// the new state onto the old (the state lives in the buffer between steps).
struct Program {
  struct Op {
    OpKind kind;
    Slot a, b, out;
    // MatMul by a constant: its column tiles' row ranges in `ranges` and their values in
    // `packed`, from these offsets (-1: not a constant, read dense from the buffer).
    std::ptrdiff_t ranges = -1;
    std::size_t packed = 0;
  };
  std::vector<uint32_t> ranges;
  std::vector<float> packed;
  std::vector<float> buffer;
  std::vector<Op> ops;
  Slot obs, h, c, logits, h_out, c_out;

  float* at(const Slot& s) { return buffer.data() + s.offset; }
  const float* at(const Slot& s) const { return buffer.data() + s.offset; }

  // h_out and c_out become the next step's h and c.
  void carry_state() {
    std::copy_n(at(h_out), h.size(), at(h));
    std::copy_n(at(c_out), c.size(), at(c));
  }

  void reset_state() {
    std::fill_n(at(h), h.size(), 0.0F);
    std::fill_n(at(c), c.size(), 0.0F);
  }

  void run() {
    for (const Op& op : ops) {
      const float* a = at(op.a);
      float* out = at(op.out);
      const std::size_t n = op.out.size();
      switch (op.kind) {
        case OpKind::kMatMul: {
          // out[r, :] = sum_k a[r, k] b[k, :]: the inner loop runs along b's rows, contiguous.
          if (op.ranges < 0) std::fill(out, out + n, 0.0F);
          for (std::size_t r = 0; r < op.a.rows; ++r) {
            const float* a_row = a + r * op.a.cols;
            float* out_row = out + r * op.b.cols;
            if (op.ranges >= 0) {
              multiply_packed(a_row, packed.data() + op.packed, ranges.data() + op.ranges,
                              op.b.cols, out_row);
            } else {
              multiply_add_dense(a_row, at(op.b), op.a.cols, op.b.cols, out_row);
            }
          }
          break;
        }
        case OpKind::kAdd: {
          const float* b = at(op.b);
          for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
          break;
        }
        case OpKind::kMul: {
          const float* b = at(op.b);
          for (std::size_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
          break;
        }
        case OpKind::kSigmoid:
          sigmoid_values(a, n, out);
          break;
        case OpKind::kTanh:
          tanh_values(a, n, out);
          break;
        case OpKind::kRelu:
          for (std::size_t i = 0; i < n; ++i) out[i] = std::max(a[i], 0.0F);
          break;
        case OpKind::kExp:
          for (std::size_t i = 0; i < n; ++i) out[i] = std::exp(a[i]);
          break;
        case OpKind::kLog:
          for (std::size_t i = 0; i < n; ++i) out[i] = std::log(a[i]);
          break;
      }
    }
  }
};

// Lays out every tensor of the graph in one buffer and checks each node's operands: the
// first problem is a std::runtime_error naming the file and the node.
class Compiler {
 public:
  Compiler(const std::string& path, Program* net) : path_(path), net_(net) {}

  Slot define(const std::string& name, std::size_t rows, std::size_t cols) {
    if (slots_.count(name) != 0 || constants_.count(name) != 0) {
      fail("the tensor " + quoted(name) + " is made twice");
    }
    return place(name, rows, cols);
  }

  Slot input(const OnnxShapes::Tensor& tensor, std::size_t width) {
    return define(tensor.name, 1, width);
  }

  void initializer(const Initializer& tensor) {
    const auto& d = tensor.dims;
    if (d.size() > 2) {
      fail("the initializer " + quoted(tensor.name) + " has " + std::to_string(d.size()) +
           " dimensions; this runtime takes at most 2");
    }
    for (const int64_t n : d) {
      if (n <= 0 || static_cast<uint64_t>(n) > tensor.values.size()) {
        fail("the initializer " + quoted(tensor.name) + " has shape " + dims_text(d) + " for its " +
             std::to_string(tensor.values.size()) + " values");
      }
    }
    const auto rows = static_cast<std::size_t>(d.size() == 2 ? d[0] : 1);
    const auto cols = static_cast<std::size_t>(d.empty() ? 1 : d.back());
    if (rows * cols != tensor.values.size()) {
      fail("the initializer " + quoted(tensor.name) + " holds " + std::to_string(tensor.values.size()) +
           " values for its shape");
    }
    if (slots_.count(tensor.name) != 0 || constants_.count(tensor.name) != 0) {
      fail("the tensor " + quoted(tensor.name) + " is made twice");
    }
    constants_.emplace(tensor.name, Constant{rows, cols, &tensor.values});
  }

  void node(const Node& node) {
    const std::string where = "node " + quoted(node.name) + " (" + printable(node.op, 80) + ")";
    const OpName* op = nullptr;
    for (const OpName& known : kOps) {
      if (node.op == known.name) op = &known;
    }
    if (op == nullptr || !(node.domain.empty() || node.domain == "ai.onnx")) {
      fail(where + ": this runtime runs the operators ccgym export writes (" + op_names() +
           "), on 2-D float tensors");
    }
    const std::size_t operands = op->binary ? 2 : 1;
    if (node.inputs.size() != operands || node.outputs.size() != 1) {
      fail(where + ": expected " + std::to_string(operands) + " inputs and 1 output");
    }
    Program::Op step{op->kind, read(where, node.inputs[0]), {}, {}};
    Slot out = step.a;
    if (op->binary) {
      const auto constant = constants_.find(node.inputs[1]);
      const bool packed = op->kind == OpKind::kMatMul && constant != constants_.end();
      // A MatMul by a constant reads it packed, never from the buffer.
      step.b = packed ? Slot{0, constant->second.rows, constant->second.cols}
                      : read(where, node.inputs[1]);
      if (op->kind == OpKind::kMatMul) {
        if (step.a.cols != step.b.rows) {
          fail(where + ": cannot multiply " + shape_text(step.a) + " by " + shape_text(step.b));
        }
        out.cols = step.b.cols;
        if (packed) pack(*constant->second.values, &step);
      } else if (step.a.rows != step.b.rows || step.a.cols != step.b.cols) {
        fail(where + ": operands of shapes " + shape_text(step.a) + " and " +
             shape_text(step.b) + " (this runtime does not broadcast)");
      }
    }
    step.out = define(node.outputs[0], out.rows, out.cols);
    net_->ops.push_back(step);
  }

  Slot output(const std::string& name, std::size_t width) {
    const Slot slot = read("output '" + name + "'", name);
    if (slot.size() != width) {
      fail("the output '" + name + "' has " + std::to_string(slot.size()) + " values, expected " +
           std::to_string(width));
    }
    return slot;
  }

  // The buffer, with the constants read dense in place and every other tensor zero.
  void allocate() {
    net_->buffer.assign(size_, 0.0F);
    for (const auto& [name, constant] : constants_) {
      if (!constant.placed) continue;
      std::copy(constant.values->begin(), constant.values->end(),
                net_->buffer.begin() + static_cast<std::ptrdiff_t>(constant.offset));
    }
  }

 private:
  // An initializer: its shape and values, and its place in the buffer once an operation
  // reads it dense (placed).
  struct Constant {
    std::size_t rows = 0;
    std::size_t cols = 0;
    const std::vector<float>* values = nullptr;
    bool placed = false;
    std::size_t offset = 0;
  };

  Slot place(const std::string& name, std::size_t rows, std::size_t cols) {
    const Slot slot{size_, rows, cols};
    if (slot.size() > kMaxBufferValues - size_) {
      fail("the tensor " + quoted(name) + " of shape " + shape_text(slot) + " takes the model's "
           "tensors past " + std::to_string(kMaxBufferValues) + " values");
    }
    size_ += slot.size();
    slots_.emplace(name, slot);
    return slot;
  }

  // A MatMul by a constant reads it packed in column tiles (multiply_packed): each tile from
  // the first to the last row with a nonzero in its columns.
  void pack(const std::vector<float>& constant, Program::Op* op) {
    const float* values = constant.data();
    const std::size_t rows = op->b.rows;
    const std::size_t cols = op->b.cols;
    op->ranges = static_cast<std::ptrdiff_t>(net_->ranges.size());
    op->packed = net_->packed.size();
    for (std::size_t first = 0; first < cols; first += tile_width(first, cols)) {
      const std::size_t width = tile_width(first, cols);
      const std::size_t last = std::min(first + width, cols);
      const auto nonzero = [&](std::size_t k) {
        return std::any_of(values + k * cols + first, values + k * cols + last,
                           [](float v) { return v != 0.0F; });
      };
      std::size_t lo = 0;
      std::size_t hi = rows;
      while (lo < hi && !nonzero(lo)) ++lo;
      while (hi > lo && !nonzero(hi - 1)) --hi;
      // Padding makes a narrow matrix up to kLanes times its values: bounded like the buffer.
      if ((hi - lo) * width > kMaxBufferValues - net_->packed.size()) {
        fail("the constant matrices MatMul reads take more than " +
             std::to_string(kMaxBufferValues) + " values packed");
      }
      net_->ranges.push_back(static_cast<uint32_t>(lo));
      net_->ranges.push_back(static_cast<uint32_t>(hi));
      for (std::size_t k = lo; k < hi; ++k) {
        const float* row = values + k * cols;
        net_->packed.insert(net_->packed.end(), row + first, row + last);
        net_->packed.insert(net_->packed.end(), width - (last - first), 0.0F);
      }
    }
  }

  // The tensor's slot; a constant gets one the first time it is read dense.
  Slot read(const std::string& where, const std::string& name) {
    const auto found = slots_.find(name);
    if (found != slots_.end()) return found->second;
    const auto constant = constants_.find(name);
    if (constant == constants_.end()) {
      fail(where + " reads " + quoted(name) + ", which no input, initializer or earlier node makes");
    }
    Constant& c = constant->second;
    const Slot slot = place(name, c.rows, c.cols);
    c.placed = true;
    c.offset = slot.offset;
    return slot;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(path_ + ": " + what);
  }

  const std::string& path_;
  Program* net_;
  std::map<std::string, Slot> slots_;
  std::size_t size_ = 0;
  std::map<std::string, Constant> constants_;
};

}  // namespace

struct PolicyRunner::Net {
  Program program;
};

PolicyRunner::PolicyRunner(const std::string& path, int hidden_size)
    : PolicyRunner(read_file(path), path, hidden_size) {}

std::unique_ptr<PolicyRunner> PolicyRunner::from_bytes(std::string_view model,
                                                       const std::string& name, int hidden_size) {
  return std::unique_ptr<PolicyRunner>(new PolicyRunner(model, name, hidden_size));
}

PolicyRunner::PolicyRunner(std::string_view model, const std::string& path, int hidden_size)
    : net_(std::make_unique<Net>()), path_(path), hidden_size_(hidden_size) {
  Graph graph;
  const OnnxShapes shapes = read_model(model, path, &graph);
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
  for (const auto& entry : shapes.metadata) {
    if (entry.first != "observation_version") continue;
    const std::string& value = entry.second;  // clang before 16 cannot capture a binding
    const auto known = std::find_if(
        kObservationVersions.begin(), kObservationVersions.end(),
        [&value](int version) { return value == std::to_string(version); });
    if (known == kObservationVersions.end()) {
      std::vector<std::string> versions;
      for (int version : kObservationVersions) versions.push_back(std::to_string(version));
      throw std::runtime_error(path + ": trained on observation version " + printable(value, 80) +
                               ", but this sender computes versions " + join(versions) +
                               "; train the policy again");
    }
    observation_version_ = *known;
  }
  const auto obs_dim = static_cast<std::size_t>(observation_dim(observation_version_));
  const auto& obs_dims = shapes.input("obs")->dims;
  if (!obs_dims.empty() && obs_dims.back() >= 0 &&
      obs_dims.back() != static_cast<int64_t>(obs_dim)) {
    throw std::runtime_error(path + ": input obs has shape " + dims_text(obs_dims) +
                             ", the sender's features of observation version " +
                             std::to_string(observation_version_) + " have " +
                             std::to_string(obs_dim));
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
    if (h_dims.back() > kMaxHiddenSize) {
      throw std::runtime_error(path + ": input h has shape " + dims_text(h_dims) +
                               ", more units than this runtime takes (" +
                               std::to_string(kMaxHiddenSize) + ")");
    }
    hidden_size_ = static_cast<int>(h_dims.back());
  }

  const auto hidden = static_cast<std::size_t>(hidden_size_);
  Program& net = net_->program;
  Compiler compiler(path, &net);
  net.obs = compiler.input(*shapes.input("obs"), obs_dim);
  net.h = compiler.input(*shapes.input("h"), hidden);
  net.c = compiler.input(*shapes.input("c"), hidden);
  for (const Initializer& tensor : graph.initializers) compiler.initializer(tensor);
  for (const Node& node : graph.nodes) compiler.node(node);
  net.logits = compiler.output("logits", kNumActions);
  net.h_out = compiler.output("h_out", hidden);
  net.c_out = compiler.output("c_out", hidden);
  compiler.allocate();
}

PolicyRunner::~PolicyRunner() = default;

void PolicyRunner::reset() { net_->program.reset_state(); }

const PolicyRunner::Logits& PolicyRunner::step(const Observation& obs) {
  Program& net = net_->program;
  std::copy_n(obs.begin(), observation_dim(observation_version_), net.at(net.obs));
  net.run();
  const float* logits = net.at(net.logits);
  std::copy(logits, logits + logits_.size(), logits_.begin());
  net.carry_state();
  return logits_;
}

std::span<const float> PolicyRunner::h() const {
  const Program& net = net_->program;
  return {net.at(net.h), net.h.size()};
}

std::span<const float> PolicyRunner::c() const {
  const Program& net = net_->program;
  return {net.at(net.c), net.c.size()};
}

int PolicyRunner::act(const Observation& obs) {
  const Logits& logits = step(obs);
  return static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

}  // namespace ccgym
