// The real-time relay's core (deploy/cpp/relay.hh) driven in virtual time:
// datagrams keep their bytes, come out when the link says, and every slot of the
// pool comes back whatever happens to its datagram.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "deploy/cpp/relay.hh"
#include "deploy/cpp/wire.hh"
#include "emulators/cpp/spec.hh"

namespace ccgym {
namespace {

TEST(RelaySlotPool, HandsOutDistinctSlotsAndReusesReleasedOnes) {
  SlotPool pool(16, 1000);
  std::set<uint32_t> seen;
  std::vector<unsigned char*> addresses;
  for (int i = 0; i < 300; ++i) {  // more than one block
    const uint32_t s = pool.acquire();
    ASSERT_NE(s, SlotPool::kNoSlot);
    EXPECT_TRUE(seen.insert(s).second) << "slot " << s << " handed out twice";
    std::memset(pool.bytes(s), i & 0xFF, 16);
    addresses.push_back(pool.bytes(s));
  }
  // Growth did not move earlier slots nor overwrite them.
  for (int k = 0; k < 300; ++k) EXPECT_EQ(addresses[k][15], k & 0xFF);
  EXPECT_EQ(pool.in_use(), 300U);
  pool.release(*seen.begin());
  EXPECT_EQ(pool.in_use(), 299U);
  EXPECT_EQ(pool.acquire(), *seen.begin());
}

TEST(RelaySlotPool, StopsAtMaxSlots) {
  SlotPool pool(8, 3);
  EXPECT_NE(pool.acquire(), SlotPool::kNoSlot);
  EXPECT_NE(pool.acquire(), SlotPool::kNoSlot);
  const uint32_t third = pool.acquire();
  EXPECT_NE(third, SlotPool::kNoSlot);
  EXPECT_EQ(pool.acquire(), SlotPool::kNoSlot);
  pool.release(third);
  EXPECT_EQ(pool.acquire(), third);
  EXPECT_EQ(pool.capacity(), 3U);
}

std::unique_ptr<Relay> make_relay(const std::string& link, uint32_t max_slots = 1 << 16) {
  const LinkSpec spec = parse_link_spec(link);
  return std::make_unique<Relay>(make_direction(spec.data, spec.delay_ms, spec.once, 1),
                                 make_direction(spec.ack, spec.delay_ms, spec.once, 2), max_slots);
}

// Writes a data datagram of `payload` bytes into a fresh slot, with a byte pattern
// after the header that must come out unchanged, and offers it.
bool offer_data(Relay& relay, uint64_t seq, double now_ms,
                uint32_t payload = wire::kDefaultDataPayloadBytes) {
  const uint32_t slot = relay.acquire(Relay::kData);
  EXPECT_NE(slot, SlotPool::kNoSlot);
  unsigned char* bytes = relay.slot(Relay::kData, slot);
  for (uint32_t i = wire::kDataHeaderBytes; i < payload; ++i) {
    bytes[i] = static_cast<unsigned char>(seq + i);
  }
  EXPECT_TRUE(wire::encode_data(bytes, payload, {3, seq, now_ms}));
  uint32_t flow = 0;
  const bool ok = relay.offer(Relay::kData, slot, payload, now_ms, &flow);
  if (ok) {
    EXPECT_EQ(flow, 3U);
  }
  return ok;
}

struct Delivered {
  uint32_t flow;
  std::vector<unsigned char> bytes;
  double arrival_ms;
};

std::vector<Delivered> run_until(Relay& relay, Relay::Side side, double until_ms) {
  std::vector<Delivered> out;
  for (double t = relay.next_event_ms(); t <= until_ms; t = relay.next_event_ms()) {
    relay.advance(t);
    relay.deliver(side, [&](uint32_t flow, const unsigned char* bytes, std::size_t len, double at) {
      out.push_back({flow, std::vector<unsigned char>(bytes, bytes + len), at});
    });
  }
  relay.advance(until_ms);
  relay.deliver(side, [&](uint32_t flow, const unsigned char* bytes, std::size_t len, double at) {
    out.push_back({flow, std::vector<unsigned char>(bytes, bytes + len), at});
  });
  return out;
}

TEST(RelayCore, DataComesOutAfterSerializationAndDelayWithItsBytes) {
  auto relay = make_relay("rate_mbps=12,delay_ms=20");
  ASSERT_TRUE(offer_data(*relay, 5, 0.0));
  EXPECT_EQ(relay->waiting(Relay::kData), 1U);
  // 1500 bytes at 12 Mbit/s: 1 ms of serialization, then 20 ms of propagation.
  EXPECT_TRUE(run_until(*relay, Relay::kData, 20.9).empty());
  const auto out = run_until(*relay, Relay::kData, 21.0);
  ASSERT_EQ(out.size(), 1U);
  EXPECT_DOUBLE_EQ(out[0].arrival_ms, 21.0);
  EXPECT_EQ(out[0].flow, 3U);
  ASSERT_EQ(out[0].bytes.size(), wire::kDefaultDataPayloadBytes);
  wire::DataHeader h;
  ASSERT_TRUE(wire::decode_data(out[0].bytes.data(), out[0].bytes.size(), h));
  EXPECT_EQ(h.seq, 5U);
  for (uint32_t i = wire::kDataHeaderBytes; i < out[0].bytes.size(); ++i) {
    ASSERT_EQ(out[0].bytes[i], static_cast<unsigned char>(5 + i)) << "byte " << i;
  }
  EXPECT_EQ(relay->waiting(Relay::kData), 0U);
  EXPECT_EQ(relay->counters(Relay::kData).delivered, 1U);
}

TEST(RelayCore, BackToBackDatagramsAreSpacedByTheRate) {
  auto relay = make_relay("rate_mbps=12,delay_ms=20");
  for (uint64_t seq = 0; seq < 5; ++seq) ASSERT_TRUE(offer_data(*relay, seq, 0.0));
  const auto out = run_until(*relay, Relay::kData, 100);
  ASSERT_EQ(out.size(), 5U);
  for (std::size_t i = 0; i < out.size(); ++i) {
    wire::DataHeader h;
    ASSERT_TRUE(wire::decode_data(out[i].bytes.data(), out[i].bytes.size(), h));
    EXPECT_EQ(h.seq, i) << "FIFO order";
    EXPECT_DOUBLE_EQ(out[i].arrival_ms, 21.0 + static_cast<double>(i));
  }
}

TEST(RelayCore, MalformedDatagramsAreCountedAndTheirSlotsReturned) {
  auto relay = make_relay("rate_mbps=12,delay_ms=20");
  const uint32_t slot = relay->acquire(Relay::kData);
  std::memset(relay->slot(Relay::kData, slot), 0x5A, 100);
  uint32_t flow = 77;
  EXPECT_FALSE(relay->offer(Relay::kData, slot, 100, 0.0, &flow));
  EXPECT_EQ(flow, 77U);
  // An ACK sent to the data side is malformed there.
  const uint32_t slot2 = relay->acquire(Relay::kData);
  wire::encode_ack(relay->slot(Relay::kData, slot2), wire::kAckPayloadBytes, {1, 2, 3, 4, 5});
  EXPECT_FALSE(relay->offer(Relay::kData, slot2, wire::kAckPayloadBytes, 0.0, nullptr));
  // A datagram longer than its slot was cut short by the kernel: malformed too.
  const uint32_t slot3 = relay->acquire(Relay::kData);
  wire::encode_data(relay->slot(Relay::kData, slot3), wire::kDataHeaderBytes, {1, 2, 3});
  EXPECT_FALSE(
      relay->offer(Relay::kData, slot3, relay->slot_bytes(Relay::kData) + 1, 0.0, nullptr));

  EXPECT_EQ(relay->counters(Relay::kData).malformed, 3U);
  EXPECT_EQ(relay->counters(Relay::kData).offered, 3U);
  EXPECT_EQ(relay->waiting(Relay::kData), 0U);
  EXPECT_TRUE(run_until(*relay, Relay::kData, 100).empty());
}

TEST(RelayCore, QueueDropsReturnTheirSlots) {
  auto relay = make_relay("rate_mbps=12,delay_ms=20,queue=droptail:packets=3");
  int accepted = 0;
  for (uint64_t seq = 0; seq < 20; ++seq) accepted += offer_data(*relay, seq, 0.0) ? 1 : 0;
  EXPECT_EQ(accepted, 20) << "well-formed datagrams are accepted; the link decides their fate";
  const auto out = run_until(*relay, Relay::kData, 200);
  const Relay::Counters& c = relay->counters(Relay::kData);
  EXPECT_GT(c.dropped, 0U);
  EXPECT_LE(out.size(), 4U) << "3 queued, at most 1 in service";
  EXPECT_EQ(c.delivered, out.size());
  EXPECT_EQ(c.delivered + c.dropped, 20U);
  EXPECT_EQ(relay->waiting(Relay::kData), 0U);
}

TEST(RelayCore, AcksTakeOnlyThePropagationDelay) {
  auto relay = make_relay("rate_mbps=12,delay_ms=20");
  for (uint64_t seq = 0; seq < 3; ++seq) {
    const uint32_t slot = relay->acquire(Relay::kAck);
    ASSERT_NE(slot, SlotPool::kNoSlot);
    ASSERT_TRUE(wire::encode_ack(relay->slot(Relay::kAck, slot), wire::kAckPayloadBytes,
                                 {9, seq, 1.0, 2.0, 1472}));
    uint32_t flow = 0;
    ASSERT_TRUE(relay->offer(Relay::kAck, slot, wire::kAckPayloadBytes, 5.0, &flow));
    EXPECT_EQ(flow, 9U);
  }
  const auto out = run_until(*relay, Relay::kAck, 100);
  ASSERT_EQ(out.size(), 3U);
  for (std::size_t i = 0; i < out.size(); ++i) {
    EXPECT_DOUBLE_EQ(out[i].arrival_ms, 25.0) << "no rate limit on the ACK path by default";
    wire::Ack a;
    ASSERT_TRUE(wire::decode_ack(out[i].bytes.data(), out[i].bytes.size(), a));
    EXPECT_EQ(a.seq, i);
    EXPECT_EQ(a.flow, 9U);
  }
  EXPECT_EQ(relay->waiting(Relay::kAck), 0U);
}

TEST(RelayCore, FullPoolRefusesAndRecovers) {
  auto relay = make_relay("rate_mbps=12,delay_ms=20", 4);
  for (uint64_t seq = 0; seq < 4; ++seq) ASSERT_TRUE(offer_data(*relay, seq, 0.0));
  EXPECT_EQ(relay->acquire(Relay::kData), SlotPool::kNoSlot);
  relay->reject_pool_full(Relay::kData);
  EXPECT_EQ(relay->counters(Relay::kData).pool_full, 1U);
  EXPECT_EQ(run_until(*relay, Relay::kData, 100).size(), 4U);
  EXPECT_NE(relay->acquire(Relay::kData), SlotPool::kNoSlot) << "delivered slots are free again";
}

TEST(RelayCore, SteadyLoadNeedsNoNewSlots) {
  auto relay = make_relay("rate_mbps=12,delay_ms=20");
  // A window of 50 datagrams kept in flight for many RTTs: the pool reaches its
  // size in the first RTT and never grows after that.
  double now = 0;
  uint64_t seq = 0;
  for (; seq < 50; ++seq) ASSERT_TRUE(offer_data(*relay, seq, now));
  std::size_t delivered = 0;
  for (int round = 0; round < 2000; ++round) {
    now = relay->next_event_ms();
    ASSERT_LT(now, kNever);
    relay->advance(now);
    std::size_t arrived = 0;
    relay->deliver(Relay::kData, [&](uint32_t, const unsigned char*, std::size_t, double) {
      ++arrived;
    });
    delivered += arrived;
    for (std::size_t k = 0; k < arrived; ++k) ASSERT_TRUE(offer_data(*relay, seq++, now));
    EXPECT_EQ(relay->waiting(Relay::kData), 50U);
  }
  EXPECT_GT(delivered, 1000U);
  // One block of SlotPool::kBlockSlots holds the window: no block was added later.
  EXPECT_EQ(relay->pool_capacity(Relay::kData), SlotPool::kBlockSlots);
}

}  // namespace
}  // namespace ccgym
