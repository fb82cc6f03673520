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
#include "deploy/cpp/poller.hh"
#include "deploy/cpp/tsv_log.hh"
#include "deploy/cpp/wire.hh"

namespace ccgym {
namespace {

// Large enough for any UDP datagram, so that nothing is silently cut short.
constexpr std::size_t kReceiveBufferBytes = 65536;
// Kernel socket buffers: a window of thousands of datagrams may arrive at once.
constexpr int kSocketBufferBytes = 8 << 20;

struct Options {
  net::Address local;
  double stop_ms = INFINITY;  // receiver clock
  std::string log_path;       // empty: no log
};

Options parse_options(int argc, char** argv) {
  net::Flags flags("ccgym-receiver",
                   "Acknowledges each ccgym data datagram and logs its arrival.",
                   {{"port", "PORT", "UDP port to listen on; 0 picks a free one", "0"},
                    {"bind", "ADDR", "address to listen on", "127.0.0.1"},
                    {"log", "FILE", "arrival log (TSV)", ""},
                    {"duration-s", "SECONDS", "stop after this long; 0 runs until SIGINT/SIGTERM",
                     "0"}});
  flags.parse(argc, argv);
  Options options;
  const uint64_t port = flags.integer("port");
  if (port > 65535) flags.fail("--port must be at most 65535");
  const double duration_s = flags.number("duration-s");
  if (duration_s < 0) flags.fail("--duration-s must be >= 0");
  if (duration_s > 0) options.stop_ms = duration_s * 1000;
  try {
    options.local = net::Address::resolve(flags.text("bind"), static_cast<uint16_t>(port));
  } catch (const std::invalid_argument& e) {
    flags.fail(std::string("--bind: ") + e.what());
  }
  options.log_path = flags.text("log");
  return options;
}

// Answers every data datagram waiting on the socket with its ACK, and logs it.
class Acknowledger {
 public:
  Acknowledger(net::UdpSocket* socket, net::TsvLog* log, const net::MsClock* clock)
      : socket_(socket), log_(log), clock_(clock) {}

  void drain() {
    ssize_t n;
    while ((n = socket_->receive(buffer_, sizeof buffer_, &from_)) >= 0) {
      const double recv_ms = clock_->now_ms();
      const auto length = static_cast<std::size_t>(n);
      wire::DataHeader data;
      if (length > sizeof buffer_ || !wire::decode_data(buffer_, length, data)) {
        ++malformed_;
        continue;
      }
      ++datagrams_;
      const wire::Ack ack{data.flow, data.seq, data.send_ms, recv_ms,
                          static_cast<uint32_t>(length)};
      wire::encode_ack(ack_buffer_, sizeof ack_buffer_, ack);
      if (!socket_->send_to(ack_buffer_, sizeof ack_buffer_, from_)) ++ack_failures_;
      if (log_->is_open()) {
        log_->integer(data.flow).integer(data.seq).integer(length + wire::kIpUdpHeaderBytes);
        log_->ms(data.send_ms).ms(recv_ms).end_row();
      }
    }
  }

  // The log's trailer and the line on stderr.
  void summarize() {
    if (log_->is_open()) {
      log_->comment("clock_origin_ns=" + std::to_string(clock_->origin_ns()) +
                    " datagrams=" + std::to_string(datagrams_) +
                    " malformed=" + std::to_string(malformed_) +
                    " ack_failures=" + std::to_string(ack_failures_));
      if (!log_->close()) std::fprintf(stderr, "ccgym-receiver: could not write the whole log\n");
    }
    std::fprintf(stderr, "ccgym-receiver: %llu datagrams, %llu malformed datagrams\n",
                 static_cast<unsigned long long>(datagrams_),
                 static_cast<unsigned long long>(malformed_));
  }

 private:
  net::UdpSocket* socket_;
  net::TsvLog* log_;
  const net::MsClock* clock_;
  unsigned char buffer_[kReceiveBufferBytes];
  unsigned char ack_buffer_[wire::kAckPayloadBytes];
  net::Address from_;
  uint64_t datagrams_ = 0;
  uint64_t malformed_ = 0;
  uint64_t ack_failures_ = 0;
};

int run(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  net::StopSignals signals;
  net::UdpSocket socket(options.local.family());
  try {
    socket.bind(options.local);
  } catch (const net::PortInUse& e) {
    std::fprintf(stderr, "ccgym-receiver: %s\n", e.what());
    return net::kExitUsage;
  }
  socket.set_buffer_bytes(kSocketBufferBytes);
  net::TsvLog log;
  if (!options.log_path.empty()) log.open(options.log_path, "flow\tseq\tbytes\tsend_ms\trecv_ms");

  net::MsClock clock;
  std::printf("listening on %s\n", socket.local_address().to_string().c_str());
  std::fflush(stdout);

  Acknowledger acknowledger(&socket, &log, &clock);
  net::Poller poller;
  poller.on_readable(socket.fd(), [&] { acknowledger.drain(); });
  poller.run(clock, signals, options.stop_ms, [](double) { return INFINITY; });
  acknowledger.summarize();
  return 0;
}

}  // namespace
}  // namespace ccgym

int main(int argc, char** argv) {
  return ccgym::net::run_program("ccgym-receiver", ccgym::run, argc, argv);
}
