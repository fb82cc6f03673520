// The UDP wire format spoken by ccgym-sender, ccgym-receiver and ccgym-link.
//
// Integers are little-endian; timestamps are IEEE-754 binary64, little-endian,
// in milliseconds. Every datagram starts with a 4-byte preamble so that stray or
// corrupted datagrams are recognized and dropped instead of being misread:
//
//   offset size  field
//   0      u8    magic      0xCC
//   1      u8    version    1
//   2      u8    kind       1 = data, 2 = ACK
//   3      u8    reserved   0
//
// Data datagram (UDP payload; kDataPacketBytes on the wire by default, i.e.
// 1500 - 28 = 1472 bytes of payload):
//   4      u32   flow id
//   8      u64   seq
//   16     f64   send timestamp, ms, sender clock
//   24     ...   padding up to the datagram size (zeros; not checked)
//
// ACK (UDP payload kAckPayloadBytes = 36 bytes, kAckPacketBytes = 64 on the wire):
//   4      u32   flow id of the acknowledged datagram
//   8      u64   its seq
//   16     f64   its send timestamp, echoed, ms, sender clock
//   24     f64   receive timestamp, ms, receiver clock
//   32     u32   UDP payload bytes of the acknowledged datagram as received
//
// Decoders check the length, the preamble and that timestamps are finite; they
// return false for anything else, so a malformed datagram is counted, never read.
#pragma once
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "common/cpp/packet.hh"

namespace ccgym::wire {

inline constexpr uint8_t kMagic = 0xCC;
inline constexpr uint8_t kVersion = 1;
inline constexpr uint8_t kKindData = 1;
inline constexpr uint8_t kKindAck = 2;

// IPv4 (20) + UDP (8) header bytes: what a datagram costs on the wire beyond its
// payload. Sizes on the wire are what the link emulators and the metrics count.
inline constexpr uint32_t kIpUdpHeaderBytes = 28;

inline constexpr std::size_t kPreambleBytes = 4;
inline constexpr std::size_t kDataHeaderBytes = 24;
inline constexpr std::size_t kAckPayloadBytes = 36;
static_assert(kAckPayloadBytes + kIpUdpHeaderBytes == kAckPacketBytes,
              "an ACK is kAckPacketBytes on the wire, as the simulator assumes");

inline constexpr uint32_t kDefaultDataPayloadBytes = kDataPacketBytes - kIpUdpHeaderBytes;
// The largest payload the endpoints and the relay accept: one Ethernet MTU.
inline constexpr uint32_t kMaxDataPayloadBytes = kDefaultDataPayloadBytes;
// The smallest data datagram on the wire: its header plus IP and UDP headers.
inline constexpr uint32_t kMinDataPacketBytes = kDataHeaderBytes + kIpUdpHeaderBytes;

struct DataHeader {
  uint32_t flow = 0;
  uint64_t seq = 0;
  double send_ms = 0;  // sender clock
};

struct Ack {
  uint32_t flow = 0;
  uint64_t seq = 0;
  double send_ms = 0;           // sender clock, echoed from the data datagram
  double recv_ms = 0;           // receiver clock, when the data datagram arrived
  uint32_t payload_bytes = 0;   // of the data datagram, as received
};

namespace detail {

template <typename T>
T byteswap(T value) {
  static_assert(std::is_unsigned_v<T>);
  T out = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    out = static_cast<T>((out << 8) | (value & 0xFF));
    value = static_cast<T>(value >> 8);
  }
  return out;
}

template <typename T>
void store(unsigned char* at, T value) {
  static_assert(std::is_unsigned_v<T>);
  if constexpr (std::endian::native == std::endian::big) value = byteswap(value);
  std::memcpy(at, &value, sizeof(T));
}

template <typename T>
T load(const unsigned char* at) {
  static_assert(std::is_unsigned_v<T>);
  T value;
  std::memcpy(&value, at, sizeof(T));
  if constexpr (std::endian::native == std::endian::big) value = byteswap(value);
  return value;
}

inline void store_f64(unsigned char* at, double value) {
  store(at, std::bit_cast<uint64_t>(value));
}
inline double load_f64(const unsigned char* at) {
  return std::bit_cast<double>(load<uint64_t>(at));
}

inline void store_preamble(unsigned char* at, uint8_t kind) {
  at[0] = kMagic;
  at[1] = kVersion;
  at[2] = kind;
  at[3] = 0;
}

inline bool preamble_is(const unsigned char* at, uint8_t kind) {
  return at[0] == kMagic && at[1] == kVersion && at[2] == kind && at[3] == 0;
}

}  // namespace detail

// Writes the data header into the first kDataHeaderBytes of buf; the padding after
// it is left as it is (the sender zeroes its buffer once). False if len is too short.
inline bool encode_data(unsigned char* buf, std::size_t len, const DataHeader& h) {
  if (len < kDataHeaderBytes) return false;
  detail::store_preamble(buf, kKindData);
  detail::store<uint32_t>(buf + 4, h.flow);
  detail::store<uint64_t>(buf + 8, h.seq);
  detail::store_f64(buf + 16, h.send_ms);
  return true;
}

inline bool decode_data(const unsigned char* buf, std::size_t len, DataHeader& out) {
  if (len < kDataHeaderBytes || !detail::preamble_is(buf, kKindData)) return false;
  const double send_ms = detail::load_f64(buf + 16);
  if (!std::isfinite(send_ms)) return false;
  out.flow = detail::load<uint32_t>(buf + 4);
  out.seq = detail::load<uint64_t>(buf + 8);
  out.send_ms = send_ms;
  return true;
}

// Writes a whole ACK (kAckPayloadBytes). False if len is too short.
inline bool encode_ack(unsigned char* buf, std::size_t len, const Ack& a) {
  if (len < kAckPayloadBytes) return false;
  detail::store_preamble(buf, kKindAck);
  detail::store<uint32_t>(buf + 4, a.flow);
  detail::store<uint64_t>(buf + 8, a.seq);
  detail::store_f64(buf + 16, a.send_ms);
  detail::store_f64(buf + 24, a.recv_ms);
  detail::store<uint32_t>(buf + 32, a.payload_bytes);
  return true;
}

// An ACK is exactly kAckPayloadBytes: a longer datagram of kind ACK is malformed.
inline bool decode_ack(const unsigned char* buf, std::size_t len, Ack& out) {
  if (len != kAckPayloadBytes || !detail::preamble_is(buf, kKindAck)) return false;
  const double send_ms = detail::load_f64(buf + 16);
  const double recv_ms = detail::load_f64(buf + 24);
  if (!std::isfinite(send_ms) || !std::isfinite(recv_ms)) return false;
  out.flow = detail::load<uint32_t>(buf + 4);
  out.seq = detail::load<uint64_t>(buf + 8);
  out.send_ms = send_ms;
  out.recv_ms = recv_ms;
  out.payload_bytes = detail::load<uint32_t>(buf + 32);
  return true;
}

}  // namespace ccgym::wire
