#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "emulators/cpp/queue.hh"

namespace ccgym {
namespace {

std::string queue_error(const std::string& spec) {
  try {
    make_queue(spec, 1);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

Packet packet(uint64_t seq, double enqueued_ms, uint32_t bytes = kDataPacketBytes) {
  Packet p;
  p.seq = seq;
  p.bytes = bytes;
  p.enqueued_ms = enqueued_ms;
  return p;
}

TEST(QueueFactory, CanonicalSpecsParseBackToTheSameQueue) {
  const std::vector<std::pair<std::string, std::string>> specs = {
      {"infinite", "infinite"},
      {"droptail:packets=100", "droptail:packets=100"},
      {"droptail:bytes=150000", "droptail:bytes=150000"},
      {"red:min=5:max=15:max_p=0.1", "red:min=5:max=15:max_p=0.1:weight=0.002"},
      {"red:max_p=0.25:weight=0.5:max=20.5:min=2", "red:min=2:max=20.5:max_p=0.25:weight=0.5"},
      {"codel", "codel:target_ms=5:interval_ms=100"},
      {"codel:interval_ms=50", "codel:target_ms=5:interval_ms=50"},
  };
  for (const auto& [spec, canonical] : specs) {
    auto q = make_queue(spec, 3);
    EXPECT_EQ(q->to_string(), canonical) << spec;
    EXPECT_EQ(make_queue(q->to_string(), 3)->to_string(), canonical) << spec;
    EXPECT_TRUE(q->empty());
  }
}

TEST(QueueFactory, ErrorsNameTheKeyAndTheValidChoices) {
  EXPECT_EQ(queue_error("droptail:pakets=5"),
            "queue 'droptail:pakets=5': unknown key 'pakets' (valid: packets, bytes)");
  std::string msg = queue_error("fifo:packets=5");
  EXPECT_TRUE(contains(msg, "'fifo'") && contains(msg, "infinite, droptail, red, codel")) << msg;
  msg = queue_error("");
  EXPECT_TRUE(contains(msg, "infinite, droptail, red, codel")) << msg;

  struct Case {
    const char* spec;
    const char* must_name;
  };
  const Case cases[] = {
      {"droptail", "packets, bytes"},                        // neither limit
      {"droptail:packets=5:bytes=9000", "packets, bytes"},   // both limits
      {"droptail:packets=abc", "'packets'"},
      {"droptail:packets=0", "'packets'"},
      {"droptail:packets=-1", "'packets'"},
      {"droptail:packets=5.5", "'packets'"},
      {"droptail:bytes=", "'bytes'"},
      {"droptail:packets=5:packets=6", "duplicate key 'packets'"},
      {"droptail:packets", "(valid: packets, bytes)"},      // not key=value
      {"red:min=5:max_p=0.1", "missing key 'max'"},
      {"red:min=5:max=15", "missing key 'max_p'"},
      {"red:min=5:max=15:max_p=1.5", "'max_p'"},
      {"red:min=5:max=15:max_p=0", "'max_p'"},
      {"red:min=15:max=5:max_p=0.1", "'min'"},
      {"red:min=5:max=15:max_p=0.1:weight=2", "'weight'"},
      {"red:min=5:max=15:max_p=0.1:wieght=0.5", "(valid: min, max, max_p, weight)"},
      {"codel:target_ms=0", "'target_ms'"},
      {"codel:interval_ms=nan", "'interval_ms'"},
      {"codel:target=5", "(valid: target_ms, interval_ms)"},
      {"infinite:packets=5", "infinite takes no keys"},
  };
  for (const auto& c : cases) {
    msg = queue_error(c.spec);
    EXPECT_EQ(msg.rfind(std::string("queue '") + c.spec + "': ", 0), 0u) << c.spec << ": " << msg;
    EXPECT_TRUE(contains(msg, c.must_name)) << c.spec << ": " << msg;
  }
}

TEST(QueueInfinite, KeepsEverythingInOrder) {
  auto q = make_queue("infinite", 1);
  std::vector<Packet> dropped;
  for (uint64_t i = 0; i < 10000; ++i) ASSERT_TRUE(q->enqueue(packet(i, 0), 0));
  EXPECT_EQ(q->size_packets(), 10000u);
  EXPECT_EQ(q->size_bytes(), 10000u * kDataPacketBytes);
  Packet out;
  for (uint64_t i = 0; i < 10000; ++i) {
    ASSERT_TRUE(q->dequeue(0, out, dropped));
    ASSERT_EQ(out.seq, i);
  }
  EXPECT_FALSE(q->dequeue(0, out, dropped));
  EXPECT_TRUE(dropped.empty());
  EXPECT_EQ(q->size_bytes(), 0u);
}

TEST(QueueDropTail, PacketLimitDropsExactlyWhenFull) {
  auto q = make_queue("droptail:packets=3", 1);
  std::vector<Packet> dropped;
  for (uint64_t i = 0; i < 3; ++i) EXPECT_TRUE(q->enqueue(packet(i, 0), 0));
  EXPECT_FALSE(q->enqueue(packet(3, 0), 0));
  // Small packets count as packets, not bytes.
  EXPECT_FALSE(q->enqueue(packet(4, 0, 64), 0));
  EXPECT_EQ(q->size_packets(), 3u);
  Packet out;
  ASSERT_TRUE(q->dequeue(1, out, dropped));
  EXPECT_EQ(out.seq, 0u);
  EXPECT_TRUE(q->enqueue(packet(5, 1), 1));
  EXPECT_FALSE(q->enqueue(packet(6, 1), 1));
  std::vector<uint64_t> order;
  while (q->dequeue(2, out, dropped)) order.push_back(out.seq);
  EXPECT_EQ(order, (std::vector<uint64_t>{1, 2, 5}));
}

TEST(QueueDropTail, ByteLimitCountsPacketBytes) {
  auto q = make_queue("droptail:bytes=4000", 1);
  EXPECT_TRUE(q->enqueue(packet(0, 0), 0));            // 1500
  EXPECT_TRUE(q->enqueue(packet(1, 0), 0));            // 3000
  EXPECT_FALSE(q->enqueue(packet(2, 0), 0));           // 4500 would exceed
  EXPECT_TRUE(q->enqueue(packet(3, 0, 1000), 0));      // exactly 4000
  EXPECT_FALSE(q->enqueue(packet(4, 0, 1), 0));        // 4001
  EXPECT_EQ(q->size_bytes(), 4000u);
  EXPECT_EQ(q->size_packets(), 3u);
}

TEST(QueueRed, NothingBelowMinEverythingAtOrAboveMax) {
  auto q = make_queue("red:min=5:max=10:max_p=0.5:weight=1", 9);
  // With weight 1 the average is the instantaneous length seen by each arrival.
  for (uint64_t i = 0; i < 5; ++i) ASSERT_TRUE(q->enqueue(packet(i, 0), 0)) << i;
  uint64_t seq = 5, offered = 0;
  while (q->size_packets() < 10 && offered < 100000) {
    q->enqueue(packet(seq++, 0), 0);
    ++offered;
  }
  ASSERT_EQ(q->size_packets(), 10u);
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(q->enqueue(packet(seq++, 0), 0));
  EXPECT_EQ(q->size_packets(), 10u);

  // Drained below min, it accepts again.
  Packet out;
  std::vector<Packet> dropped;
  for (int i = 0; i < 8; ++i) q->dequeue(0, out, dropped);
  EXPECT_TRUE(q->enqueue(packet(seq++, 0), 0));
  EXPECT_TRUE(dropped.empty());
}

std::vector<bool> red_drops_at_length(uint64_t seed, std::size_t length, int arrivals) {
  auto q = make_queue("red:min=5:max=10:max_p=0.5:weight=1", seed);
  uint64_t seq = 0;
  // A FIFO at a fixed length: each accepted arrival is matched by a departure.
  while (q->size_packets() < length) q->enqueue(packet(seq++, 0), 0);
  std::vector<bool> drops;
  Packet out;
  std::vector<Packet> dropped;
  for (int i = 0; i < arrivals; ++i) {
    bool accepted = q->enqueue(packet(seq++, 0), 0);
    drops.push_back(!accepted);
    if (accepted) q->dequeue(0, out, dropped);
  }
  return drops;
}

TEST(QueueRed, BetweenThresholdsDropsAreSpreadAndSeeded) {
  const int n = 20000;
  std::vector<bool> drops = red_drops_at_length(11, 7, n);
  // pb = max_p * (7 - 5) / (10 - 5) = 0.2; spacing by count makes a drop certain
  // once 1/pb arrivals have passed since the last one.
  const double pb = 0.5 * (7 - 5) / (10 - 5.0);
  int since = 0, longest = 0, total = 0;
  for (bool d : drops) {
    ++since;
    if (d) {
      longest = std::max(longest, since);
      since = 0;
      ++total;
    }
  }
  EXPECT_LE(longest, static_cast<int>(std::lround(1 / pb)));
  const double fraction = static_cast<double>(total) / n;
  EXPECT_GT(fraction, pb);   // spacing drops more often than independent coin flips at pb
  EXPECT_LT(fraction, 0.6);
  EXPECT_EQ(drops, red_drops_at_length(11, 7, n));
  EXPECT_NE(drops, red_drops_at_length(12, 7, n));
}

TEST(QueueCoDel, StandingQueueIsDroppedOnTheControlLaw) {
  const double target = 5, interval = 100;
  auto q = make_queue("codel", 1);
  for (uint64_t i = 0; i < 1000; ++i) q->enqueue(packet(i, 0), 0);
  std::vector<Packet> dropped;
  std::vector<double> drop_times;
  Packet out;
  // One departure per ms: the head's sojourn time is now - 0.
  for (int t = 0; t < 600; ++t) {
    std::size_t before = dropped.size();
    ASSERT_TRUE(q->dequeue(t, out, dropped));
    for (std::size_t i = before; i < dropped.size(); ++i) drop_times.push_back(t);
  }
  ASSERT_GE(drop_times.size(), 3u);
  // Sojourn first reaches target at t = target; drops start one interval later.
  EXPECT_EQ(drop_times[0], target + interval);
  // Then the schedule advances by interval / sqrt(k) after the k-th drop (from the
  // schedule, not from when the drop happened), seen on the 1 ms grid.
  double next = drop_times[0];
  for (std::size_t k = 1; k < drop_times.size(); ++k) {
    next += interval / std::sqrt(static_cast<double>(k));
    EXPECT_EQ(drop_times[k], std::ceil(next)) << "drop " << k;
  }
  EXPECT_EQ(q->size_packets() + dropped.size() + 600, 1000u);
}

TEST(QueueCoDel, DrainsAStandingQueueToBelowTarget) {
  auto q = make_queue("codel:target_ms=5:interval_ms=100", 1);
  const int standing = 20;
  uint64_t seq = 0;
  for (int i = 0; i < standing; ++i) q->enqueue(packet(seq++, 0), 0);
  std::vector<Packet> dropped;
  Packet out;
  double sojourn = 0;
  // Arrivals and departures at the same rate: without drops the queue would stand forever.
  for (int t = 1; t <= 5000; ++t) {
    q->enqueue(packet(seq++, t), t);
    ASSERT_TRUE(q->dequeue(t, out, dropped));
    sojourn = t - out.enqueued_ms;
  }
  EXPECT_LT(sojourn, 5);
  EXPECT_GT(dropped.size(), 0u);
  EXPECT_LE(dropped.size(), static_cast<std::size_t>(standing));
}

TEST(QueueCoDel, NoDropsWhileSojournStaysBelowTarget) {
  auto q = make_queue("codel", 1);
  uint64_t seq = 0;
  for (int i = 0; i < 3; ++i) q->enqueue(packet(seq++, 0), 0);
  std::vector<Packet> dropped;
  Packet out;
  for (int t = 1; t <= 20000; ++t) {
    q->enqueue(packet(seq++, t), t);
    ASSERT_TRUE(q->dequeue(t, out, dropped));
    ASSERT_LT(t - out.enqueued_ms, 5);
  }
  EXPECT_TRUE(dropped.empty());
}

TEST(QueueCoDel, NeverDropsTheOnlyPacket) {
  // Long sojourn, but never more than one MTU waiting: nothing to gain by dropping.
  auto q = make_queue("codel", 1);
  std::vector<Packet> dropped;
  Packet out;
  for (int i = 0; i < 1000; ++i) {
    double t = 50.0 * i;
    q->enqueue(packet(static_cast<uint64_t>(i), t), t);
    ASSERT_TRUE(q->dequeue(t + 20, out, dropped));
  }
  EXPECT_TRUE(dropped.empty());
  EXPECT_FALSE(q->dequeue(1e9, out, dropped));
}

}  // namespace
}  // namespace ccgym
