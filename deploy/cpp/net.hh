// What the UDP endpoints and the relay share: the wall clock they all read,
// addresses, non-blocking UDP sockets, and a wait that wakes on a datagram, a
// deadline (ns precision) or SIGINT/SIGTERM.
#pragma once
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ccgym::net {

// The one clock of a process: steady_clock milliseconds since the process
// started its run. Every timestamp a program logs or passes to the core is on it.
class MsClock {
 public:
  MsClock() : origin_(std::chrono::steady_clock::now()) {}
  double now_ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - origin_)
        .count();
  }
  // The origin on the steady clock (CLOCK_MONOTONIC on Linux), ns: logged so that
  // logs of processes on one host can be put on one time axis.
  int64_t origin_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(origin_.time_since_epoch()).count();
  }

 private:
  std::chrono::steady_clock::time_point origin_;
};

struct Address {
  sockaddr_storage storage{};
  socklen_t len = 0;

  // "HOST:PORT" or "[V6HOST]:PORT"; HOST may be a name. Throws std::invalid_argument.
  static Address parse(const std::string& host_port);
  // HOST (numeric or a name; IPv4 preferred when a name has both) and a port.
  // Throws std::invalid_argument.
  static Address resolve(const std::string& host, uint16_t port);

  int family() const { return storage.ss_family; }
  uint16_t port() const;
  std::string host() const;
  std::string to_string() const;  // "127.0.0.1:9000", "[::1]:9000"
  const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&storage); }
  bool same(const Address& other) const;  // same family, host and port
};

// bind() found the port taken; the message is the one users see.
class PortInUse : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A non-blocking UDP socket that closes itself.
class UdpSocket {
 public:
  explicit UdpSocket(int family);
  ~UdpSocket();
  UdpSocket(const UdpSocket&) = delete;
  UdpSocket& operator=(const UdpSocket&) = delete;

  int fd() const { return fd_; }
  // Throws PortInUse ("port N on HOST is in use") or std::runtime_error.
  void bind(const Address& local);
  // Only datagrams from `peer` are received afterwards; send() goes to it.
  void connect(const Address& peer);
  Address local_address() const;
  // Asks for kernel buffers of this size (capped by the system's maximum): bursts
  // of a large window must not overflow them.
  void set_buffer_bytes(int bytes);

  // Receives one datagram into buf without blocking. Returns its full length (which
  // exceeds len when it was truncated), or -1 when none is waiting. `from` may be
  // null. Errors that only report an earlier datagram's fate (ICMP port
  // unreachable) are counted in refused() and skipped.
  ssize_t receive(unsigned char* buf, std::size_t len, Address* from);
  // Sends one datagram; false if the kernel did not take it (full buffer,
  // unreachable peer): UDP may lose it anyway, so the caller only counts it.
  bool send_to(const unsigned char* buf, std::size_t len, const Address& to);
  bool send(const unsigned char* buf, std::size_t len);

  uint64_t refused() const { return refused_; }

 private:
  int fd_ = -1;
  uint64_t refused_ = 0;
};

// SIGINT and SIGTERM request a clean stop. They stay blocked except inside
// wait(), so a signal can never slip in between checking requested() and sleeping.
class StopSignals {
 public:
  StopSignals();
  bool requested() const;
  const sigset_t* wait_mask() const { return &wait_mask_; }

 private:
  sigset_t wait_mask_{};
};

// Sleeps until one of fds is readable, timeout_ms has passed (ns precision;
// <= 0: returns at once; infinite: no timeout) or a stop signal arrives.
// Returns poll's count of ready descriptors (0 on timeout or signal).
int wait(pollfd* fds, nfds_t count, double timeout_ms, const StopSignals& signals);

// Lowers the kernel's timer slack (default 50 us) so that sleeps end on time:
// the relay's fidelity depends on releasing packets when the link says.
void tighten_timer_slack();

}  // namespace ccgym::net
