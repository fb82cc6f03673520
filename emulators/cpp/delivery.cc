#include "emulators/cpp/delivery.hh"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "common/cpp/format.hh"
#include "common/cpp/packet.hh"

namespace ccgym {
namespace {

// Paths in messages are escaped (printable) and cut at this length.
constexpr std::size_t kMaxPath = 400;

// Bits in one opportunity, over 1000: dividing by a rate in Mbit/s gives ms.
constexpr double kOpportunityKbit = kOpportunityBytes * 8 / 1000.0;

std::string base_name(const std::string& path) {
  std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

[[noreturn]] void fail_at(const std::string& name, std::size_t line, const std::string& what) {
  throw std::invalid_argument(printable(name, kMaxPath) + ":" + std::to_string(line) + ": " +
                              what);
}

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// A bad line may be binary garbage of any length: quote only its start, escaped.
std::string quote(const char* begin, const char* end) {
  constexpr std::size_t kMax = 40;
  return "'" + printable(std::string_view(begin, static_cast<std::size_t>(end - begin)), kMax) +
         "'";
}

double interval_for_rate(double rate_mbps, const char* what) {
  if (!(rate_mbps > 0) || !std::isfinite(rate_mbps)) {
    throw std::invalid_argument(std::string(what) + ": rate_mbps must be a positive number, got " +
                                format_number(rate_mbps));
  }
  return kOpportunityKbit / rate_mbps;
}

}  // namespace

double Trace::mean_mbps() const {
  return static_cast<double>(timestamps.size()) * kOpportunityKbit / period_ms();
}

Trace parse_trace(const std::string& text, const std::string& name) {
  Trace trace;
  trace.name = name;
  const auto newlines = std::count(text.begin(), text.end(), '\n');
  trace.timestamps.reserve(static_cast<std::size_t>(newlines) + 1);

  const char* pos = text.data();
  const char* const end = text.data() + text.size();
  std::size_t line = 0;
  std::size_t first_blank_line = 0;  // a blank line is only fine if nothing follows it
  std::size_t last_line = 0;
  while (pos < end) {
    ++line;
    const char* newline = static_cast<const char*>(std::memchr(pos, '\n', end - pos));
    const char* line_end = newline ? newline : end;
    const char* b = pos;
    const char* e = line_end;
    pos = newline ? newline + 1 : end;
    while (b < e && is_blank(*b)) ++b;
    while (e > b && is_blank(e[-1])) --e;
    if (b == e) {
      if (first_blank_line == 0) first_blank_line = line;
      continue;
    }
    if (first_blank_line != 0) fail_at(name, first_blank_line, "blank line inside the trace");

    if (*b == '-') fail_at(name, line, "negative timestamp " + quote(b, e));
    uint64_t value = 0;
    for (const char* c = b; c < e; ++c) {
      if (*c < '0' || *c > '9') {
        fail_at(name, line, "expected a non-negative integer (ms), got " + quote(b, e));
      }
      value = value * 10 + static_cast<uint64_t>(*c - '0');
      if (value > kMaxTraceMs) {
        fail_at(name, line, "timestamp " + quote(b, e) + " is beyond " +
                                std::to_string(kMaxTraceMs) +
                                " ms (an hour); are the timestamps in ms?");
      }
    }
    const auto ms = static_cast<uint32_t>(value);
    if (!trace.timestamps.empty() && ms < trace.timestamps.back()) {
      fail_at(name, line,
              "timestamp " + std::to_string(ms) + " is before the previous one (" +
                  std::to_string(trace.timestamps.back()) + "); timestamps must not decrease");
    }
    trace.timestamps.push_back(ms);
    last_line = line;
  }
  if (trace.timestamps.empty()) fail_at(name, 1, "empty trace (no timestamps)");
  if (trace.timestamps.back() == 0) {
    fail_at(name, last_line, "last timestamp is 0, so the trace would repeat with period 0 ms");
  }
  return trace;
}

Trace load_trace(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw std::invalid_argument(printable(path, kMaxPath) + ": is a directory, not a trace file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::invalid_argument(printable(path, kMaxPath) + ": cannot open trace file (" +
                                std::strerror(errno) + ")");
  }
  std::string text;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) throw std::invalid_argument(printable(path, kMaxPath) + ": read error");
  return parse_trace(text, path);
}

// --- TraceDelivery ---

TraceDelivery::TraceDelivery(std::shared_ptr<const Trace> trace, bool once, double offset_ms)
    : trace_(std::move(trace)), once_(once), offset_ms_(offset_ms) {
  if (!trace_ || trace_->timestamps.empty() || trace_->timestamps.back() == 0) {
    throw std::invalid_argument("TraceDelivery: needs a non-empty trace with a period > 0 ms");
  }
  compute_next();
}

void TraceDelivery::compute_next() {
  const auto& ts = trace_->timestamps;
  if (index_ == ts.size()) {
    if (once_) {
      next_ = kNever;
      return;
    }
    index_ = 0;
    ++cycle_;
  }
  // Multiplying (not accumulating) keeps later cycles exact for any run length.
  next_ = offset_ms_ + static_cast<double>(cycle_) * trace_->period_ms() + ts[index_];
}

void TraceDelivery::pop() {
  if (next_ == kNever) return;
  ++index_;
  compute_next();
}

std::string TraceDelivery::to_string() const {
  return "trace(" + base_name(trace_->name) + (once_ ? ", once)" : ")");
}

// --- ConstantDelivery ---

ConstantDelivery::ConstantDelivery(double rate_mbps)
    : interval_ms_(interval_for_rate(rate_mbps, "constant delivery")), next_(interval_ms_) {}

void ConstantDelivery::pop() {
  ++count_;
  next_ = static_cast<double>(count_) * interval_ms_;
}

std::string ConstantDelivery::to_string() const {
  // Only the interval is kept; 12 digits hide the rounding of rate -> interval -> rate.
  char buf[32];
  auto result = std::to_chars(buf, buf + sizeof buf, kOpportunityKbit / interval_ms_,
                              std::chars_format::general, 12);
  return "constant(" + std::string(buf, result.ptr) + " Mbit/s)";
}

// --- PoissonDelivery ---

PoissonDelivery::PoissonDelivery(double rate_mbps, uint64_t seed)
    : rate_mbps_(rate_mbps),
      rng_(seed),
      gap_(1.0 / interval_for_rate(rate_mbps, "poisson delivery")),
      next_(gap_(rng_)) {}

void PoissonDelivery::pop() { next_ += gap_(rng_); }

std::string PoissonDelivery::to_string() const {
  return "poisson(" + format_number(rate_mbps_) + " Mbit/s)";
}

// --- BurstDelivery ---

BurstDelivery::BurstDelivery(uint32_t packets, double period_ms)
    : packets_(packets), period_ms_(period_ms), next_(period_ms) {
  if (packets == 0) throw std::invalid_argument("burst delivery: packets must be at least 1");
  if (!(period_ms > 0) || !std::isfinite(period_ms)) {
    throw std::invalid_argument("burst delivery: period_ms must be a positive number, got " +
                                format_number(period_ms));
  }
}

void BurstDelivery::pop() {
  if (++used_in_burst_ < packets_) return;
  used_in_burst_ = 0;
  // Recover the burst index and multiply, so a non-integer period does not drift.
  const double burst = std::round(next_ / period_ms_);
  next_ = (burst + 1) * period_ms_;
}

std::string BurstDelivery::to_string() const {
  return "burst(" + std::to_string(packets_) + "/" + format_number(period_ms_) + " ms)";
}

}  // namespace ccgym
