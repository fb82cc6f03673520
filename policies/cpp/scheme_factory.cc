// make_controller() and scheme_catalog(): the one parser of scheme specs
// ("name", "name:value", "name:key=value:key=value"), used by the simulator, the
// UDP sender and, through the binding, every Python verb.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/cpp/format.hh"
#include "policies/cpp/controller.hh"
#include "policies/cpp/schemes/schemes.hh"

namespace ccgym {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

bool ParamRange::contains(double value) const {
  const bool lo_ok = lo_open ? value > lo : value >= lo;
  const bool hi_ok = hi_open ? value < hi : value <= hi;
  return lo_ok && hi_ok;
}

std::string ParamRange::to_string() const {
  const bool has_lo = std::isfinite(lo);
  const bool has_hi = std::isfinite(hi);
  if (has_lo && has_hi) {
    return std::string("in ") + (lo_open ? "(" : "[") + format_number(lo) + ", " +
           format_number(hi) + (hi_open ? ")" : "]");
  }
  if (has_lo) return (lo_open ? "> " : ">= ") + format_number(lo);
  if (has_hi) return (hi_open ? "< " : "<= ") + format_number(hi);
  return "any number";
}

namespace schemes {
namespace {

std::unique_ptr<Controller> make_external(const Params& params, uint64_t) {
  return std::make_unique<ExternalWindow>(param(params, "window"));
}

SchemeEntry external_scheme() {
  return {{std::string(kExternalScheme),
           "the learned flow's slot, not a baseline: its window is set from outside (the LSTM "
           "policy, the oracle, Python)",
           {{"window", 10, "initial window (packets) until the first set_window()",
             window_range()}}},
          &make_external};
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(sep, start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

std::string joined_params(const SchemeInfo& info) {
  std::vector<std::string> names;
  for (const SchemeParam& p : info.params) names.push_back(p.name);
  return names.empty() ? "none" : join(names);
}

double parse_number(const std::string& scheme, const std::string& key, const std::string& text) {
  double value = 0;
  std::size_t used = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || !std::isfinite(value)) {
    throw std::invalid_argument("scheme '" + scheme + "': parameter '" + key + "': '" + text +
                                "' is not a finite number");
  }
  return value;
}

}  // namespace

const std::vector<SchemeEntry>& all_schemes() {
  static const std::vector<SchemeEntry> entries = {
      fixed_scheme(),  aimd_scheme(),   delay_scheme(),  ewma_scheme(),   vegas_scheme(),
      cubic_scheme(),  reno_scheme(),   bbr_scheme(),    copa_scheme(),   verus_scheme(),
      sprout_scheme(), ledbat_scheme(), c2tcp_scheme(),  vivace_scheme(), bbr3_scheme(),
      external_scheme()};
  return entries;
}

double param(const Params& params, const std::string& name) {
  const auto it = params.find(name);
  if (it == params.end()) throw std::logic_error("scheme parameter '" + name + "' not declared");
  return it->second;
}

void check_param(bool ok, const std::string& scheme, const std::string& name,
                 const std::string& rule, double value) {
  if (ok) return;
  throw std::invalid_argument("scheme '" + scheme + "': parameter '" + name + "' must be " + rule +
                              ", got " + format_number(value));
}

ParamRange at_least(double lo) { return {lo, kInf, false, false}; }
ParamRange above(double lo) { return {lo, kInf, true, false}; }
ParamRange in_closed(double lo, double hi) { return {lo, hi, false, false}; }
ParamRange in_open(double lo, double hi) { return {lo, hi, true, true}; }
ParamRange in_left_open(double lo, double hi) { return {lo, hi, true, false}; }
ParamRange window_range() { return in_closed(1, kMaxSchemeWindow); }

}  // namespace schemes

std::unique_ptr<Controller> make_controller(const std::string& spec, uint64_t seed) {
  using schemes::SchemeEntry;
  const std::vector<std::string> parts = schemes::split(spec, ':');
  const std::vector<SchemeEntry>& entries = schemes::all_schemes();
  const SchemeEntry* entry = nullptr;
  for (const SchemeEntry& e : entries) {
    if (e.info.name == parts[0]) entry = &e;
  }
  if (entry == nullptr) {
    throw std::invalid_argument("unknown scheme '" + parts[0] +
                                "' (valid: " + classic_scheme_names() + ")");
  }
  const SchemeInfo& info = entry->info;
  schemes::Params params;
  for (const SchemeParam& p : info.params) params[p.name] = p.value;

  std::vector<std::string> given;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    const std::size_t eq = part.find('=');
    std::string key;
    std::string text;
    if (eq == std::string::npos) {
      // A bare value names the first parameter, and only in first place: "fixed:20".
      if (i != 1 || info.params.empty()) {
        throw std::invalid_argument("scheme '" + info.name + "': '" + part +
                                    "' needs a key (key=value); valid parameters: " +
                                    schemes::joined_params(info));
      }
      key = info.params.front().name;
      text = part;
    } else {
      key = part.substr(0, eq);
      text = part.substr(eq + 1);
    }
    if (params.find(key) == params.end()) {
      throw std::invalid_argument("scheme '" + info.name + "': unknown parameter '" + key +
                                  "' (valid: " + schemes::joined_params(info) + ")");
    }
    for (const std::string& g : given) {
      if (g == key) {
        throw std::invalid_argument("scheme '" + info.name + "': parameter '" + key +
                                    "' given twice");
      }
    }
    given.push_back(key);
    params[key] = schemes::parse_number(info.name, key, text);
  }
  // Defaults are checked too: a default outside its own range is a bug the tests catch.
  for (const SchemeParam& p : info.params) {
    schemes::check_param(p.range.contains(params[p.name]), info.name, p.name,
                         p.range.to_string(), params[p.name]);
  }
  return entry->make(params, seed);
}

void check_classic_scheme(const std::string& spec) {
  const std::string name = spec.substr(0, spec.find(':'));
  if (name == kExternalScheme) {
    throw std::invalid_argument("'" + name + "' is not a classic scheme: its window is set from "
                                "outside (a learned flow, the oracle)");
  }
  (void)make_controller(spec);
}

std::string classic_scheme_names() {
  std::vector<std::string> names;
  for (const schemes::SchemeEntry& e : schemes::all_schemes()) {
    if (e.info.name != kExternalScheme) names.push_back(e.info.name);
  }
  return join(names);
}

std::vector<SchemeInfo> scheme_catalog() {
  std::vector<SchemeInfo> infos;
  for (const schemes::SchemeEntry& e : schemes::all_schemes()) infos.push_back(e.info);
  return infos;
}

ExternalWindow::ClassicMaker classic_maker(const std::string& spec, uint64_t seed) {
  check_classic_scheme(spec);
  return [spec, seed] { return make_controller(spec, seed); };
}

}  // namespace ccgym
