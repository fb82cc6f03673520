// cubic: the scheme entry of CUBIC (cubic.hh).
#include "policies/cpp/schemes/cubic.hh"

#include <cmath>

namespace ccgym::schemes {
namespace {

std::unique_ptr<Controller> make(const Params& params, uint64_t) {
  const double c = param(params, "c");
  const double beta = param(params, "beta");
  const double hystart = param(params, "hystart");
  check_param(hystart == std::floor(hystart), "cubic", "hystart", "0, 1 or 2", hystart);
  return std::make_unique<Cubic>(c, beta, static_cast<int>(hystart),
                                 param(params, "linux_rto") != 0);
}

}  // namespace

SchemeEntry cubic_scheme() {
  return {{"cubic",
           "CUBIC (RFC 8312): slow start, cubic window growth, x beta on loss; fills the buffer",
           {{"c", 0.4, "cubic scaling constant (packets / s^3)", above(0)},
            {"beta", 0.7, "multiplicative decrease factor on a loss event", in_open(0, 1)},
            {"hystart", 0,
             "1: leave the first slow start on HyStart's delay test; 2: on its delay or "
             "ACK-train test (Linux's)",
             in_closed(0, 2)},
            {"linux_rto", 1,
             "1: Linux's timeouts: its RTO (at least srtt + 200 ms), a tail loss probe "
             "first, a spurious timeout undone; 0: RFC 6298's RTO",
             in_closed(0, 1)}}},
          &make};
}

}  // namespace ccgym::schemes
