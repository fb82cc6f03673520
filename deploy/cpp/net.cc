#include "deploy/cpp/net.hh"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <system_error>

namespace ccgym::net {

namespace {

std::system_error os_error(const std::string& what) {
  return std::system_error(errno, std::generic_category(), what);
}

volatile sig_atomic_t g_stop_signal = 0;

extern "C" void on_stop_signal(int signo) { g_stop_signal = signo; }

}  // namespace

Address Address::resolve(const std::string& host, uint16_t port) {
  if (host.empty()) throw std::invalid_argument("empty host");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
  if (rc != 0) {
    throw std::invalid_argument("cannot resolve host '" + host + "': " + gai_strerror(rc));
  }
  // IPv4 first: the receiver and the relay listen on 127.0.0.1 by default, and
  // "localhost" often resolves to ::1 first.
  const addrinfo* chosen = found;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      chosen = a;
      break;
    }
  }
  Address out;
  std::memcpy(&out.storage, chosen->ai_addr, chosen->ai_addrlen);
  out.len = chosen->ai_addrlen;
  freeaddrinfo(found);
  return out;
}

Address Address::parse(const std::string& host_port) {
  const auto colon = host_port.rfind(':');
  if (colon == std::string::npos || colon + 1 == host_port.size()) {
    throw std::invalid_argument("expected HOST:PORT, got '" + host_port + "'");
  }
  std::string host = host_port.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string port_text = host_port.substr(colon + 1);
  unsigned long port = 0;
  std::size_t used = 0;
  try {
    port = std::stoul(port_text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != port_text.size() || port > 65535) {
    throw std::invalid_argument("bad port '" + port_text + "' in '" + host_port + "'");
  }
  return resolve(host, static_cast<uint16_t>(port));
}

uint16_t Address::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (family() == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  }
  return 0;
}

std::string Address::host() const {
  char text[INET6_ADDRSTRLEN] = {};
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, text,
              sizeof text);
  } else if (family() == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, text,
              sizeof text);
  }
  return text;
}

std::string Address::to_string() const {
  return family() == AF_INET6 ? "[" + host() + "]:" + std::to_string(port())
                              : host() + ":" + std::to_string(port());
}

bool Address::same(const Address& other) const {
  if (family() != other.family()) return false;
  if (family() == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&storage);
    const auto* b = reinterpret_cast<const sockaddr_in*>(&other.storage);
    return a->sin_port == b->sin_port && a->sin_addr.s_addr == b->sin_addr.s_addr;
  }
  if (family() == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&storage);
    const auto* b = reinterpret_cast<const sockaddr_in6*>(&other.storage);
    return a->sin6_port == b->sin6_port &&
           std::memcmp(&a->sin6_addr, &b->sin6_addr, sizeof a->sin6_addr) == 0;
  }
  return false;
}

UdpSocket::UdpSocket(int family) {
  fd_ = ::socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw os_error("socket");
}

UdpSocket::~UdpSocket() {
  if (fd_ >= 0) ::close(fd_);
}

void UdpSocket::bind(const Address& local) {
  if (::bind(fd_, local.sa(), local.len) != 0) {
    if (errno == EADDRINUSE) {
      throw PortInUse("port " + std::to_string(local.port()) + " on " + local.host() +
                      " is in use");
    }
    throw os_error("bind " + local.to_string());
  }
}

void UdpSocket::connect(const Address& peer) {
  if (::connect(fd_, peer.sa(), peer.len) != 0) throw os_error("connect " + peer.to_string());
}

Address UdpSocket::local_address() const {
  Address out;
  out.len = sizeof out.storage;
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&out.storage), &out.len) != 0) {
    throw os_error("getsockname");
  }
  return out;
}

void UdpSocket::set_buffer_bytes(int bytes) {
  // Best effort: the kernel caps the size at net.core.{r,w}mem_max.
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
}

ssize_t UdpSocket::receive(unsigned char* buf, std::size_t len, Address* from) {
  for (;;) {
    sockaddr_storage peer{};
    socklen_t peer_len = sizeof peer;
    // MSG_TRUNC makes the kernel report the datagram's real length, so an
    // oversized one is recognized instead of being read cut short.
    const ssize_t n = ::recvfrom(fd_, buf, len, MSG_TRUNC, reinterpret_cast<sockaddr*>(&peer),
                                 &peer_len);
    if (n >= 0) {
      if (from != nullptr) {
        std::memcpy(&from->storage, &peer, sizeof peer);
        from->len = peer_len;
      }
      return n;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) return -1;
    if (errno == EINTR) continue;
    if (errno == ECONNREFUSED) {
      ++refused_;
      continue;
    }
    throw os_error("recvfrom");
  }
}

bool UdpSocket::send_to(const unsigned char* buf, std::size_t len, const Address& to) {
  for (;;) {
    if (::sendto(fd_, buf, len, 0, to.sa(), to.len) >= 0) return true;
    if (errno == EINTR) continue;
    if (errno == ECONNREFUSED) ++refused_;
    return false;
  }
}

bool UdpSocket::send(const unsigned char* buf, std::size_t len) {
  for (;;) {
    if (::send(fd_, buf, len, 0) >= 0) return true;
    if (errno == EINTR) continue;
    if (errno == ECONNREFUSED) ++refused_;
    return false;
  }
}

StopSignals::StopSignals() {
  struct sigaction action{};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: the wait must return to notice the stop
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  sigset_t blocked;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGINT);
  sigaddset(&blocked, SIGTERM);
  sigprocmask(SIG_BLOCK, &blocked, &wait_mask_);
  // While waiting, the old mask minus the stop signals applies.
  sigdelset(&wait_mask_, SIGINT);
  sigdelset(&wait_mask_, SIGTERM);
}

bool StopSignals::requested() const { return g_stop_signal != 0; }

int wait(pollfd* fds, nfds_t count, double timeout_ms, const StopSignals& signals) {
  timespec timeout{};
  timespec* timeout_ptr = nullptr;
  if (std::isfinite(timeout_ms)) {
    // A deadline already past polls once without sleeping.
    const auto ns = static_cast<int64_t>(std::max(0.0, timeout_ms) * 1e6);
    timeout.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    timeout.tv_nsec = static_cast<long>(ns % 1'000'000'000);
    timeout_ptr = &timeout;
  }
  const int rc = ::ppoll(fds, count, timeout_ptr, signals.wait_mask());
  if (rc < 0 && errno != EINTR) throw os_error("ppoll");
  return rc < 0 ? 0 : rc;
}

void tighten_timer_slack() {
  // 1 ns: the smallest slack; a sleep then ends within the scheduler's latency.
  ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
}

}  // namespace ccgym::net
