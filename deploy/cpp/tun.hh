// The link shell's plumbing, as mahimahi builds it: a TUN device in the caller's
// network namespace (outside), a new network namespace with a TUN device of its
// own (inside), each with a point-to-point IPv4 address whose peer is the other.
// Nothing is routed anywhere else: inside there is no default route, only the
// peer. Every object here lives exactly as long as the process: a TUN device
// opened without TUNSETPERSIST disappears with its descriptor, and a namespace
// made by unshare() with no name disappears with the last process in it.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ccgym::shell {

// Raised when the caller lacks root / CAP_NET_ADMIN (or CAP_SYS_ADMIN for the
// namespace): the one error users see for it.
class NotPermitted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A non-blocking TUN device (IP packets, no packet-information header), removed
// when this object closes it.
class Tun {
 public:
  // name_pattern: e.g. "ccgym%d", the kernel picks the first free number.
  explicit Tun(const char* name_pattern);
  ~Tun();
  Tun(const Tun&) = delete;
  Tun& operator=(const Tun&) = delete;

  int fd() const { return fd_; }
  const std::string& name() const { return name_; }

  // Address `local` with point-to-point peer `peer` (host byte order), the MTU,
  // IPv6 off (no router solicitations crossing the link), then up. In the network
  // namespace the calling thread is in now.
  void configure(uint32_t local, uint32_t peer, int mtu) const;

  // One packet into buf; its length, or -1 when none is waiting. A packet longer
  // than len is cut: the returned length is then len + 1 (too long to carry).
  ssize_t read(unsigned char* buf, std::size_t len) const;
  // One packet to the kernel; false if it did not take it (the packet is lost).
  bool write(const unsigned char* buf, std::size_t len) const;

 private:
  int fd_ = -1;
  std::string name_;
};

// A /30 in 100.64.0.0/10 (shared address space, never routed to the internet)
// none of whose addresses this namespace uses yet; *outside = .1, *inside = .2.
// `salt` (the pid) spreads concurrent shells over different blocks.
void pick_addresses(uint32_t salt, uint32_t* outside, uint32_t* inside);

// Moves the calling process into a new, empty network namespace and brings its
// loopback up.
void enter_new_network_namespace();

// The inode of the calling process's network namespace: identifies it.
uint64_t network_namespace_id();

// SIGKILLs every other process in the network namespace `id`: what was started
// in the shell ends with it. Returns how many were signalled.
int kill_processes_in_namespace(uint64_t id);

}  // namespace ccgym::shell
