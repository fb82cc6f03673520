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

// Pairs sent at one instant every 2 ms from `from_ms` to `to_ms`, from seq on, the second of
// each `gap(pair)` behind the first at the receiver. Returns the next seq.
template <typename Gap>
uint64_t send_pairs(ShareMeter& meter, uint64_t seq, double from_ms, double to_ms, Gap gap) {
  int pair = 0;
  for (double send_ms = from_ms; send_ms < to_ms; send_ms += 2, ++pair) {
    const double recv_ms = send_ms + 20;
    meter.on_ack(seq++, send_ms, recv_ms, recv_ms + 20);
    meter.on_ack(seq++, send_ms, recv_ms + gap(pair), recv_ms + gap(pair) + 20);
  }
  return seq;
}

TEST(ShareMeter, BackToBackPairsGiveTheLinksRate) {
  ShareMeter meter;
  send_pairs(meter, 0, 0, 2000, [](int) { return kPacketMs; });
  EXPECT_NEAR(meter.capacity_mbps(), 24, 1e-9);
  // Two datagrams every 2 ms: 12 Mbit/s of 24.
  EXPECT_NEAR(meter.share(), 0.5, 0.01);
}

TEST(ShareMeter, ALinkThatDeliversInMillisecondBurstsReadsItsMeanRate) {
  // A trace link: two pairs in three land within one millisecond's burst (no gap), one
  // across a 2 ms pause: a mean gap of 2/3 ms, 18 Mbit/s, where the median reads no gap.
  ShareMeter meter;
  send_pairs(meter, 0, 0, 2000, [](int pair) { return pair % 3 == 0 ? 2.0 : 0.0; });
  EXPECT_NEAR(meter.capacity_mbps(), 12.0 * 3 / 2, 0.1);
}

TEST(ShareMeter, AReceiverThatReadsSomePairsAtOnceMovesTheRateByTheirShare) {
  // One pair in eight read in one wake-up (no gap): the link reads 8/7 of its rate.
  ShareMeter meter;
  send_pairs(meter, 0, 0, 2000, [](int pair) { return pair % 8 == 0 ? 0.0 : kPacketMs; });
  EXPECT_NEAR(meter.capacity_mbps(), 24.0 * 8 / 7, 0.1);
}

TEST(ShareMeter, AFewPairsASecondCarryOverUntilThereAreEnough) {
  // A starved flow: one pair every 100 ms, ten a second.
  ShareMeter meter;
  auto sparse = [&meter](uint64_t seq, double from_ms, double to_ms) {
    for (double send_ms = from_ms; send_ms < to_ms; send_ms += 100) {
      meter.on_ack(seq++, send_ms, send_ms + 20, send_ms + 40);
      meter.on_ack(seq++, send_ms, send_ms + 20 + kPacketMs, send_ms + 40 + kPacketMs);
    }
    return seq;
  };
  const uint64_t seq = sparse(0, 0, 1100);
  EXPECT_TRUE(std::isnan(meter.capacity_mbps()));
  sparse(seq, 1100, 2200);
  EXPECT_NEAR(meter.capacity_mbps(), 24, 1e-9);
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

TEST(ShareMeter, TheRateIsTheLastSecondsWithPairsEnough) {
  // 2 s at 24 Mbit/s, then the link at 12 (a gap of two serializations at 24): the share is
  // taken against the new rate at once; a second without pairs keeps the last rate.
  ShareMeter meter;
  uint64_t seq = send_pairs(meter, 0, 0, 2000, [](int) { return kPacketMs; });
  EXPECT_NEAR(meter.capacity_mbps(), 24, 1e-9);
  seq = send_pairs(meter, seq, 2000, 4000, [](int) { return 2 * kPacketMs; });
  EXPECT_NEAR(meter.capacity_mbps(), 12, 1e-9);
  EXPECT_NEAR(meter.share(), 1.0, 0.01);
  for (double send_ms = 4000; send_ms < 6000; send_ms += 2) {  // paced: no pairs
    meter.on_ack(seq++, send_ms, send_ms + 20, send_ms + 40);
  }
  EXPECT_NEAR(meter.capacity_mbps(), 12, 1e-9);
}

}  // namespace
}  // namespace ccgym
