#include "emulators/cpp/queue.hh"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "common/cpp/format.hh"
#include "common/cpp/packet.hh"

namespace ccgym {
namespace {

constexpr uint64_t kMaxQueuePackets = 1'000'000;
// Errors quote the user's text escaped and at most this long.
constexpr std::size_t kMaxQuoted = 200;

// The `key=value` arguments of one spec, checked against the keys its
// discipline accepts; every error names the whole spec, the key and the valid keys.
class QueueArgs {
 public:
  QueueArgs(const std::string& spec, const std::string& discipline,
            std::vector<std::string> valid_keys, const std::vector<std::string>& items)
      : spec_(spec), discipline_(discipline), valid_(std::move(valid_keys)) {
    for (const auto& item : items) {
      std::size_t eq = item.find('=');
      if (eq == std::string::npos) {
        fail("argument '" + item + "' is not key=value" + valid_list());
      }
      std::string key = item.substr(0, eq);
      std::string value = item.substr(eq + 1);
      if (std::find(valid_.begin(), valid_.end(), key) == valid_.end()) {
        fail("unknown key '" + key + "'" + valid_list());
      }
      for (const auto& [seen, unused] : given_) {
        if (seen == key) fail("duplicate key '" + key + "'");
      }
      if (value.empty()) fail("empty value for key '" + key + "'");
      given_.emplace_back(key, value);
    }
  }

  bool has(const std::string& key) const { return find(key) != nullptr; }

  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument("queue '" + printable(spec_, kMaxQuoted) + "': " +
                                printable(what, kMaxQuoted));
  }

  std::string valid_list() const {
    if (valid_.empty()) return " (" + discipline_ + " takes no keys)";
    return " (valid: " + join(valid_) + ")";
  }

  // A count of packets or bytes: an integer in [lo, hi].
  uint64_t count(const std::string& key, uint64_t lo, uint64_t hi) const {
    const std::string& text = required(key);
    uint64_t value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size() || value < lo || value > hi) {
      fail("key '" + key + "' must be an integer in [" + std::to_string(lo) + ", " +
           std::to_string(hi) + "], got '" + text + "'");
    }
    return value;
  }

  // A real in [lo, hi] (or (lo, hi] when lo_open), or `fallback` if the key is absent.
  double real(const std::string& key, double lo, double hi, bool lo_open,
              double fallback = std::numeric_limits<double>::quiet_NaN()) const {
    const std::string* text = find(key);
    if (text == nullptr) {
      if (std::isnan(fallback)) required(key);
      return fallback;
    }
    double value = 0;
    auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
    bool ok = ec == std::errc() && ptr == text->data() + text->size() && std::isfinite(value) &&
              (lo_open ? value > lo : value >= lo) && value <= hi;
    if (!ok) {
      std::string range = std::isinf(hi) ? (lo_open ? "> " : ">= ") + format_number(lo)
                                         : std::string(lo_open ? "in (" : "in [") +
                                               format_number(lo) + ", " + format_number(hi) + "]";
      fail("key '" + key + "' must be a number " + range + ", got '" + *text + "'");
    }
    return value;
  }

 private:
  const std::string* find(const std::string& key) const {
    for (const auto& [k, v] : given_) {
      if (k == key) return &v;
    }
    return nullptr;
  }
  const std::string& required(const std::string& key) const {
    const std::string* text = find(key);
    if (text == nullptr) fail("missing key '" + key + "'" + valid_list());
    return *text;
  }

  std::string spec_;
  std::string discipline_;
  std::vector<std::string> valid_;
  std::vector<std::pair<std::string, std::string>> given_;
};

class InfiniteQueue final : public FifoQueue {
 public:
  bool enqueue(const Packet& packet, double) override {
    push(packet);
    return true;
  }
  std::string to_string() const override { return "infinite"; }
};

class DropTailQueue final : public FifoQueue {
 public:
  DropTailQueue(uint64_t limit, bool in_bytes) : limit_(limit), in_bytes_(in_bytes) {}
  bool enqueue(const Packet& packet, double) override {
    uint64_t after = in_bytes_ ? size_bytes() + packet.bytes : size_packets() + 1;
    if (after > limit_) return false;
    push(packet);
    return true;
  }
  std::string to_string() const override {
    return std::string("droptail:") + (in_bytes_ ? "bytes=" : "packets=") + std::to_string(limit_);
  }

 private:
  uint64_t limit_;
  bool in_bytes_;
};

// Random Early Detection (Floyd & Jacobson 1993) in packet mode. The link rate is
// not known here, so an arrival to an empty queue counts as one zero-length
// sample instead of the paper's idle-time decay.
class RedQueue final : public FifoQueue {
 public:
  RedQueue(double min_th, double max_th, double max_p, double weight, uint64_t seed)
      : min_(min_th), max_(max_th), max_p_(max_p), weight_(weight), rng_(seed) {}

  bool enqueue(const Packet& packet, double) override {
    avg_ = (1 - weight_) * avg_ + weight_ * static_cast<double>(size_packets());
    if (avg_ >= max_) {
      count_ = 0;
      return false;
    }
    if (avg_ < min_) {
      count_ = -1;
      push(packet);
      return true;
    }
    ++count_;
    const double pb = max_p_ * (avg_ - min_) / (max_ - min_);
    // Spreading drops by the count since the last one makes gaps near-uniform
    // rather than geometric; once count * pb reaches 1 a drop is due.
    const double denom = 1 - static_cast<double>(count_) * pb;
    if (denom <= 0 || uniform_(rng_) * denom < pb) {
      count_ = 0;
      return false;
    }
    push(packet);
    return true;
  }
  std::string to_string() const override {
    return "red:min=" + format_number(min_) + ":max=" + format_number(max_) +
           ":max_p=" + format_number(max_p_) + ":weight=" + format_number(weight_);
  }

 private:
  double min_, max_, max_p_, weight_;
  double avg_ = 0;
  int64_t count_ = -1;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> uniform_{0.0, 1.0};
};

// CoDel, following the pseudocode of RFC 8289 section 5.
class CoDelQueue final : public FifoQueue {
 public:
  CoDelQueue(double target_ms, double interval_ms) : target_(target_ms), interval_(interval_ms) {}

  bool enqueue(const Packet& packet, double) override {
    push(packet);
    return true;
  }

  bool dequeue(double now_ms, Packet& out, std::vector<Packet>& dropped) override {
    bool ok_to_drop = false;
    bool have = do_dequeue(now_ms, out, ok_to_drop);
    if (!have) {
      dropping_ = false;
      return false;
    }
    if (dropping_) {
      if (!ok_to_drop) {
        dropping_ = false;
      }
      while (dropping_ && now_ms >= drop_next_) {
        dropped.push_back(out);
        ++count_;
        have = do_dequeue(now_ms, out, ok_to_drop);
        if (!ok_to_drop) {
          dropping_ = false;
        } else {
          drop_next_ = control_law(drop_next_);
        }
      }
    } else if (ok_to_drop) {
      dropped.push_back(out);
      have = do_dequeue(now_ms, out, ok_to_drop);
      dropping_ = true;
      // Re-entering soon after leaving: resume near the previous drop rate,
      // since the queue has not been under control for long.
      const uint32_t delta = count_ - last_count_;
      count_ = (delta > 1 && now_ms - drop_next_ < 16 * interval_) ? delta : 1;
      drop_next_ = control_law(now_ms);
      last_count_ = count_;
    }
    return have;
  }

  std::string to_string() const override {
    return "codel:target_ms=" + format_number(target_) + ":interval_ms=" + format_number(interval_);
  }

 private:
  double control_law(double t) const {
    return t + interval_ / std::sqrt(static_cast<double>(count_));
  }

  // Pops the head and says whether its sojourn has stayed above target for a
  // whole interval; a queue holding at most one MTU is never judged too long.
  bool do_dequeue(double now_ms, Packet& out, bool& ok_to_drop) {
    ok_to_drop = false;
    if (empty()) {
      above_ = false;
      return false;
    }
    out = pop();
    const double sojourn = now_ms - out.enqueued_ms;
    if (sojourn < target_ || size_bytes() <= kDataPacketBytes) {
      above_ = false;
    } else if (!above_) {
      above_ = true;
      first_above_ms_ = now_ms + interval_;
    } else if (now_ms >= first_above_ms_) {
      ok_to_drop = true;
    }
    return true;
  }

  double target_, interval_;
  bool above_ = false;  // sojourn has been above target since first_above_ms_ - interval
  double first_above_ms_ = 0;
  bool dropping_ = false;
  double drop_next_ = 0;
  uint32_t count_ = 0;
  uint32_t last_count_ = 0;
};

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    std::size_t at = text.find(sep, start);
    parts.push_back(text.substr(start, at - start));
    if (at == std::string::npos) return parts;
    start = at + 1;
  }
}

}  // namespace

std::unique_ptr<Queue> make_queue(const std::string& spec, uint64_t seed) {
  std::vector<std::string> items = split(spec, ':');
  const std::string name = items.front();
  items.erase(items.begin());

  if (name == "infinite") {
    QueueArgs args(spec, name, {}, items);
    return std::make_unique<InfiniteQueue>();
  }
  if (name == "droptail") {
    QueueArgs args(spec, name, {"packets", "bytes"}, items);
    if (args.has("packets") == args.has("bytes")) {
      args.fail("droptail needs exactly one of the keys packets, bytes");
    }
    const bool in_bytes = args.has("bytes");
    // At least one full packet fits; at most a million packets (1.5 GB), far beyond any
    // buffer worth emulating (a bigger one is in effect infinite: say so).
    const uint64_t capacity = in_bytes ? args.count("bytes", kOpportunityBytes,
                                                  kMaxQueuePackets * kOpportunityBytes)
                                       : args.count("packets", 1, kMaxQueuePackets);
    return std::make_unique<DropTailQueue>(capacity, in_bytes);
  }
  if (name == "red") {
    QueueArgs args(spec, name, {"min", "max", "max_p", "weight"}, items);
    constexpr double kInf = std::numeric_limits<double>::infinity();
    const double min_th = args.real("min", 0, kInf, false);
    const double max_th = args.real("max", 0, kInf, true);
    const double max_p = args.real("max_p", 0, 1, true);
    // Floyd & Jacobson's recommended queue weight.
    const double weight = args.real("weight", 0, 1, true, 0.002);
    if (!(min_th < max_th)) args.fail("key 'min' must be below key 'max'");
    return std::make_unique<RedQueue>(min_th, max_th, max_p, weight, seed);
  }
  if (name == "codel") {
    QueueArgs args(spec, name, {"target_ms", "interval_ms"}, items);
    constexpr double kInf = std::numeric_limits<double>::infinity();
    // RFC 8289's defaults: 5 ms target, 100 ms interval.
    const double target = args.real("target_ms", 0, kInf, true, 5.0);
    const double interval = args.real("interval_ms", 0, kInf, true, 100.0);
    return std::make_unique<CoDelQueue>(target, interval);
  }
  throw std::invalid_argument("queue '" + printable(spec, kMaxQuoted) + "': unknown discipline '" +
                              printable(name, kMaxQuoted) +
                              "' (valid: infinite, droptail, red, codel)");
}

}  // namespace ccgym
