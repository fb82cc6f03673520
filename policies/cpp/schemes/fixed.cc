// fixed: a constant window, the contest's first exercise. It never reacts to
// delay or loss; on a link of known BDP it is the baseline every scheme should
// beat, and the oracle's best fixed window is this scheme with the right W.
#include "policies/cpp/schemes/schemes.hh"

namespace ccgym::schemes {
namespace {

class Fixed final : public Controller {
 public:
  explicit Fixed(double window) : window_(window) {}
  double window_size() override { return window_; }
  void on_ack(uint64_t, double, double, double) override {}
  std::string name() const override { return "fixed"; }

 private:
  double window_;
};

std::unique_ptr<Controller> make(const Params& params, uint64_t) {
  const double window = param(params, "window");
  return std::make_unique<Fixed>(window);
}

}  // namespace

SchemeEntry fixed_scheme() {
  return {{"fixed", "constant window (packets)", {{"window", 20, "window in packets",
                                                   window_range()}}}, &make};
}

}  // namespace ccgym::schemes
