// The link shell's pure parts, in virtual time: IP packets classified into flows
// (deploy/cpp/ip_flow.hh) and carried by the relay core as packets the caller
// describes (Relay::offer_packet), with every drop reported to the observer.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "deploy/cpp/ip_flow.hh"
#include "deploy/cpp/relay.hh"
#include "emulators/cpp/spec.hh"

namespace ccgym {
namespace {

// An IPv4 header (20 bytes) and the first 4 bytes of a TCP/UDP header.
std::vector<unsigned char> ip_packet(uint8_t protocol, uint32_t source, uint32_t destination,
                                     uint16_t source_port, uint16_t destination_port,
                                     std::size_t length = 60) {
  std::vector<unsigned char> p(length, 0);
  p[0] = 0x45;
  p[9] = protocol;
  for (int i = 0; i < 4; ++i) {
    p[12 + i] = static_cast<unsigned char>(source >> (24 - 8 * i));
    p[16 + i] = static_cast<unsigned char>(destination >> (24 - 8 * i));
  }
  p[20] = static_cast<unsigned char>(source_port >> 8);
  p[21] = static_cast<unsigned char>(source_port);
  p[22] = static_cast<unsigned char>(destination_port >> 8);
  p[23] = static_cast<unsigned char>(destination_port);
  return p;
}

constexpr uint32_t kInside = 0x64400002;   // 100.64.0.2
constexpr uint32_t kOutside = 0x64400001;  // 100.64.0.1

TEST(ShellFlows, BothDirectionsOfAConnectionShareOneFlow) {
  const auto out = ip_packet(6, kInside, kOutside, 40000, 5201);
  const auto back = ip_packet(6, kOutside, kInside, 5201, 40000);
  const shell::FlowKey leaving = shell::flow_key(out.data(), out.size(), true);
  const shell::FlowKey entering = shell::flow_key(back.data(), back.size(), false);
  EXPECT_EQ(leaving, entering);
  EXPECT_EQ(leaving.to_string(), "tcp:100.64.0.2:40000>100.64.0.1:5201");

  shell::FlowTable table;
  bool is_new = false;
  EXPECT_EQ(table.find(leaving, &is_new).id, 0U);
  EXPECT_TRUE(is_new);
  EXPECT_EQ(table.find(entering, &is_new).id, 0U);
  EXPECT_FALSE(is_new);
  const auto other = ip_packet(17, kInside, kOutside, 40000, 5201);  // UDP: another flow
  EXPECT_EQ(table.find(shell::flow_key(other.data(), other.size(), true), &is_new).id, 1U);
  EXPECT_TRUE(is_new);
}

TEST(ShellFlows, WhatIsNotIpv4GetsTheEmptyKey) {
  auto packet = ip_packet(6, kInside, kOutside, 1, 2);
  packet[0] = 0x60;  // IPv6
  EXPECT_EQ(shell::flow_key(packet.data(), packet.size(), true), shell::FlowKey{});
  EXPECT_EQ(shell::flow_key(packet.data(), 10, true), shell::FlowKey{});  // too short
  auto fragment = ip_packet(17, kInside, kOutside, 1, 2);
  fragment[7] = 0x10;  // a later fragment: its bytes after the header are no ports
  EXPECT_EQ(shell::flow_key(fragment.data(), fragment.size(), true).inside_port, 0);
}

TEST(ShellRelay, CarriesDescribedPacketsByTheirSizeAndReportsEveryDrop) {
  // 12 Mbit/s: one 1500-byte opportunity per ms; a queue of 3 packets.
  const LinkSpec spec = parse_link_spec("rate_mbps=12,delay_ms=20,queue=droptail:packets=3");
  Relay relay(make_direction(spec.data, spec.delay_ms, false, 1),
              make_direction(spec.ack, spec.delay_ms, false, 2), 64, {1500, 1500});
  std::vector<uint64_t> dropped;
  relay.observe_drops([&](Relay::Side side, const Packet& p) {
    EXPECT_EQ(side, Relay::kData);
    dropped.push_back(p.seq);
  });
  for (uint64_t seq = 0; seq < 6; ++seq) {
    const uint32_t slot = relay.acquire(Relay::kData);
    std::memset(relay.slot(Relay::kData, slot), static_cast<int>(seq), 1500);
    Packet packet;
    packet.seq = seq;
    packet.bytes = 1500;
    relay.offer_packet(Relay::kData, slot, 1500, packet, 0.0);
  }
  // All arrive before the first opportunity (at 1 ms): the queue holds 3, drops 3.
  EXPECT_EQ(dropped, (std::vector<uint64_t>{3, 4, 5}));
  relay.advance(100.0);
  std::vector<double> arrivals;
  std::vector<int> first_bytes;
  relay.deliver(Relay::kData, [&](uint32_t, const unsigned char* bytes, std::size_t length,
                                  double arrival_ms) {
    EXPECT_EQ(length, 1500U);
    first_bytes.push_back(bytes[0]);
    arrivals.push_back(arrival_ms);
  });
  EXPECT_EQ(first_bytes, (std::vector<int>{0, 1, 2}));
  // One packet per 1 ms opportunity, then 20 ms of propagation.
  ASSERT_EQ(arrivals.size(), 3U);
  for (std::size_t i = 1; i < arrivals.size(); ++i) {
    EXPECT_DOUBLE_EQ(arrivals[i] - arrivals[i - 1], 1.0);
  }
  EXPECT_DOUBLE_EQ(arrivals[0], 21.0);
  EXPECT_EQ(relay.waiting(Relay::kData), 0U);  // every slot came back
  EXPECT_EQ(relay.counters(Relay::kData).dropped, 3U);
}

}  // namespace
}  // namespace ccgym
