// The link direction's semantics (mahimahi's): byte accounting per opportunity,
// propagation after the bottleneck, drops at a full queue, loss by seed.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "emulators/cpp/link.hh"
#include "emulators/cpp/spec.hh"

namespace ccgym {
namespace {

Packet packet_of(uint64_t seq, uint32_t bytes) {
  Packet p;
  p.seq = seq;
  p.bytes = bytes;
  return p;
}

std::unique_ptr<LinkDirection> constant_link(double rate_mbps, const std::string& queue,
                                             double delay_ms, double loss = 0, uint64_t seed = 1) {
  return std::make_unique<LinkDirection>(std::make_unique<ConstantDelivery>(rate_mbps),
                                         make_queue(queue, seed), loss, delay_ms, seed);
}

TEST(LinkDirection, SmallPacketsShareOneOpportunity) {
  // 12 Mbit/s: one 1500-byte opportunity per ms; three 500-byte packets fit in one.
  auto link = constant_link(12, "infinite", 0);
  link->advance(0);
  for (uint64_t s = 0; s < 4; ++s) ASSERT_TRUE(link->send(packet_of(s, 500), 0));
  link->advance(1.0);
  ASSERT_EQ(link->arrivals().size(), 3u);
  for (const auto& a : link->arrivals()) EXPECT_DOUBLE_EQ(a.arrival_ms, 1.0);
  link->clear_arrivals();
  link->advance(2.0);
  ASSERT_EQ(link->arrivals().size(), 1u);
  EXPECT_EQ(link->arrivals()[0].packet.seq, 3u);
}

TEST(LinkDirection, LargePacketSpansOpportunities) {
  auto link = constant_link(12, "infinite", 5);
  link->advance(0);
  ASSERT_TRUE(link->send(packet_of(0, 3000), 0));
  link->advance(1.0);
  link->advance(6.0);
  EXPECT_TRUE(link->arrivals().empty());  // half sent at 1 ms
  link->advance(7.0);                     // second half at 2 ms, + 5 ms propagation
  ASSERT_EQ(link->arrivals().size(), 1u);
  EXPECT_DOUBLE_EQ(link->arrivals()[0].arrival_ms, 7.0);
}

TEST(LinkDirection, UnusedOpportunitiesAreLost) {
  auto link = constant_link(12, "infinite", 0);
  link->record_opportunities(true);
  link->advance(10.0);  // ten idle opportunities
  ASSERT_TRUE(link->send(packet_of(0, 1500), 10.0));
  ASSERT_TRUE(link->send(packet_of(1, 1500), 10.0));
  link->advance(11.0);
  EXPECT_EQ(link->arrivals().size(), 1u);  // the idle ones did not bank capacity
  EXPECT_EQ(link->opportunities().size(), 11u);
}

TEST(LinkDirection, PacketSentAtAnOpportunityWaitsForTheNext) {
  // mahimahi: the opportunity at `now` is used before a packet arriving at `now`.
  auto link = constant_link(12, "infinite", 0);
  link->advance(3.0);
  ASSERT_TRUE(link->send(packet_of(0, 1500), 3.0));
  EXPECT_DOUBLE_EQ(link->next_event_ms(), 4.0);
}

TEST(LinkDirection, DropTailDropsExactlyWhenFull) {
  auto link = constant_link(12, "droptail:packets=5", 0);
  link->advance(0);
  for (uint64_t s = 0; s < 5; ++s) EXPECT_TRUE(link->send(packet_of(s, 1500), 0));
  EXPECT_FALSE(link->send(packet_of(5, 1500), 0));
  ASSERT_EQ(link->dropped().size(), 1u);
  EXPECT_EQ(link->dropped()[0].seq, 5u);
  link->advance(1.0);  // one leaves: room for exactly one more
  EXPECT_TRUE(link->send(packet_of(6, 1500), 1.0));
  EXPECT_FALSE(link->send(packet_of(7, 1500), 1.0));
}

TEST(LinkDirection, LossRateMatchesAndIsSeeded) {
  auto count_losses = [](uint64_t seed) {
    auto link = constant_link(1000, "infinite", 0, 0.1, seed);
    int lost = 0;
    for (uint64_t s = 0; s < 20000; ++s) lost += link->send(packet_of(s, 100), 0) ? 0 : 1;
    return lost;
  };
  const int a = count_losses(7);
  EXPECT_NEAR(a / 20000.0, 0.1, 0.01);
  EXPECT_EQ(a, count_losses(7));
  EXPECT_NE(a, count_losses(8));
}

TEST(LinkDirection, TraceRepeatsWithItsPeriod) {
  auto trace = std::make_shared<Trace>(parse_trace("5\n10\n", "tiny"));
  LinkDirection link(std::make_unique<TraceDelivery>(trace, false), make_queue("infinite", 1), 0,
                     0, 1);
  link.record_opportunities(true);
  link.advance(30.0);
  const std::vector<double> expected = {5, 10, 15, 20, 25, 30};
  EXPECT_EQ(link.opportunities(), expected);
}

TEST(LinkDirection, JitterDelaysWithinItsBoundAndKeepsOrder) {
  // Unlimited rate, 10 ms: each packet arrives within [10, 12) ms of its send, in order; the
  // same seed draws the same delays, another seed others.
  auto arrivals = [](uint64_t jitter_seed) {
    LinkDirection link(std::make_unique<UnlimitedDelivery>(), make_queue("infinite", 1), 0, 10, 1,
                       2.0, jitter_seed);
    std::vector<double> times;
    for (uint64_t s = 0; s < 200; ++s) {
      const double sent = 0.1 * static_cast<double>(s);
      link.advance(sent);
      EXPECT_TRUE(link.send(packet_of(s, 1500), sent));
    }
    link.advance(1000);
    uint64_t seq = 0;
    for (const auto& a : link.arrivals()) {
      EXPECT_EQ(a.packet.seq, seq);
      const double sent = 0.1 * static_cast<double>(seq++);
      EXPECT_GE(a.arrival_ms, sent + 10);
      EXPECT_LT(a.arrival_ms, sent + 12);
      if (!times.empty()) {
        EXPECT_GE(a.arrival_ms, times.back());
      }
      times.push_back(a.arrival_ms);
    }
    EXPECT_EQ(times.size(), 200u);
    return times;
  };
  const auto first = arrivals(7);
  EXPECT_EQ(first, arrivals(7));
  EXPECT_NE(first, arrivals(8));
  std::size_t delayed = 0;  // the draws are not all at the floor
  for (std::size_t i = 0; i < first.size(); ++i) {
    delayed += first[i] > 0.1 * static_cast<double>(i) + 10.5;
  }
  EXPECT_GT(delayed, 50u);
}

}  // namespace
}  // namespace ccgym
