#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "emulators/cpp/delivery.hh"

namespace ccgym {
namespace {

std::string error_of_parse(const std::string& text) {
  try {
    parse_trace(text, "t.trace");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

std::string data_dir() {
  const char* env = std::getenv("CCGYM_DATA");
  return env ? env : "/work/shared/data";
}

std::shared_ptr<const Trace> trace_of(const std::string& text) {
  return std::make_shared<const Trace>(parse_trace(text, "t.trace"));
}

TEST(DeliveryTraceParse, AcceptsRepeatedStampsWhitespaceAndCrlf) {
  Trace t = parse_trace("0\n0 \r\n5\t\r\n10", "x");
  EXPECT_EQ(t.timestamps, (std::vector<uint32_t>{0, 0, 5, 10}));
  EXPECT_EQ(t.period_ms(), 10);
  EXPECT_DOUBLE_EQ(t.mean_mbps(), 4 * 1500 * 8 / (10 * 1000.0));
  EXPECT_EQ(parse_trace("3\n7\n\n", "x").timestamps, (std::vector<uint32_t>{3, 7}));
}

TEST(DeliveryTraceParse, EachBadTraceNamesFileAndLine) {
  struct Case {
    const char* text;
    const char* prefix;
  };
  const Case cases[] = {
      {"", "t.trace:1: "},                  // empty file
      {"\n\n", "t.trace:1: "},              // only blank lines
      {"1\nabc\n3\n", "t.trace:2: "},       // garbage
      {"1\n2\n-3\n", "t.trace:3: "},        // negative
      {"1\n2.5\n", "t.trace:2: "},          // not an integer
      {"1\n12x\n", "t.trace:2: "},          // trailing garbage
      {"1 2\n", "t.trace:1: "},             // two numbers on one line
      {"99999999999\n", "t.trace:1: "},     // beyond 32 bits
      {"0\n3600001\n", "t.trace:2: "},      // beyond an hour (microseconds?)
      {"1\n5\n4\n6\n", "t.trace:3: "},      // decreasing
      {"0\n0\n0\n", "t.trace:3: "},         // period 0
      {"1\n\n2\n", "t.trace:2: "},          // blank line inside
  };
  for (const auto& c : cases) {
    std::string msg = error_of_parse(c.text);
    EXPECT_EQ(msg.rfind(c.prefix, 0), 0u) << "trace '" << c.text << "' gave: " << msg;
  }
}

TEST(DeliveryTraceParse, BinaryLinesAreQuotedEscaped) {
  // A NUL byte would end the message in C and Python: the message shows it as \x00.
  const std::string text = std::string("0\n1\n\x01\x00\xff\n", 7);
  const std::string msg = error_of_parse(text);
  EXPECT_EQ(msg.rfind("t.trace:3: ", 0), 0u) << msg;
  EXPECT_NE(msg.find("'\\x01\\x00\\xff'"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\0'), std::string::npos);
}

TEST(DeliveryTraceParse, LoadTraceNamesThePath) {
  const std::string path = testing::TempDir() + "ccgym_delivery_bad.trace";
  {
    std::ofstream out(path);
    out << "5\n10\n7\n";
  }
  try {
    load_trace(path);
    ADD_FAILURE() << "decreasing trace accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ":3: ", 0), 0u) << e.what();
  }
  {
    std::ofstream out(path);
    out << "5\n10\n";
  }
  Trace t = load_trace(path);
  EXPECT_EQ(t.timestamps, (std::vector<uint32_t>{5, 10}));
  std::filesystem::remove(path);
  try {
    load_trace(path);
    ADD_FAILURE() << "missing file accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
  }
}

TEST(DeliveryTraceReplay, RepeatsWithItsPeriodFromTheOffset) {
  auto trace = trace_of("0\n0\n3\n3\n8\n");
  const double offset = 2.5;
  TraceDelivery d(trace, false, offset);
  double previous = -1;
  for (uint64_t cycle = 0; cycle < 50; ++cycle) {
    for (uint32_t ts : trace->timestamps) {
      EXPECT_DOUBLE_EQ(d.next_ms(), offset + static_cast<double>(cycle) * 8 + ts);
      EXPECT_GE(d.next_ms(), previous);
      previous = d.next_ms();
      d.pop();
    }
  }
  EXPECT_EQ(d.to_string(), "trace(t.trace)");
}

TEST(DeliveryTraceReplay, OnceEndsAfterTheLastLine) {
  auto trace = trace_of("1\n4\n4\n");
  TraceDelivery d(trace, true);
  std::vector<double> seen;
  while (d.next_ms() != kNever && seen.size() < 10) {
    seen.push_back(d.next_ms());
    d.pop();
  }
  EXPECT_EQ(seen, (std::vector<double>{1, 4, 4}));
  d.pop();
  EXPECT_EQ(d.next_ms(), kNever);
}

TEST(DeliveryConstant, IntervalStaysExactAfterAMillionOpportunities) {
  ConstantDelivery d(100);
  const double interval = 1500 * 8 / (100 * 1000.0);
  EXPECT_DOUBLE_EQ(d.next_ms(), interval);
  double previous = 0;
  for (int i = 0; i < 1000000; ++i) {
    ASSERT_NEAR(d.next_ms() - previous, interval, 1e-9) << "at opportunity " << i;
    previous = d.next_ms();
    d.pop();
  }
  EXPECT_DOUBLE_EQ(d.next_ms(), 1000001 * interval);
  EXPECT_EQ(d.to_string(), "constant(100 Mbit/s)");
  EXPECT_EQ(ConstantDelivery(12).to_string(), "constant(12 Mbit/s)");
}

TEST(DeliveryConstant, RejectsNonPositiveRates) {
  EXPECT_THROW(ConstantDelivery(0), std::invalid_argument);
  EXPECT_THROW(ConstantDelivery(-3), std::invalid_argument);
  EXPECT_THROW(ConstantDelivery(std::nan("")), std::invalid_argument);
  EXPECT_THROW(PoissonDelivery(0, 1), std::invalid_argument);
}

std::vector<double> poisson_times(double rate, uint64_t seed, int n) {
  PoissonDelivery d(rate, seed);
  std::vector<double> times;
  for (int i = 0; i < n; ++i) {
    times.push_back(d.next_ms());
    d.pop();
  }
  return times;
}

TEST(DeliveryPoisson, MeanRateWithinTwoPercent) {
  const double rate = 12;
  const int n = 100000;
  std::vector<double> t = poisson_times(rate, 42, n);
  EXPECT_GT(t.front(), 0);
  for (std::size_t i = 1; i < t.size(); ++i) ASSERT_GE(t[i], t[i - 1]);
  const double measured = n * 1500 * 8 / (t.back() * 1000);
  EXPECT_NEAR(measured, rate, 0.02 * rate);
  EXPECT_EQ(PoissonDelivery(rate, 1).to_string(), "poisson(12 Mbit/s)");
}

TEST(DeliveryPoisson, SameSeedSameSequenceOtherSeedDiffers) {
  EXPECT_EQ(poisson_times(5, 7, 1000), poisson_times(5, 7, 1000));
  EXPECT_NE(poisson_times(5, 7, 1000), poisson_times(5, 8, 1000));
}

TEST(DeliveryBurst, PacketsAtOnceEveryPeriod) {
  BurstDelivery d(10, 200);
  for (int burst = 1; burst <= 5; ++burst) {
    for (int i = 0; i < 10; ++i) {
      EXPECT_EQ(d.next_ms(), 200.0 * burst) << "burst " << burst << " packet " << i;
      d.pop();
    }
  }
  EXPECT_EQ(d.to_string(), "burst(10/200 ms)");
  EXPECT_THROW(BurstDelivery(0, 200), std::invalid_argument);
  EXPECT_THROW(BurstDelivery(10, 0), std::invalid_argument);
}

TEST(DeliveryBurst, FractionalPeriodDoesNotDrift) {
  BurstDelivery d(3, 0.1);
  for (int i = 0; i < 3 * 1000000; ++i) d.pop();
  EXPECT_DOUBLE_EQ(d.next_ms(), 1000001 * 0.1);
}

TEST(DeliveryRealTrace, VerizonDownlinkMeanRate) {
  const std::string path = data_dir() + "/traces/cellular/Verizon-LTE-short.down";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "real data not found at " << path
                                                   << " (set CCGYM_DATA to the data folder)";
  Trace t = load_trace(path);
  EXPECT_NEAR(t.mean_mbps(), 5.03, 0.01);
  EXPECT_EQ(t.name, path);
  // After all its lines it starts over one period later, whatever its first stamp.
  TraceDelivery d(std::make_shared<const Trace>(t), false);
  for (int cycle = 1; cycle <= 3; ++cycle) {
    for (std::size_t i = 0; i < t.timestamps.size(); ++i) d.pop();
    EXPECT_DOUBLE_EQ(d.next_ms(), cycle * t.period_ms() + t.timestamps.front());
  }
  EXPECT_EQ(d.to_string(), "trace(Verizon-LTE-short.down)");
}

TEST(DeliveryRealTrace, EveryTraceInTheDataLoads) {
  const std::string root = data_dir() + "/traces";
  if (!std::filesystem::exists(root)) GTEST_SKIP() << "real data not found at " << root
                                                   << " (set CCGYM_DATA to the data folder)";
  int loaded = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || name == "COPYING" || name == "README") continue;
    Trace t = load_trace(entry.path().string());
    EXPECT_GT(t.mean_mbps(), 0) << name;
    ++loaded;
  }
  EXPECT_GT(loaded, 0);
}

}  // namespace
}  // namespace ccgym
