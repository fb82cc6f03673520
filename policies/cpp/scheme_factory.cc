// make_controller() and scheme_catalog(): the one parser of scheme specs
// ("name", "name:value", "name:key=value:key=value"), used by the simulator, the
// UDP sender and, through the binding, every Python verb.
#include <cmath>
#include <stdexcept>

#include "policies/cpp/controller.hh"
#include "policies/cpp/schemes/schemes.hh"

namespace ccgym {
namespace schemes {
namespace {

std::unique_ptr<Controller> make_external(const Params& params, uint64_t) {
  const double window = param(params, "window");
  check_window_param("external", "window", window);
  return std::make_unique<ExternalWindow>(window);
}

SchemeEntry external_scheme() {
  return {{"external",
           "window set from outside: the learned policy, the oracle or Python drive it",
           {{"window", 10, "initial window (packets) until the first set_window()"}}},
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

// The schemes a user names: `external` is the window that a learned policy, the oracle or an
// env sets from outside, accepted but never offered (alone it is a fixed window).
std::string joined_names(const std::vector<SchemeEntry>& entries) {
  std::string out;
  for (const SchemeEntry& e : entries) {
    if (e.info.name != "external") out += (out.empty() ? "" : ", ") + e.info.name;
  }
  return out;
}

std::string joined_params(const SchemeInfo& info) {
  std::string out;
  for (const SchemeParam& p : info.params) out += (out.empty() ? "" : ", ") + p.name;
  return out.empty() ? "none" : out;
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
      fixed_scheme(), aimd_scheme(), delay_scheme(), ewma_scheme(),  vegas_scheme(),
      cubic_scheme(), bbr_scheme(),  copa_scheme(),  verus_scheme(), sprout_scheme(),
      external_scheme()};
  return entries;
}

double param(const Params& params, const std::string& name) {
  const auto it = params.find(name);
  if (it == params.end()) throw std::logic_error("scheme parameter '" + name + "' not declared");
  return it->second;
}

void check_param(bool ok, const std::string& scheme, const std::string& name, const char* rule,
                 double value) {
  if (ok) return;
  throw std::invalid_argument("scheme '" + scheme + "': parameter '" + name + "' must be " + rule +
                              ", got " + std::to_string(value));
}

void check_window_param(const std::string& scheme, const std::string& name, double value) {
  static const std::string rule =
      "in [1, " + std::to_string(static_cast<int>(kMaxSchemeWindow)) + "]";
  check_param(value >= 1 && value <= kMaxSchemeWindow, scheme, name, rule.c_str(), value);
}

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
                                "' (valid: " + schemes::joined_names(entries) + ")");
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
  return entry->make(params, seed);
}

std::vector<SchemeInfo> scheme_catalog() {
  std::vector<SchemeInfo> infos;
  for (const schemes::SchemeEntry& e : schemes::all_schemes()) infos.push_back(e.info);
  return infos;
}

}  // namespace ccgym
