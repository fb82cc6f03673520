#include "deploy/cpp/flags.hh"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace ccgym::net {

Flags::Flags(std::string program, std::string summary, std::vector<FlagDef> defs)
    : program_(std::move(program)), summary_(std::move(summary)), defs_(std::move(defs)) {
  for (const FlagDef& d : defs_) {
    if (!d.default_value.empty()) values_[d.name] = d.default_value;
  }
}

const FlagDef* Flags::find(const std::string& name) const {
  for (const FlagDef& d : defs_) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

std::string Flags::usage() const {
  std::ostringstream out;
  out << "usage: " << program_;
  for (const FlagDef& d : defs_) {
    out << (d.required ? " --" : " [--") << d.name << ' ' << d.value_name
        << (d.required ? "" : "]");
  }
  out << "\n\n" << summary_ << "\n\n";
  for (const FlagDef& d : defs_) {
    out << "  --" << d.name << ' ' << d.value_name << "\n      " << d.help;
    if (!d.default_value.empty()) out << " (default " << d.default_value << ")";
    out << "\n";
  }
  return out.str();
}

void Flags::fail(const std::string& message) const {
  // One line: the usage block would bury the message (ccgym run shows it to the user).
  std::fprintf(stderr, "%s: %s (see %s --help)\n", program_.c_str(), message.c_str(),
               program_.c_str());
  std::exit(kExitUsage);
}

void Flags::parse(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(usage().c_str(), stdout);
      std::exit(0);
    }
    if (arg.rfind("--", 0) != 0) fail("unexpected argument '" + arg + "'");
    std::string name = arg.substr(2);
    std::string value;
    const auto eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else {
      if (i + 1 >= argc) fail("--" + name + " needs a value");
      value = argv[++i];
    }
    if (find(name) == nullptr) fail("unknown flag --" + name);
    values_[name] = value;
  }
  for (const FlagDef& d : defs_) {
    if (d.required && values_.count(d.name) == 0) fail("--" + d.name + " is required");
  }
}

bool Flags::given(const std::string& name) const { return values_.count(name) != 0; }

std::string Flags::text(const std::string& name) const {
  const auto it = values_.find(name);
  return it == values_.end() ? std::string() : it->second;
}

double Flags::number(const std::string& name) const {
  const std::string value = text(name);
  std::size_t used = 0;
  double out = NAN;
  try {
    out = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size() || !std::isfinite(out)) {
    fail("--" + name + " needs a number, got '" + value + "'");
  }
  return out;
}

uint64_t Flags::integer(const std::string& name) const {
  const std::string value = text(name);
  std::size_t used = 0;
  unsigned long long out = 0;
  try {
    if (!value.empty() && value[0] != '-') out = std::stoull(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value.size()) {
    fail("--" + name + " needs a non-negative integer, got '" + value + "'");
  }
  return out;
}

}  // namespace ccgym::net
