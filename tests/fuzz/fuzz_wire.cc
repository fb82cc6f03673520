// The wire-format decoders on arbitrary datagrams: a decoded header or ACK encodes back to the
// bytes it came from (so nothing is read past the datagram or invented), or is refused.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "deploy/cpp/wire.hh"
#include "tests/fuzz/fuzz_common.hh"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  namespace wire = ccgym::wire;
  // An exact-size copy: AddressSanitizer then catches any read past the datagram.
  const std::vector<unsigned char> datagram(data, data + size);
  wire::DataHeader header;
  if (wire::decode_data(datagram.data(), datagram.size(), header)) {
    if (!std::isfinite(header.send_ms)) ccgym::fuzz::fail("non-finite send time", "");
    unsigned char again[wire::kDataHeaderBytes];
    wire::encode_data(again, sizeof again, header);
    if (std::memcmp(again, datagram.data(), sizeof again) != 0) {
      ccgym::fuzz::fail("data header does not round-trip", "");
    }
  }
  wire::Ack ack;
  if (wire::decode_ack(datagram.data(), datagram.size(), ack)) {
    if (!std::isfinite(ack.send_ms) || !std::isfinite(ack.recv_ms)) {
      ccgym::fuzz::fail("non-finite ACK time", "");
    }
    unsigned char again[wire::kAckPayloadBytes];
    wire::encode_ack(again, sizeof again, ack);
    if (std::memcmp(again, datagram.data(), sizeof again) != 0) {
      ccgym::fuzz::fail("ACK does not round-trip", "");
    }
  }
  return 0;
}
