#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "emulators/cpp/spec.hh"

namespace ccgym {
namespace {

// Distinct names per content: loaded traces are cached by path for the whole process.
std::string write_trace(const std::string& name, const std::string& text) {
  const std::string path = testing::TempDir() + "ccgym_spec_" + name;
  std::ofstream out(path);
  out << text;
  return path;
}

std::string spec_error(const std::string& text) {
  try {
    parse_link_spec(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

void expect_same_direction(const DirectionSpec& a, const DirectionSpec& b,
                           const std::string& what) {
  EXPECT_EQ(a.trace, b.trace) << what;
  EXPECT_EQ(a.rate_mbps, b.rate_mbps) << what;
  EXPECT_EQ(a.delivery, b.delivery) << what;
  EXPECT_EQ(a.burst_packets, b.burst_packets) << what;
  EXPECT_EQ(a.burst_period_ms, b.burst_period_ms) << what;
  EXPECT_EQ(a.queue, b.queue) << what;
  EXPECT_EQ(a.loss, b.loss) << what;
  EXPECT_EQ(a.jitter_ms.has_value(), b.jitter_ms.has_value()) << what;
  EXPECT_EQ(a.jitter_ms.value_or(-1), b.jitter_ms.value_or(-1)) << what;
}

void expect_same_spec(const LinkSpec& a, const LinkSpec& b, const std::string& what) {
  EXPECT_EQ(a.name, b.name) << what;
  EXPECT_EQ(a.delay_ms, b.delay_ms) << what;
  EXPECT_EQ(a.once, b.once) << what;
  EXPECT_EQ(a.delayed_acks, b.delayed_acks) << what;
  expect_same_direction(a.data, b.data, what + " (data)");
  expect_same_direction(a.ack, b.ack, what + " (ack)");
}

TEST(SpecParse, ReadsEveryKey) {
  LinkSpec s = parse_link_spec(
      "name=calibrated 1,rate_mbps=0.57,delivery=poisson,delay_ms=28,queue=droptail:packets=14,"
      "loss=0.0477,ack_rate_mbps=12,ack_queue=droptail:bytes=9000,ack_loss=0.01,jitter_ms=0.25,"
      "ack_jitter_ms=0.5,delayed_acks=1");
  EXPECT_EQ(s.name, "calibrated 1");
  EXPECT_EQ(s.delayed_acks.value_or(false), true);
  EXPECT_EQ(s.data.jitter_ms.value_or(-1), 0.25);
  EXPECT_EQ(s.ack.jitter_ms.value_or(-1), 0.5);
  EXPECT_EQ(s.data.rate_mbps, 0.57);
  EXPECT_EQ(s.data.delivery, "poisson");
  EXPECT_EQ(s.delay_ms, 28);
  EXPECT_EQ(s.data.queue, "droptail:packets=14");
  EXPECT_EQ(s.data.loss, 0.0477);
  EXPECT_EQ(s.ack.rate_mbps, 12);
  EXPECT_EQ(s.ack.delivery, "constant");  // implied by the rate
  EXPECT_EQ(s.ack.queue, "droptail:bytes=9000");
  EXPECT_EQ(s.ack.loss, 0.01);
  EXPECT_FALSE(s.once);

  LinkSpec b = parse_link_spec(" rate_mbps = 12 , ack_burst_packets=10,ack_burst_period_ms=200 ");
  EXPECT_EQ(b.data.rate_mbps, 12);
  EXPECT_EQ(b.ack.delivery, "burst");
  EXPECT_EQ(b.ack.burst_packets, 10u);
  EXPECT_EQ(b.ack.burst_period_ms, 200);
  EXPECT_EQ(b.delay_ms, 0);

  // An unlimited ACK direction is the default.
  LinkSpec u = parse_link_spec("rate_mbps=12,delay_ms=20");
  EXPECT_EQ(u.ack.delivery, "");
  EXPECT_EQ(u.ack.rate_mbps, 0);
  EXPECT_EQ(u.ack.queue, "infinite");
}

TEST(SpecParse, TracesAndOnce) {
  const std::string down = write_trace("parse.down", "0\n1\n1\n4\n");
  const std::string up = write_trace("parse.up", "2\n");
  LinkSpec s = parse_link_spec("trace=" + down + ",ack_trace=" + up + ",once=1,delay_ms=20");
  EXPECT_EQ(s.data.trace, down);
  EXPECT_EQ(s.data.delivery, "trace");
  EXPECT_EQ(s.ack.trace, up);
  EXPECT_TRUE(s.once);
  EXPECT_FALSE(parse_link_spec("trace=" + down + ",once=false").once);
}

TEST(SpecRoundTrip, ToStringParsesBackToAnEqualSpec) {
  const std::string down = write_trace("roundtrip.down", "0\n3\n3\n9\n");
  const std::vector<std::string> texts = {
      "rate_mbps=12,delay_ms=20",
      "rate_mbps=12,delivery=constant,delay_ms=20",
      "rate_mbps=100.42,delivery=poisson,delay_ms=27,queue=droptail:packets=173,loss=0.01,"
      "ack_jitter_ms=0.5",
      "rate_mbps=12,ack_jitter_ms=0,delay_ms=20",  // an explicit 0 is kept
      "rate_mbps=12,delay_ms=20,delayed_acks=0",   // so is an explicit 0 here
      "rate_mbps=12,delay_ms=20,delayed_acks=1",
      "name=ack-agg,rate_mbps=12,ack_burst_packets=10,ack_burst_period_ms=200,delay_ms=10",
      "trace=" + down + ",ack_trace=" + down + ",once=1,delay_ms=20,ack_loss=0.5",
      "delivery=trace,trace=" + down + ",queue=codel,ack_rate_mbps=3,ack_delivery=poisson",
      "rate_mbps=0.1,queue=red:min=5:max=15:max_p=0.1,delay_ms=0.25",
      "burst_packets=3,burst_period_ms=12.5,ack_queue=infinite",
      "rate_mbps=77.72,loss=6e-04,delay_ms=1e3",
      "rate_mbps=0.1234567,ack_rate_mbps=9876.54321,ack_loss=0.1234567890123,delay_ms=0.3",
  };
  for (const auto& text : texts) {
    LinkSpec s = parse_link_spec(text);
    const std::string canonical = s.to_string();
    LinkSpec back = parse_link_spec(canonical);
    expect_same_spec(s, back, text + " -> " + canonical);
    EXPECT_EQ(back.to_string(), canonical) << text;
  }
  // Equivalent texts share one canonical form.
  EXPECT_EQ(parse_link_spec("rate_mbps=12,delivery=constant,queue=codel,delay_ms=5").to_string(),
            parse_link_spec("delay_ms=5,queue=codel:target_ms=5,rate_mbps=12").to_string());
  EXPECT_EQ(parse_link_spec("rate_mbps=12,delay_ms=20").to_string(), "rate_mbps=12,delay_ms=20");
  EXPECT_EQ(parse_link_spec("rate_mbps=77.72,loss=6e-04,delay_ms=1e3").to_string(),
            "rate_mbps=77.72,loss=0.0006,delay_ms=1000");
}

TEST(SpecCache, EachTextIsParsedOnceAndABadOneFailsEveryTime) {
  const auto first = cached_link_spec("rate_mbps=12,delay_ms=20");
  EXPECT_EQ(first, cached_link_spec("rate_mbps=12,delay_ms=20"));  // the same parse, shared
  EXPECT_EQ(first->to_string(), parse_link_spec("rate_mbps=12,delay_ms=20").to_string());
  EXPECT_EQ(cached_link_spec("rate_mbps=12,delay_ms=30")->delay_ms, 30);
  for (int call = 0; call < 2; ++call) {
    EXPECT_THROW(cached_link_spec("rate_mbps=12,bogus=1"), std::invalid_argument);
  }
}

TEST(SpecErrors, EachBadSpecNamesItsKey) {
  const std::string good = write_trace("errors.good", "1\n2\n");
  const std::string bad = write_trace("errors.bad", "1\n5\n3\n");
  const std::string missing = testing::TempDir() + "ccgym_spec_no_such.trace";
  struct Case {
    std::string text;
    std::vector<std::string> must_contain;
  };
  const std::vector<Case> cases = {
      {"rate_mbps=12,dealy_ms=20", {"unknown key 'dealy_ms'", "delay_ms", "ack_burst_period_ms"}},
      {"rate_mbps=12,delay_ms=20,delay_ms=30", {"duplicate key 'delay_ms'"}},
      {"rate_mbps=fast", {"'rate_mbps'", "fast"}},
      {"rate_mbps=12abc", {"'rate_mbps'"}},
      {"rate_mbps=0", {"'rate_mbps'"}},
      {"rate_mbps=-2", {"'rate_mbps'"}},
      {"rate_mbps=inf", {"'rate_mbps'"}},
      {"rate_mbps=12,ack_rate_mbps=0", {"'ack_rate_mbps'"}},
      {"rate_mbps=12,loss=1", {"'loss'"}},
      {"rate_mbps=12,loss=-0.1", {"'loss'"}},
      {"rate_mbps=12,ack_loss=1.5", {"'ack_loss'"}},
      {"rate_mbps=12,jitter_ms=101", {"'jitter_ms'", "100"}},
      {"rate_mbps=12,ack_jitter_ms=-1", {"'ack_jitter_ms'"}},
      {"rate_mbps=12,delayed_acks=2", {"'delayed_acks'", "1 or 0"}},
      {"rate_mbps=12,delay_ms=-1", {"'delay_ms'"}},
      // Bounds: each names the key, the unit and the range.
      {"rate_mbps=1e9", {"'rate_mbps'", "[0.1, 10000] Mbit/s"}},
      {"rate_mbps=0.0001", {"'rate_mbps'", "[0.1, 10000] Mbit/s"}},
      {"rate_mbps=12,ack_rate_mbps=20000", {"'ack_rate_mbps'", "10000"}},
      {"rate_mbps=12,delay_ms=1e9", {"'delay_ms'", "[0, 1000] ms"}},
      {"burst_packets=4000000000,burst_period_ms=1", {"'burst_packets'", "Mbit/s"}},
      {"burst_packets=1,burst_period_ms=1e6", {"'burst_period_ms'", "10000"}},
      {"rate_mbps=12,queue=droptail:packets=1000000000", {"'queue'", "[1, 1000000]"}},
      {"rate_mbps=12,queue=droptail:bytes=100", {"'queue'", "'bytes'", "[1500,"}},
      {"rate_mbps=12,delay_ms=x", {"'delay_ms'"}},
      {"rate_mbps=12,delivery=fast", {"'delivery'", "constant|poisson|trace|burst"}},
      {"rate_mbps=12,delivery=trace", {"'delivery'", "'trace'"}},
      {"trace=" + good + ",delivery=poisson", {"'trace'", "delivery=poisson"}},
      {"trace=" + good + ",rate_mbps=5", {"'trace'", "'rate_mbps'"}},
      {"delivery=poisson", {"'delivery'", "'rate_mbps'"}},
      {"burst_packets=10", {"'burst_packets'", "'burst_period_ms'"}},
      {"rate_mbps=12,ack_burst_period_ms=200", {"'ack_burst_packets'"}},
      {"rate_mbps=12,ack_delivery=burst", {"'ack_burst_packets'"}},
      {"rate_mbps=12,ack_burst_packets=0,ack_burst_period_ms=200", {"'ack_burst_packets'"}},
      {"rate_mbps=12,burst_packets=10,burst_period_ms=200", {"'rate_mbps'", "conflict"}},
      {"rate_mbps=12,queue=droptail:pakets=5",
       {"'queue'", "unknown key 'pakets'", "packets, bytes"}},
      {"rate_mbps=12,ack_queue=fifo", {"'ack_queue'", "infinite, droptail, red, codel"}},
      {"rate_mbps=12,ack_queue=droptail:packets=5", {"'ack_queue'", "rate limit"}},
      {"trace=" + bad, {"'trace'", bad + ":3: "}},
      {"trace=" + missing, {"'trace'", missing}},
      {"rate_mbps=12,ack_trace=" + bad, {"'ack_trace'", bad + ":3: "}},
      {"delay_ms=20", {"data direction", "'trace'", "'rate_mbps'"}},
      {"", {"trace", "rate_mbps"}},
      {"rate_mbps=12,", {"empty item"}},
      {"rate_mbps=12,,delay_ms=3", {"empty item"}},
      {"rate_mbps=12,fast", {"'fast'", "key=value", "delay_ms"}},
      {"rate_mbps=12,once=yes", {"'once'"}},
      {"rate_mbps=12,name=", {"'name'"}},
  };
  for (const auto& c : cases) {
    const std::string msg = spec_error(c.text);
    EXPECT_EQ(msg.rfind("link spec '" + c.text + "': ", 0), 0u) << c.text << " -> " << msg;
    for (const auto& part : c.must_contain) {
      EXPECT_TRUE(contains(msg, part)) << c.text << " -> " << msg << "\n  lacks: " << part;
    }
  }
}

TEST(SpecErrors, BinaryBytesAreEscaped) {
  // A NUL would end the message in C and in Python; other control bytes garble a terminal.
  const std::string text = std::string("rate_mbps=1\x01", 12) + '\0' + "2,delay_ms=5";
  const std::string msg = spec_error(text);
  EXPECT_TRUE(contains(msg, "link spec 'rate_mbps=1\\x01\\x002,delay_ms=5': ")) << msg;
  EXPECT_TRUE(contains(msg, "'rate_mbps'")) << msg;
  EXPECT_EQ(msg.find('\0'), std::string::npos);
}

TEST(SpecRealTime, TheRelayAndTheShellRefuseTheSimulatedReceivers) {
  EXPECT_NO_THROW(refuse_simulated_receivers(parse_link_spec("rate_mbps=12,delay_ms=20")));
  for (const char* text : {"rate_mbps=12,delayed_acks=1", "rate_mbps=12,delayed_acks=0"}) {
    EXPECT_THROW(refuse_simulated_receivers(parse_link_spec(text)), std::invalid_argument) << text;
  }
}

TEST(SpecKeys, ListsSharedDataAndAckKeys) {
  std::vector<std::string> keys = link_spec_keys();
  for (const char* k :
       {"name", "delay_ms", "once", "trace", "rate_mbps", "delivery", "burst_packets",
        "burst_period_ms", "queue", "loss", "ack_trace", "ack_rate_mbps", "ack_delivery",
        "ack_burst_packets", "ack_burst_period_ms", "ack_queue", "ack_loss", "jitter_ms",
        "ack_jitter_ms", "delayed_acks"}) {
    EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << k;
  }
  EXPECT_EQ(keys.size(), 20u);
}

std::vector<double> opportunities_until(LinkDirection& d, double until_ms) {
  d.record_opportunities(true);
  d.advance(until_ms);
  return d.opportunities();
}

TEST(SpecMakeDirection, BuildsTheDeliveryTheSpecAsksFor) {
  const std::string down = write_trace("make.down", "0\n3\n3\n9\n");
  LinkSpec s = parse_link_spec("trace=" + down + ",ack_rate_mbps=12,delay_ms=20");
  auto data = make_direction(s.data, s.delay_ms, false, 1);
  EXPECT_EQ(opportunities_until(*data, 20), (std::vector<double>{0, 3, 3, 9, 9, 12, 12, 18, 18}));
  EXPECT_EQ(data->delay_ms(), 20);

  auto once = make_direction(s.data, s.delay_ms, true, 1);
  EXPECT_EQ(opportunities_until(*once, 100), (std::vector<double>{0, 3, 3, 9}));

  // 12 Mbit/s: one 1500-byte opportunity per ms.
  auto ack = make_direction(s.ack, s.delay_ms, false, 1);
  EXPECT_EQ(opportunities_until(*ack, 10.5).size(), 10u);

  LinkSpec b = parse_link_spec("rate_mbps=12,ack_burst_packets=10,ack_burst_period_ms=200");
  auto burst = make_direction(b.ack, 0, false, 1);
  std::vector<double> times = opportunities_until(*burst, 450);
  EXPECT_EQ(times.size(), 20u);
  EXPECT_EQ(std::count(times.begin(), times.end(), 400.0), 10);

  EXPECT_EQ(make_direction(parse_link_spec("rate_mbps=3,queue=codel").data, 0, false, 1)
                ->queue()
                .to_string(),
            "codel:target_ms=5:interval_ms=100");
}

TEST(SpecMakeDirection, UnlimitedAckHasOnlyTheDelay) {
  LinkSpec s = parse_link_spec("rate_mbps=12,delay_ms=20");
  auto ack = make_direction(s.ack, s.delay_ms, false, 1);
  Packet p;
  p.seq = 7;
  p.bytes = kAckPacketBytes;
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(ack->send(p, 5));
  ack->advance(24.9);
  EXPECT_TRUE(ack->arrivals().empty());
  ack->advance(25);
  ASSERT_EQ(ack->arrivals().size(), 100u);
  EXPECT_EQ(ack->arrivals().front().arrival_ms, 25);
}

std::vector<uint8_t> loss_pattern(const DirectionSpec& spec, uint64_t seed) {
  auto d = make_direction(spec, 0, false, seed);
  std::vector<uint8_t> lost;
  Packet p;
  for (int i = 0; i < 2000; ++i) lost.push_back(d->send(p, i) ? 0 : 1);
  return lost;
}

std::vector<double> poisson_pattern(const DirectionSpec& spec, uint64_t seed) {
  auto d = make_direction(spec, 0, false, seed);
  return opportunities_until(*d, 200);
}

TEST(SpecMakeDirection, SeedsAreReproducibleAndStreamsIndependent) {
  LinkSpec s = parse_link_spec("rate_mbps=12,delivery=poisson,loss=0.5");
  auto lost = loss_pattern(s.data, 5);
  const auto n_lost = std::count(lost.begin(), lost.end(), 1);
  EXPECT_GT(n_lost, 800);
  EXPECT_LT(n_lost, 1200);
  EXPECT_EQ(lost, loss_pattern(s.data, 5));
  EXPECT_NE(lost, loss_pattern(s.data, 6));
  EXPECT_EQ(poisson_pattern(s.data, 5), poisson_pattern(s.data, 5));
  EXPECT_NE(poisson_pattern(s.data, 5), poisson_pattern(s.data, 6));

  // The loss stream is not the delivery stream: the first loss draws must not
  // mirror the first exponential gaps drawn from the same engine state.
  std::vector<double> times = poisson_pattern(s.data, 5);
  ASSERT_GE(times.size(), 20u);
  bool mirrors = true;
  for (std::size_t i = 0; i < 20; ++i) {
    const double gap = times[i] - (i == 0 ? 0 : times[i - 1]);
    const bool short_gap = gap < 0.6931;  // the median of a mean-1 ms exponential
    mirrors = mirrors && (short_gap == (lost[i] == 1));
  }
  EXPECT_FALSE(mirrors);
}

TEST(SpecMakeDirection, ThreadsShareLoadedTraces) {
  const std::string down = write_trace("threads.down", "0\n1\n2\n5\n");
  LinkSpec s = parse_link_spec("trace=" + down);
  std::vector<std::thread> threads;
  std::vector<std::size_t> counts(8);
  for (std::size_t i = 0; i < counts.size(); ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 50; ++k) {
        auto d = make_direction(s.data, 0, false, i);
        counts[i] += opportunities_until(*d, 10).size();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (std::size_t c : counts) EXPECT_EQ(c, 50u * 9u);
}

TEST(SpecMakeDirection, RejectsInconsistentHandBuiltSpecs) {
  DirectionSpec d;
  d.rate_mbps = -1;
  EXPECT_THROW(make_direction(d, 0, false, 1), std::invalid_argument);
  d.rate_mbps = 12;
  d.queue = "droptail";
  EXPECT_THROW(make_direction(d, 0, false, 1), std::invalid_argument);
  d.queue = "infinite";
  EXPECT_THROW(make_direction(d, -5, false, 1), std::invalid_argument);
  EXPECT_NO_THROW(make_direction(d, 5, false, 1));
}

TEST(SpecRealData, ContestLinkParses) {
  const char* env = std::getenv("CCGYM_DATA");
  const std::string root = std::string(env ? env : "/work/shared/data") + "/traces/cellular/";
  if (!std::filesystem::exists(root + "Verizon-LTE-short.down")) {
    GTEST_SKIP() << "real data not found at " << root << " (set CCGYM_DATA to the data folder)";
  }
  LinkSpec s = parse_link_spec("trace=" + root + "Verizon-LTE-short.down,ack_trace=" + root +
                               "Verizon-LTE-short.up,delay_ms=20");
  auto data = make_direction(s.data, s.delay_ms, false, 1);
  const double period = load_trace(root + "Verizon-LTE-short.down").period_ms();
  const double n = static_cast<double>(opportunities_until(*data, 5 * period).size());
  EXPECT_NEAR(n * 1500 * 8 / (5 * period * 1000), 5.03, 0.02);
  EXPECT_EQ(data->queue().to_string(), "infinite");
  expect_same_spec(s, parse_link_spec(s.to_string()), "contest link");
}

}  // namespace
}  // namespace ccgym
