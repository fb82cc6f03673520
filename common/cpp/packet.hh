// What travels through an emulated link direction: a data packet or its ACK.
#pragma once
#include <cstdint>

namespace ccgym {

// Bytes on the wire of a data packet and of an ACK (the contest's datagrams).
inline constexpr uint32_t kDataPacketBytes = 1500;
inline constexpr uint32_t kAckPacketBytes = 64;
// One delivery opportunity carries this many bytes (mahimahi's MTU accounting).
inline constexpr uint32_t kOpportunityBytes = 1500;

// Data packets per millisecond <-> Mbit/s.
inline constexpr double kMbpsPerPacketPerMs = kDataPacketBytes * 8.0 / 1000;
inline double packets_per_ms_to_mbps(double rate) { return rate * kMbpsPerPacketPerMs; }
inline double mbps_to_packets_per_ms(double mbps) { return mbps / kMbpsPerPacketPerMs; }

struct Packet {
  uint64_t seq = 0;
  uint32_t flow = 0;
  uint32_t bytes = kDataPacketBytes;
  double sent_ms = 0;      // sender clock: when the data packet left the sender
  double recv_ms = 0;      // receiver clock: when the data packet arrived (ACKs only)
  double enqueued_ms = 0;  // clock of the link: when it entered this direction's queue
  uint64_t tag = 0;        // opaque to the link (the simulator keeps its log index here)
};

}  // namespace ccgym
