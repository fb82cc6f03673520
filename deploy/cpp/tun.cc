#include "deploy/cpp/tun.hh"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <system_error>

namespace ccgym::shell {
namespace {

const char kPermissionHint[] =
    "the link shell needs root or CAP_NET_ADMIN and CAP_SYS_ADMIN (run it with sudo)";

[[noreturn]] void fail(const std::string& what) {
  const int error = errno;
  if (error == EPERM || error == EACCES) {
    throw NotPermitted(what + ": " + std::strerror(error) + ": " + kPermissionHint);
  }
  throw std::system_error(error, std::generic_category(), what);
}

// An AF_INET socket of the current namespace: the handle for interface ioctls.
class ControlSocket {
 public:
  ControlSocket() : fd_(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {
    if (fd_ < 0) fail("socket");
  }
  ~ControlSocket() { ::close(fd_); }
  ControlSocket(const ControlSocket&) = delete;
  ControlSocket& operator=(const ControlSocket&) = delete;

  void ioctl(unsigned long request, ifreq& request_data, const char* what) const {
    if (::ioctl(fd_, request, &request_data) < 0) {
      fail(std::string(what) + " on " + request_data.ifr_name);
    }
  }

 private:
  int fd_;
};

ifreq request_for(const std::string& name) {
  ifreq request{};
  std::snprintf(request.ifr_name, IFNAMSIZ, "%s", name.c_str());
  return request;
}

void set_address(const ControlSocket& control, const std::string& name, unsigned long request,
                 uint32_t address, const char* what) {
  ifreq data = request_for(name);
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(address);
  std::memcpy(&data.ifr_addr, &in, sizeof in);
  control.ioctl(request, data, what);
}

void bring_up(const ControlSocket& control, const std::string& name) {
  ifreq data = request_for(name);
  control.ioctl(SIOCGIFFLAGS, data, "SIOCGIFFLAGS");
  data.ifr_flags = static_cast<short>(data.ifr_flags | IFF_UP | IFF_RUNNING);
  control.ioctl(SIOCSIFFLAGS, data, "SIOCSIFFLAGS");
}

// Best effort: a kernel built without IPv6 has no such file, and nothing to turn off.
void disable_ipv6(const std::string& name) {
  const std::string path = "/proc/sys/net/ipv6/conf/" + name + "/disable_ipv6";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  if (::write(fd, "1", 1) != 1) {
    // Nothing to do: IPv6 then only adds a few solicitations to the log.
  }
  ::close(fd);
}

}  // namespace

Tun::Tun(const char* name_pattern) {
  fd_ = ::open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) {
    if (errno == ENOENT) {
      throw std::runtime_error("/dev/net/tun does not exist: this kernel or container has no TUN "
                               "support (modprobe tun, or give the container the device)");
    }
    fail("open /dev/net/tun");
  }
  ifreq request = request_for(name_pattern);
  request.ifr_flags = IFF_TUN | IFF_NO_PI;
  if (::ioctl(fd_, TUNSETIFF, &request) < 0) {
    const int error = errno;
    ::close(fd_);
    errno = error;
    fail("TUNSETIFF");
  }
  name_ = request.ifr_name;
}

Tun::~Tun() {
  if (fd_ >= 0) ::close(fd_);
}

void Tun::configure(uint32_t local, uint32_t peer, int mtu) const {
  disable_ipv6(name_);
  const ControlSocket control;
  set_address(control, name_, SIOCSIFADDR, local, "SIOCSIFADDR");
  set_address(control, name_, SIOCSIFDSTADDR, peer, "SIOCSIFDSTADDR");
  set_address(control, name_, SIOCSIFNETMASK, 0xffffffffu, "SIOCSIFNETMASK");
  ifreq data = request_for(name_);
  data.ifr_mtu = mtu;
  control.ioctl(SIOCSIFMTU, data, "SIOCSIFMTU");
  bring_up(control, name_);
}

ssize_t Tun::read(unsigned char* buf, std::size_t len) const {
  for (;;) {
    // One byte more than the caller takes: a packet that fills it is too long.
    const ssize_t n = ::read(fd_, buf, len + 1);
    if (n >= 0) return n;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return -1;
    if (errno == EINTR) continue;
    fail("read from " + name_);
  }
}

bool Tun::write(const unsigned char* buf, std::size_t len) const {
  for (;;) {
    if (::write(fd_, buf, len) >= 0) return true;
    if (errno == EINTR) continue;
    return false;
  }
}

void pick_addresses(uint32_t salt, uint32_t* outside, uint32_t* inside) {
  std::set<uint32_t> used;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) == 0) {
    for (const ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
      for (const sockaddr* sa : {a->ifa_addr, a->ifa_dstaddr}) {
        if (sa != nullptr && sa->sa_family == AF_INET) {
          used.insert(ntohl(reinterpret_cast<const sockaddr_in*>(sa)->sin_addr.s_addr));
        }
      }
    }
    ::freeifaddrs(list);
  }
  constexpr uint32_t kBase = 0x64400000u;  // 100.64.0.0
  constexpr uint32_t kBlocks = 1u << 20;   // /30 blocks in a /10
  // Skip block 0, whose .1 and .2 are the shared space's most common addresses.
  for (uint32_t i = 0; i < kBlocks; ++i) {
    const uint32_t block = 1 + (salt * 2654435761u + i) % (kBlocks - 1);
    const uint32_t first = kBase + block * 4;
    if (used.count(first + 1) == 0 && used.count(first + 2) == 0) {
      *outside = first + 1;
      *inside = first + 2;
      return;
    }
  }
  throw std::runtime_error("no free address block in 100.64.0.0/10");
}

void enter_new_network_namespace() {
  if (::unshare(CLONE_NEWNET) < 0) fail("unshare(CLONE_NEWNET)");
  const ControlSocket control;
  bring_up(control, "lo");
}

uint64_t network_namespace_id() {
  struct stat info{};
  if (::stat("/proc/self/ns/net", &info) < 0) fail("stat /proc/self/ns/net");
  return static_cast<uint64_t>(info.st_ino);
}

int kill_processes_in_namespace(uint64_t id) {
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return 0;
  const pid_t self = ::getpid();
  int killed = 0;
  while (const dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (*end != '\0' || pid <= 0 || pid == self) continue;
    const std::string path = std::string("/proc/") + entry->d_name + "/ns/net";
    struct stat info{};
    if (::stat(path.c_str(), &info) == 0 && static_cast<uint64_t>(info.st_ino) == id) {
      if (::kill(static_cast<pid_t>(pid), SIGKILL) == 0) ++killed;
    }
  }
  ::closedir(proc);
  return killed;
}

}  // namespace ccgym::shell
