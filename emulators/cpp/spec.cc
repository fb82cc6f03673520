#include "emulators/cpp/spec.hh"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <mutex>
#include <stdexcept>

#include "common/cpp/format.hh"
#include "common/cpp/packet.hh"
#include "common/cpp/splitmix.hh"
#include "emulators/cpp/queue.hh"

namespace ccgym {
namespace {

const std::vector<std::string> kSharedKeys = {"name", "delay_ms", "once", "delayed_acks"};
const std::vector<std::string> kDirectionKeys = {
    "trace", "rate_mbps", "delivery", "burst_packets", "burst_period_ms", "queue", "loss",
    "jitter_ms"};
const std::vector<std::string> kDeliveries = {"constant", "poisson", "trace", "burst"};
constexpr const char* kAck = "ack_";
// Errors quote at most this much of a spec (a fuzzer's or a pasted file's may be long).
constexpr std::size_t kMaxQuoted = 200;
constexpr std::size_t kMaxMessage = 1000;

std::string trim(const std::string& s) {
  const char* ws = " \t\r\n";
  std::size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// Raises std::invalid_argument with a fixed context prefix (which spec, which direction).
struct Failer {
  std::string context;
  [[noreturn]] void operator()(const std::string& what) const {
    // Keys and values are the user's text: escaped, so that no byte of it garbles the message.
    throw std::invalid_argument(context + printable(what, kMaxMessage));
  }
};

enum class Kind { kUnlimited, kTrace, kConstant, kPoisson, kBurst };

// What the non-`delivery` keys imply when `delivery` is absent.
std::string inferred_delivery(const DirectionSpec& d) {
  if (!d.trace.empty()) return "trace";
  if (d.burst_packets != 0 || d.burst_period_ms != 0) return "burst";
  if (d.rate_mbps != 0) return "constant";
  return "";
}

bool is_infinite_queue(const std::string& queue) {
  return make_queue(queue, 0)->to_string() == "infinite";
}

// Checks that a direction's keys agree with each other and says how it delivers.
// `p` is "" or "ack_", so messages name the keys as the user wrote them.
Kind resolve(const DirectionSpec& d, const std::string& p, const Failer& fail) {
  if (d.rate_mbps != 0 && !(d.rate_mbps >= kMinRateMbps && d.rate_mbps <= kMaxRateMbps)) {
    fail("key '" + p + "rate_mbps' must be in [" + format_number(kMinRateMbps) + ", " +
         format_number(kMaxRateMbps) + "] Mbit/s, got " + format_number(d.rate_mbps));
  }
  if (!(d.loss >= 0 && d.loss < 1)) {
    fail("key '" + p + "loss' must be in [0, 1), got " + format_number(d.loss));
  }
  if (d.jitter_ms && !(*d.jitter_ms >= 0 && *d.jitter_ms <= kMaxJitterMs)) {
    fail("key '" + p + "jitter_ms' must be in [0, " + format_number(kMaxJitterMs) + "] ms, got " +
         format_number(*d.jitter_ms));
  }
  if (!(d.burst_period_ms >= 0 && d.burst_period_ms <= kMaxBurstPeriodMs)) {
    fail("key '" + p + "burst_period_ms' must be in (0, " + format_number(kMaxBurstPeriodMs) +
         "] ms, got " + format_number(d.burst_period_ms));
  }
  if (!d.delivery.empty() &&
      std::find(kDeliveries.begin(), kDeliveries.end(), d.delivery) == kDeliveries.end()) {
    fail("key '" + p + "delivery' must be one of " + join(kDeliveries, "|") + ", got '" +
         d.delivery + "'");
  }
  const bool has_trace = !d.trace.empty();
  const bool has_rate = d.rate_mbps != 0;
  const bool has_burst = d.burst_packets != 0 || d.burst_period_ms != 0;
  if (has_trace + has_rate + has_burst > 1) {
    std::vector<std::string> given;
    if (has_trace) given.push_back("'" + p + "trace'");
    if (has_rate) given.push_back("'" + p + "rate_mbps'");
    if (has_burst) given.push_back("'" + p + "burst_packets'");
    fail("keys " + join(given, " and ") + " conflict: give one of " + p + "trace, " + p +
         "rate_mbps, or " + p + "burst_packets with " + p + "burst_period_ms");
  }
  const std::string delivery = d.delivery.empty() ? inferred_delivery(d) : d.delivery;
  if (has_trace && delivery != "trace") {
    fail("key '" + p + "trace' needs " + p + "delivery=trace (or no " + p + "delivery key), got " +
         p + "delivery=" + delivery);
  }
  if (has_burst && delivery != "burst") {
    fail("key '" + p + "burst_packets' needs " + p + "delivery=burst (or no " + p +
         "delivery key), got " + p + "delivery=" + delivery);
  }
  if (delivery == "trace") {
    if (!has_trace) fail("key '" + p + "delivery' is trace but key '" + p + "trace' is missing");
    return Kind::kTrace;
  }
  if (delivery == "burst") {
    if (d.burst_packets == 0 || d.burst_period_ms == 0) {
      fail("burst delivery needs both keys '" + p + "burst_packets' and '" + p +
           "burst_period_ms' (positive)");
    }
    // The same bounds as a rate: a huge burst is as slow to emulate as a huge rate.
    const double rate_mbps =
        d.burst_packets * (kOpportunityBytes * 8 / 1000.0) / d.burst_period_ms;
    if (!(rate_mbps >= kMinRateMbps && rate_mbps <= kMaxRateMbps)) {
      fail("keys '" + p + "burst_packets' and '" + p + "burst_period_ms' make a rate of " +
           format_number(rate_mbps) + " Mbit/s; it must be in [" + format_number(kMinRateMbps) +
           ", " + format_number(kMaxRateMbps) + "]");
    }
    return Kind::kBurst;
  }
  if (delivery == "constant" || delivery == "poisson") {
    if (!has_rate) {
      fail("key '" + p + "delivery' is " + delivery + " but key '" + p + "rate_mbps' is missing");
    }
    return delivery == "constant" ? Kind::kConstant : Kind::kPoisson;
  }
  // Nothing limits the rate: a queue could never fill, so a bounded one is a mistake.
  if (!is_infinite_queue(d.queue)) {
    fail("key '" + p + "queue' needs a rate limit on that direction (" + p + "trace, " + p +
         "rate_mbps or " + p + "burst_packets)");
  }
  return Kind::kUnlimited;
}

// Loaded traces, shared by every simulator in the process (they run on threads).
std::shared_ptr<const Trace> cached_trace(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const Trace>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(path);
  if (it != cache.end()) return it->second;
  auto trace = std::make_shared<const Trace>(load_trace(path));
  cache.emplace(path, trace);
  return trace;
}

void append_direction(std::vector<std::string>& parts, const DirectionSpec& d,
                      const std::string& p) {
  if (!d.trace.empty()) parts.push_back(p + "trace=" + d.trace);
  if (d.rate_mbps != 0) parts.push_back(p + "rate_mbps=" + format_number(d.rate_mbps));
  if (!d.delivery.empty() && d.delivery != inferred_delivery(d)) {
    parts.push_back(p + "delivery=" + d.delivery);
  }
  if (d.burst_packets != 0) parts.push_back(p + "burst_packets=" + std::to_string(d.burst_packets));
  if (d.burst_period_ms != 0) {
    parts.push_back(p + "burst_period_ms=" + format_number(d.burst_period_ms));
  }
  if (d.queue != "infinite") parts.push_back(p + "queue=" + d.queue);
  if (d.loss != 0) parts.push_back(p + "loss=" + format_number(d.loss));
  // Given, even as 0: an explicit 0 turns off the shared links' default.
  if (d.jitter_ms) parts.push_back(p + "jitter_ms=" + format_number(*d.jitter_ms));
}

// Splitmix64: decorrelates the derived streams even for consecutive seeds.
uint64_t derive_seed(uint64_t seed, uint64_t stream) {
  return splitmix64_mix(seed * 3 + stream + kSplitmixIncrement);
}

class SpecParser {
 public:
  explicit SpecParser(const std::string& text)
      : fail_{"link spec '" + printable(text, kMaxQuoted) + "': "} {}

  LinkSpec parse(const std::string& text) {
    LinkSpec spec;
    if (trim(text).empty()) {
      fail_("empty; a data direction needs trace=FILE or rate_mbps=R (valid keys: " +
            join(link_spec_keys()) + ")");
    }
    std::vector<std::string> seen;
    std::size_t start = 0;
    while (start <= text.size()) {
      std::size_t comma = std::min(text.find(',', start), text.size());
      const std::string item = trim(text.substr(start, comma - start));
      start = comma + 1;
      if (item.empty()) fail_("empty item (a stray ',')");
      const std::size_t eq = item.find('=');
      if (eq == std::string::npos) {
        fail_("item '" + item + "' is not key=value (valid keys: " + join(link_spec_keys()) + ")");
      }
      const std::string key = trim(item.substr(0, eq));
      const std::string value = trim(item.substr(eq + 1));
      const auto keys = link_spec_keys();
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
        fail_("unknown key '" + key + "' (valid: " + join(keys) + ")");
      }
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
        fail_("duplicate key '" + key + "'");
      }
      seen.push_back(key);
      if (value.empty()) fail_("empty value for key '" + key + "'");
      set(spec, key, value);
    }

    for (auto [d, p] : {std::pair{&spec.data, ""}, std::pair{&spec.ack, kAck}}) {
      const Kind kind = resolve(*d, p, fail_);
      if (kind == Kind::kUnlimited && d == &spec.data) {
        fail_("the data direction needs a rate: key 'trace', 'rate_mbps', or 'burst_packets' with "
              "'burst_period_ms'");
      }
      d->delivery = inferred_or_given(*d);
      if (kind == Kind::kTrace) {
        try {
          cached_trace(d->trace);
        } catch (const std::invalid_argument& e) {
          fail_("key '" + std::string(p) + "trace': " + e.what());
        }
      }
    }
    return spec;
  }

 private:
  bool flag(const std::string& key, const std::string& value) {
    if (value == "1" || value == "true") return true;
    if (value != "0" && value != "false") {
      fail_("key '" + key + "' must be 1 or 0 (or true, false), got '" + value + "'");
    }
    return false;
  }

  static std::string inferred_or_given(const DirectionSpec& d) {
    return d.delivery.empty() ? inferred_delivery(d) : d.delivery;
  }

  void set(LinkSpec& spec, const std::string& key, const std::string& value) {
    if (key == "name") {
      spec.name = value;
    } else if (key == "delay_ms") {
      spec.delay_ms = number(key, value);
      if (!(spec.delay_ms >= 0 && spec.delay_ms <= kMaxDelayMs)) {
        fail_("key 'delay_ms' (one way) must be in [0, " + format_number(kMaxDelayMs) +
              "] ms, got '" + value + "'");
      }
    } else if (key == "once") {
      spec.once = flag(key, value);
    } else if (key == "delayed_acks") {
      spec.delayed_acks = flag(key, value);
    } else if (key.rfind(kAck, 0) == 0) {
      set_direction(spec.ack, key, key.substr(std::char_traits<char>::length(kAck)), value);
    } else {
      set_direction(spec.data, key, key, value);
    }
  }

  void set_direction(DirectionSpec& d, const std::string& key, const std::string& base,
                     const std::string& value) {
    if (base == "trace") {
      d.trace = value;
    } else if (base == "rate_mbps") {
      d.rate_mbps = number(key, value);
      if (!(d.rate_mbps > 0)) fail_("key '" + key + "' must be > 0, got '" + value + "'");
    } else if (base == "delivery") {
      if (std::find(kDeliveries.begin(), kDeliveries.end(), value) == kDeliveries.end()) {
        fail_("key '" + key + "' must be one of " + join(kDeliveries, "|") + ", got '" + value +
              "'");
      }
      d.delivery = value;
    } else if (base == "burst_packets") {
      uint32_t n = 0;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || ptr != value.data() + value.size() || n == 0) {
        fail_("key '" + key + "' must be a positive integer, got '" + value + "'");
      }
      d.burst_packets = n;
    } else if (base == "burst_period_ms") {
      d.burst_period_ms = number(key, value);
      if (!(d.burst_period_ms > 0)) fail_("key '" + key + "' must be > 0, got '" + value + "'");
    } else if (base == "queue") {
      try {
        d.queue = make_queue(value, 0)->to_string();
      } catch (const std::invalid_argument& e) {
        fail_("key '" + key + "': " + e.what());
      }
    } else if (base == "loss") {
      d.loss = number(key, value);
      if (!(d.loss >= 0 && d.loss < 1)) {
        fail_("key '" + key + "' must be in [0, 1), got '" + value + "'");
      }
    } else if (base == "jitter_ms") {
      d.jitter_ms = number(key, value);
      if (!(*d.jitter_ms >= 0 && *d.jitter_ms <= kMaxJitterMs)) {
        fail_("key '" + key + "' must be in [0, " + format_number(kMaxJitterMs) + "] ms, got '" +
              value + "'");
      }
    }
  }

  double number(const std::string& key, const std::string& value) const {
    double x = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), x);
    if (ec != std::errc() || ptr != value.data() + value.size() || !std::isfinite(x)) {
      fail_("key '" + key + "' must be a number, got '" + value + "'");
    }
    return x;
  }

  Failer fail_;
};

}  // namespace

std::vector<std::string> link_spec_keys() {
  std::vector<std::string> keys = kSharedKeys;
  for (const auto& k : kDirectionKeys) keys.push_back(k);
  for (const auto& k : kDirectionKeys) keys.push_back(kAck + k);
  return keys;
}

LinkSpec parse_link_spec(const std::string& text) { return SpecParser(text).parse(text); }

void refuse_simulated_receivers(const LinkSpec& spec) {
  if (spec.delayed_acks) {
    throw std::invalid_argument(
        "key 'delayed_acks' describes the simulator's receivers; in real time the receivers are "
        "real (kernel TCP delays its ACKs, ccgym-receiver answers every datagram)");
  }
}

std::shared_ptr<const LinkSpec> cached_link_spec(const std::string& text) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const LinkSpec>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(text);
  if (it != cache.end()) return it->second;
  auto spec = std::make_shared<const LinkSpec>(parse_link_spec(text));
  cache.emplace(text, spec);
  return spec;
}

std::string LinkSpec::to_string() const {
  std::vector<std::string> parts;
  if (!name.empty()) parts.push_back("name=" + name);
  append_direction(parts, data, "");
  append_direction(parts, ack, kAck);
  parts.push_back("delay_ms=" + format_number(delay_ms));
  if (once) parts.push_back("once=1");
  // Given, even as 0: an explicit 0 turns off the shared links' default.
  if (delayed_acks) parts.push_back(std::string("delayed_acks=") + (*delayed_acks ? "1" : "0"));
  return join(parts, ",");
}

double mean_rate_mbps(const DirectionSpec& spec) {
  switch (resolve(spec, "", Failer{"direction: "})) {
    case Kind::kTrace:
      return cached_trace(spec.trace)->mean_mbps();
    case Kind::kConstant:
    case Kind::kPoisson:
      return spec.rate_mbps;
    case Kind::kBurst:
      return spec.burst_packets * (kOpportunityBytes * 8 / 1000.0) / spec.burst_period_ms;
    case Kind::kUnlimited:
      break;
  }
  return 0;
}

std::unique_ptr<LinkDirection> make_direction(const DirectionSpec& spec, double delay_ms,
                                              bool once, uint64_t seed) {
  std::vector<std::string> parts;
  append_direction(parts, spec, "");
  const Failer fail{"direction '" + join(parts, ",") + "': "};
  if (!(delay_ms >= 0 && delay_ms <= kMaxDelayMs)) {
    fail("delay_ms must be in [0, " + format_number(kMaxDelayMs) + "], got " +
         format_number(delay_ms));
  }

  std::unique_ptr<DeliveryProcess> delivery;
  switch (resolve(spec, "", fail)) {
    case Kind::kTrace:
      delivery = std::make_unique<TraceDelivery>(cached_trace(spec.trace), once);
      break;
    case Kind::kConstant:
      delivery = std::make_unique<ConstantDelivery>(spec.rate_mbps);
      break;
    case Kind::kPoisson:
      delivery = std::make_unique<PoissonDelivery>(spec.rate_mbps, derive_seed(seed, 0));
      break;
    case Kind::kBurst:
      delivery = std::make_unique<BurstDelivery>(spec.burst_packets, spec.burst_period_ms);
      break;
    case Kind::kUnlimited:
      delivery = std::make_unique<UnlimitedDelivery>();
      break;
  }
  auto queue = make_queue(spec.queue, derive_seed(seed, 1));
  return std::make_unique<LinkDirection>(std::move(delivery), std::move(queue), spec.loss, delay_ms,
                                         derive_seed(seed, 2), spec.jitter_ms.value_or(0),
                                         derive_seed(seed, 3));
}

}  // namespace ccgym
