// ShareMeter (policies/cpp/share_meter.hh): the link's rate from the receive gaps of datagrams
// sent back to back, and the flow's delivery rate over it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "policies/cpp/share_meter.hh"

namespace ccgym {
namespace {

// 24 Mbit/s: a 1500-byte datagram every 0.5 ms.
constexpr double kPacketMs = 0.5;

TEST(ShareMeter, NothingIsKnownBeforeAPairAndAWholeInterval) {
  ShareMeter meter;
  EXPECT_TRUE(std::isnan(meter.capacity_mbps()));
  EXPECT_TRUE(std::isnan(meter.share()));
  meter.on_ack(0, 0, 10, 20);
  EXPECT_TRUE(std::isnan(meter.capacity_mbps()));  // one datagram is no pair
}

TEST(ShareMeter, BackToBackPairsGiveTheLinksRateThroughCrossTraffic) {
  // Pairs sent at one instant, every 2 ms, each pair's second datagram one serialization
  // behind its first (nothing came between them) or, in every other pair, three behind
  // (two of a competitor's between): the least gap is the link's.
  ShareMeter meter;
  uint64_t seq = 0;
  for (int pair = 0; pair < 1000; ++pair) {
    const double send_ms = 2.0 * pair;
    const double recv_ms = send_ms + 20;
    const double behind = (pair % 2 == 0 ? 1 : 3) * kPacketMs;
    meter.on_ack(seq++, send_ms, recv_ms, recv_ms + 20);
    meter.on_ack(seq++, send_ms, recv_ms + behind, recv_ms + behind + 20);
  }
  EXPECT_NEAR(meter.capacity_mbps(), 24, 1e-9);
  // Two datagrams every 2 ms: 12 Mbit/s of 24.
  EXPECT_NEAR(meter.share(), 0.5, 0.01);
}

TEST(ShareMeter, APacedFlowMakesNoPairs) {
  // Sent one serialization apart, received so: the sender spaced them, not the link.
  ShareMeter meter;
  for (uint64_t seq = 0; seq < 4000; ++seq) {
    const double send_ms = kPacketMs * static_cast<double>(seq);
    meter.on_ack(seq, send_ms, send_ms + 20, send_ms + 40);
  }
  EXPECT_TRUE(std::isnan(meter.capacity_mbps()));
  EXPECT_TRUE(std::isnan(meter.share()));
}

TEST(ShareMeter, ALostDatagramBreaksThePair) {
  // seq 1 lost: 0 and 2 left together but arrived two serializations apart, not a pair.
  ShareMeter meter;
  meter.on_ack(0, 0, 10, 20);
  meter.on_ack(2, 0, 10 + 2 * kPacketMs, 21);
  EXPECT_TRUE(std::isnan(meter.capacity_mbps()));
}

TEST(ShareMeter, OldPairsAgeOut) {
  ShareMeter meter;
  meter.on_ack(0, 0, 10, 20);
  meter.on_ack(1, 0, 10 + kPacketMs, 20.5);  // 24 Mbit/s
  meter.on_ack(2, 100, 110, 120);
  meter.on_ack(3, 100, 110 + 2 * kPacketMs, 121);  // 12 Mbit/s, now the only one in window
  for (uint64_t seq = 4; seq < 8; seq += 2) {
    const double t = 5000.0 * static_cast<double>(seq);
    meter.on_ack(seq, t, t + 10, t + 20);
    meter.on_ack(seq + 1, t, t + 10 + 2 * kPacketMs, t + 21);
  }
  EXPECT_NEAR(meter.capacity_mbps(), 12, 1e-9);
}

}  // namespace
}  // namespace ccgym
