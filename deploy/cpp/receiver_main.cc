// ccgym-receiver: acknowledges every data datagram (one ACK each, to its source)
// and logs its arrival. Malformed datagrams are counted and ignored.
//
// Log (--log FILE), tab-separated, one header line, then one row per valid data
// datagram, then trailer comment lines (`# key=value ...`) written at exit:
//   flow  seq  bytes  send_ms  recv_ms
// bytes: on the wire (UDP payload + 28 bytes of IPv4/UDP headers); send_ms:
// sender clock, from the datagram; recv_ms: receiver clock, steady ms since start.
// The trailer gives clock_origin_ns (the receiver clock's origin on the host's
// steady clock) and the counts of datagrams, malformed datagrams and failed ACKs.
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>

#include "deploy/cpp/flags.hh"
#include "deploy/cpp/net.hh"
#include "deploy/cpp/tsv_log.hh"
#include "deploy/cpp/wire.hh"

namespace ccgym {
namespace {

// Large enough for any UDP datagram, so that nothing is silently cut short.
constexpr std::size_t kReceiveBufferBytes = 65536;
// Kernel socket buffers: a window of thousands of datagrams may arrive at once.
constexpr int kSocketBufferBytes = 8 << 20;

int run(int argc, char** argv) {
  net::Flags flags("ccgym-receiver",
                   "Acknowledges each ccgym data datagram and logs its arrival.",
                   {{"port", "PORT", "UDP port to listen on; 0 picks a free one", "0"},
                    {"bind", "ADDR", "address to listen on", "127.0.0.1"},
                    {"log", "FILE", "arrival log (TSV)", ""},
                    {"duration-s", "SECONDS", "stop after this long; 0 runs until SIGINT/SIGTERM",
                     "0"}});
  flags.parse(argc, argv);
  const uint64_t port = flags.integer("port");
  if (port > 65535) flags.fail("--port must be at most 65535");
  const double duration_s = flags.number("duration-s");
  if (duration_s < 0) flags.fail("--duration-s must be >= 0");
  const double stop_ms = duration_s > 0 ? duration_s * 1000 : INFINITY;

  net::Address local;
  try {
    local = net::Address::resolve(flags.text("bind"), static_cast<uint16_t>(port));
  } catch (const std::invalid_argument& e) {
    flags.fail(std::string("--bind: ") + e.what());
  }
  net::StopSignals signals;
  net::UdpSocket socket(local.family());
  try {
    socket.bind(local);
  } catch (const net::PortInUse& e) {
    std::fprintf(stderr, "ccgym-receiver: %s\n", e.what());
    return net::kExitUsage;
  }
  socket.set_buffer_bytes(kSocketBufferBytes);

  net::TsvLog log;
  if (!flags.text("log").empty()) log.open(flags.text("log"), "flow\tseq\tbytes\tsend_ms\trecv_ms");

  net::MsClock clock;
  std::printf("listening on %s\n", socket.local_address().to_string().c_str());
  std::fflush(stdout);

  static unsigned char buffer[kReceiveBufferBytes];
  unsigned char ack_buffer[wire::kAckPayloadBytes];
  uint64_t datagrams = 0;
  uint64_t malformed = 0;
  uint64_t ack_failures = 0;
  net::Address from;
  pollfd fds[1] = {{socket.fd(), POLLIN, 0}};

  while (!signals.requested()) {
    const double now_ms = clock.now_ms();
    if (now_ms >= stop_ms) break;
    ssize_t n;
    while ((n = socket.receive(buffer, sizeof buffer, &from)) >= 0) {
      const double recv_ms = clock.now_ms();
      const auto length = static_cast<std::size_t>(n);
      wire::DataHeader data;
      if (length > sizeof buffer || !wire::decode_data(buffer, length, data)) {
        ++malformed;
        continue;
      }
      ++datagrams;
      const wire::Ack ack{data.flow, data.seq, data.send_ms, recv_ms,
                          static_cast<uint32_t>(length)};
      wire::encode_ack(ack_buffer, sizeof ack_buffer, ack);
      if (!socket.send_to(ack_buffer, sizeof ack_buffer, from)) ++ack_failures;
      if (log.is_open()) {
        log.integer(data.flow).integer(data.seq).integer(length + wire::kIpUdpHeaderBytes);
        log.ms(data.send_ms).ms(recv_ms).end_row();
      }
    }
    net::wait(fds, 1, stop_ms - clock.now_ms(), signals);
  }

  if (log.is_open()) {
    log.comment("clock_origin_ns=" + std::to_string(clock.origin_ns()) +
                " datagrams=" + std::to_string(datagrams) +
                " malformed=" + std::to_string(malformed) +
                " ack_failures=" + std::to_string(ack_failures));
    if (!log.close()) std::fprintf(stderr, "ccgym-receiver: could not write the whole log\n");
  }
  std::fprintf(stderr, "ccgym-receiver: %llu datagrams, %llu malformed datagrams\n",
               static_cast<unsigned long long>(datagrams),
               static_cast<unsigned long long>(malformed));
  return 0;
}

}  // namespace
}  // namespace ccgym

int main(int argc, char** argv) {
  return ccgym::net::run_program("ccgym-receiver", ccgym::run, argc, argv);
}
