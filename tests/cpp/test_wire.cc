// The UDP wire format (deploy/cpp/wire.hh): layout, round trips, and rejection
// of everything that is not a well-formed datagram of the expected kind.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "deploy/cpp/wire.hh"

namespace ccgym::wire {
namespace {

TEST(WireFormat, DataRoundTripKeepsEveryField) {
  std::vector<unsigned char> buf(kDefaultDataPayloadBytes, 0);
  const DataHeader in{0xDEADBEEF, 0x0123456789ABCDEFULL, 12345.678};
  ASSERT_TRUE(encode_data(buf.data(), buf.size(), in));
  DataHeader out;
  ASSERT_TRUE(decode_data(buf.data(), buf.size(), out));
  EXPECT_EQ(out.flow, in.flow);
  EXPECT_EQ(out.seq, in.seq);
  EXPECT_EQ(out.send_ms, in.send_ms);
}

TEST(WireFormat, DataLayoutIsLittleEndianAtDocumentedOffsets) {
  unsigned char buf[kDataHeaderBytes] = {};
  ASSERT_TRUE(encode_data(buf, sizeof buf, {0x04030201, 0x0C0B0A0908070605ULL, 1.0}));
  const unsigned char expected_head[] = {kMagic, kVersion, kKindData, 0, 0x01, 0x02, 0x03, 0x04,
                                         0x05,   0x06,     0x07,      0x08, 0x09, 0x0A, 0x0B, 0x0C};
  EXPECT_EQ(std::memcmp(buf, expected_head, sizeof expected_head), 0);
  // 1.0 as IEEE-754 binary64 is 0x3FF0000000000000: little-endian, its top byte is last.
  const unsigned char one[] = {0, 0, 0, 0, 0, 0, 0xF0, 0x3F};
  EXPECT_EQ(std::memcmp(buf + 16, one, sizeof one), 0);
}

TEST(WireFormat, AckRoundTripKeepsEveryField) {
  unsigned char buf[kAckPayloadBytes];
  const Ack in{7, 1ULL << 40, 99.5, 123.25, 1472};
  ASSERT_TRUE(encode_ack(buf, sizeof buf, in));
  Ack out;
  ASSERT_TRUE(decode_ack(buf, sizeof buf, out));
  EXPECT_EQ(out.flow, in.flow);
  EXPECT_EQ(out.seq, in.seq);
  EXPECT_EQ(out.send_ms, in.send_ms);
  EXPECT_EQ(out.recv_ms, in.recv_ms);
  EXPECT_EQ(out.payload_bytes, in.payload_bytes);
}

TEST(WireFormat, SizesOnTheWireMatchTheSimulator) {
  EXPECT_EQ(kAckPayloadBytes + kIpUdpHeaderBytes, kAckPacketBytes);
  EXPECT_EQ(kDefaultDataPayloadBytes + kIpUdpHeaderBytes, kDataPacketBytes);
}

TEST(WireFormat, EncodersRefuseBuffersTooShort) {
  unsigned char buf[kAckPayloadBytes] = {};
  EXPECT_FALSE(encode_data(buf, kDataHeaderBytes - 1, {}));
  EXPECT_FALSE(encode_ack(buf, kAckPayloadBytes - 1, {}));
  // Nothing was written.
  for (unsigned char b : buf) EXPECT_EQ(b, 0);
}

TEST(WireFormat, TruncatedDatagramsAreRejected) {
  unsigned char data[kDataHeaderBytes];
  ASSERT_TRUE(encode_data(data, sizeof data, {1, 2, 3}));
  DataHeader h;
  for (std::size_t len = 0; len < kDataHeaderBytes; ++len) {
    EXPECT_FALSE(decode_data(data, len, h)) << "length " << len;
  }
  unsigned char ack[kAckPayloadBytes + 1] = {};
  ASSERT_TRUE(encode_ack(ack, sizeof ack, {1, 2, 3, 4, 5}));
  Ack a;
  for (std::size_t len = 0; len < kAckPayloadBytes; ++len) {
    EXPECT_FALSE(decode_ack(ack, len, a)) << "length " << len;
  }
  EXPECT_FALSE(decode_ack(ack, kAckPayloadBytes + 1, a)) << "an ACK has one size";
}

TEST(WireFormat, EachPreambleByteIsChecked) {
  unsigned char data[kDataHeaderBytes];
  ASSERT_TRUE(encode_data(data, sizeof data, {1, 2, 3}));
  for (std::size_t i = 0; i < kPreambleBytes; ++i) {
    unsigned char bad[kDataHeaderBytes];
    std::memcpy(bad, data, sizeof bad);
    bad[i] ^= 0x40;
    DataHeader h;
    EXPECT_FALSE(decode_data(bad, sizeof bad, h)) << "byte " << i;
  }
}

TEST(WireFormat, KindsAreNotConfused) {
  unsigned char buf[kAckPayloadBytes];
  ASSERT_TRUE(encode_ack(buf, sizeof buf, {1, 2, 3, 4, 5}));
  DataHeader h;
  EXPECT_FALSE(decode_data(buf, sizeof buf, h)) << "an ACK is not data";
  ASSERT_TRUE(encode_data(buf, sizeof buf, {1, 2, 3}));
  Ack a;
  EXPECT_FALSE(decode_ack(buf, sizeof buf, a)) << "data of ACK size is not an ACK";
}

TEST(WireFormat, NonFiniteTimestampsAreRejected) {
  const double bad[] = {std::numeric_limits<double>::quiet_NaN(),
                        std::numeric_limits<double>::infinity(),
                        -std::numeric_limits<double>::infinity()};
  for (double v : bad) {
    unsigned char data[kDataHeaderBytes];
    ASSERT_TRUE(encode_data(data, sizeof data, {1, 2, v}));
    DataHeader h;
    EXPECT_FALSE(decode_data(data, sizeof data, h));
    unsigned char ack[kAckPayloadBytes];
    Ack a;
    ASSERT_TRUE(encode_ack(ack, sizeof ack, {1, 2, 3, v, 5}));
    EXPECT_FALSE(decode_ack(ack, sizeof ack, a));
    ASSERT_TRUE(encode_ack(ack, sizeof ack, {1, 2, v, 3, 5}));
    EXPECT_FALSE(decode_ack(ack, sizeof ack, a));
  }
}

TEST(WireFormat, RandomBytesAreRejected) {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<std::size_t> length(0, 1500);
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::vector<unsigned char> buf(length(rng));
    for (auto& b : buf) b = static_cast<unsigned char>(byte(rng));
    DataHeader h;
    Ack a;
    accepted += decode_data(buf.data(), buf.size(), h) ? 1 : 0;
    accepted += decode_ack(buf.data(), buf.size(), a) ? 1 : 0;
  }
  EXPECT_EQ(accepted, 0);
}

}  // namespace
}  // namespace ccgym::wire
