// Which connection an IP packet belongs to, for the link shell's per-packet log:
// the 5-tuple of an IPv4 packet, oriented from the shell's inside to the outside
// whichever way the packet travels, so that a connection's data and its ACKs
// share one flow id. Flow ids are handed out in the order flows are first seen.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_map>

namespace ccgym::shell {

struct FlowKey {
  uint8_t protocol = 0;  // IP protocol (6 TCP, 17 UDP); 0: not IPv4
  uint32_t inside = 0;   // IPv4 address inside the shell (host byte order)
  uint32_t outside = 0;
  uint16_t inside_port = 0;  // TCP/UDP ports; 0 for other protocols
  uint16_t outside_port = 0;

  bool operator==(const FlowKey&) const = default;

  // "tcp:100.64.0.2:40000>100.64.0.1:5201": inside first.
  std::string to_string() const {
    const char* name = protocol == 6 ? "tcp" : protocol == 17 ? "udp" : nullptr;
    char proto[16];
    if (name == nullptr) std::snprintf(proto, sizeof proto, "ip%u", unsigned{protocol});
    char text[96];
    std::snprintf(text, sizeof text, "%s:%s:%u>%s:%u", name != nullptr ? name : proto,
                  dotted(inside).c_str(), unsigned{inside_port}, dotted(outside).c_str(),
                  unsigned{outside_port});
    return text;
  }

  static std::string dotted(uint32_t address) {
    char text[16];
    std::snprintf(text, sizeof text, "%u.%u.%u.%u", address >> 24, (address >> 16) & 0xff,
                  (address >> 8) & 0xff, address & 0xff);
    return text;
  }
};

struct FlowKeyHash {
  std::size_t operator()(const FlowKey& k) const {
    uint64_t h = (uint64_t{k.inside} << 32) ^ k.outside;
    h ^= (uint64_t{k.inside_port} << 24) ^ (uint64_t{k.outside_port} << 8) ^ k.protocol;
    h *= 0x9e3779b97f4a7c15ULL;  // spreads the bits (Fibonacci hashing)
    return static_cast<std::size_t>(h ^ (h >> 32));
  }
};

// The key of the IP packet in bytes[0, length); `leaving`: it travels from the
// inside out (source = inside). Anything that is not a well-formed IPv4 header
// gets the empty key (one flow for all of it).
inline FlowKey flow_key(const unsigned char* bytes, std::size_t length, bool leaving) {
  FlowKey key;
  if (length < 20 || (bytes[0] >> 4) != 4) return key;
  const std::size_t header_bytes = std::size_t{bytes[0] & 0x0fu} * 4;
  if (header_bytes < 20 || header_bytes > length) return key;
  const auto u32 = [&](std::size_t at) {
    return (uint32_t{bytes[at]} << 24) | (uint32_t{bytes[at + 1]} << 16) |
           (uint32_t{bytes[at + 2]} << 8) | uint32_t{bytes[at + 3]};
  };
  const auto u16 = [&](std::size_t at) {
    return static_cast<uint16_t>((bytes[at] << 8) | bytes[at + 1]);
  };
  key.protocol = bytes[9];
  const uint32_t source = u32(12);
  const uint32_t destination = u32(16);
  uint16_t source_port = 0;
  uint16_t destination_port = 0;
  // Ports only in a first fragment that holds them (fragment offset 0).
  const bool first_fragment = (u16(6) & 0x1fff) == 0;
  if ((key.protocol == 6 || key.protocol == 17) && first_fragment && length >= header_bytes + 4) {
    source_port = u16(header_bytes);
    destination_port = u16(header_bytes + 2);
  }
  key.inside = leaving ? source : destination;
  key.outside = leaving ? destination : source;
  key.inside_port = leaving ? source_port : destination_port;
  key.outside_port = leaving ? destination_port : source_port;
  return key;
}

// Flow ids by key, and each flow's count of packets per direction (the log's seq).
class FlowTable {
 public:
  struct Flow {
    uint32_t id;
    uint64_t packets[2];  // by direction: 0 leaving, 1 entering
  };

  // The flow of `key`; `*is_new` tells whether it was seen first now.
  Flow& find(const FlowKey& key, bool* is_new) {
    auto [it, inserted] = flows_.try_emplace(key, Flow{static_cast<uint32_t>(flows_.size()), {0, 0}});
    *is_new = inserted;
    return it->second;
  }
  std::size_t size() const { return flows_.size(); }

 private:
  std::unordered_map<FlowKey, Flow, FlowKeyHash> flows_;
};

}  // namespace ccgym::shell
