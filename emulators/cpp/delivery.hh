// Delivery processes: when a link direction may send. Each opportunity carries
// kOpportunityBytes (mahimahi semantics). Opportunities are produced in
// non-decreasing time order; unused ones are lost.
#pragma once
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/cpp/time.hh"

namespace ccgym {

class DeliveryProcess {
 public:
  virtual ~DeliveryProcess() = default;
  // Time (ms, link clock) of the next opportunity not yet consumed; kNever if none.
  virtual double next_ms() const = 0;
  // Consumes the opportunity returned by next_ms().
  virtual void pop() = 0;
  // True when there is no rate limit: packets pass straight to the delay line.
  virtual bool unlimited() const { return false; }
  virtual std::string to_string() const = 0;
};

// Millisecond timestamps of a mahimahi trace: one line, one opportunity.
struct Trace {
  std::string name;                  // file name, for messages
  std::vector<uint32_t> timestamps;  // ms, non-decreasing, last > 0
  double period_ms() const { return timestamps.back(); }
  double mean_mbps() const;
};

// A trace's timestamps stop at an hour, the longest run ccgym makes: larger ones are
// microseconds or garbage, and a trace run once would otherwise take days.
inline constexpr uint64_t kMaxTraceMs = 3'600'000;

// Reads a mahimahi trace; throws std::invalid_argument("FILE:LINE: what") on an
// empty file, a non-numeric or negative value, a timestamp beyond kMaxTraceMs, or a
// decreasing timestamp. Quoted bad lines are escaped (binary files, NUL bytes).
Trace load_trace(const std::string& path);
Trace parse_trace(const std::string& text, const std::string& name);

// Replays a trace, starting at offset_ms, repeating with period = last timestamp
// unless once is set (then it ends).
class TraceDelivery final : public DeliveryProcess {
 public:
  TraceDelivery(std::shared_ptr<const Trace> trace, bool once, double offset_ms = 0);
  double next_ms() const override { return next_; }
  void pop() override;
  std::string to_string() const override;

 private:
  void compute_next();
  std::shared_ptr<const Trace> trace_;
  bool once_;
  double offset_ms_;
  std::size_t index_ = 0;
  uint64_t cycle_ = 0;
  double next_ = kNever;
};

// Isochronous: one opportunity every 1500 bytes at rate_mbps.
class ConstantDelivery final : public DeliveryProcess {
 public:
  explicit ConstantDelivery(double rate_mbps);
  double next_ms() const override { return next_; }
  void pop() override;
  std::string to_string() const override;

 private:
  double interval_ms_;
  uint64_t count_ = 1;
  double next_;
};

// Poisson: exponential gaps with mean 1500 bytes at rate_mbps; seeded.
class PoissonDelivery final : public DeliveryProcess {
 public:
  PoissonDelivery(double rate_mbps, uint64_t seed);
  double next_ms() const override { return next_; }
  void pop() override;
  std::string to_string() const override;

 private:
  double rate_mbps_;
  std::mt19937_64 rng_;
  std::exponential_distribution<double> gap_;
  double next_;
};

// `packets` opportunities at once every period_ms (ACK aggregation).
class BurstDelivery final : public DeliveryProcess {
 public:
  BurstDelivery(uint32_t packets, double period_ms);
  double next_ms() const override { return next_; }
  void pop() override;
  std::string to_string() const override;

 private:
  uint32_t packets_;
  double period_ms_;
  uint32_t used_in_burst_ = 0;
  double next_;
};

// No rate limit at all (the default ACK direction).
class UnlimitedDelivery final : public DeliveryProcess {
 public:
  double next_ms() const override { return kNever; }
  void pop() override {}
  bool unlimited() const override { return true; }
  std::string to_string() const override { return "unlimited"; }
};

}  // namespace ccgym
