// The Python face of the C++ core: ccgym.emulators._core. Long runs release
// the GIL; arrays come back as numpy arrays.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <stdexcept>
#include <thread>
#include <type_traits>

#include "emulators/cpp/simulator.hh"
#include "emulators/cpp/spec.hh"
#include "emulators/cpp/vec_simulator.hh"
#include "policies/cpp/actions.hh"
#include "policies/cpp/controller.hh"
#include "policies/cpp/features.hh"
#include "policies/cpp/policy_action.hh"

namespace nb = nanobind;
using namespace nb::literals;
using namespace ccgym;

namespace {

// Hands a vector's contents to numpy without a copy: the capsule owns it.
template <typename T>
nb::ndarray<nb::numpy, T, nb::ndim<1>> to_numpy(std::vector<T> values) {
  auto* owned = new std::vector<T>(std::move(values));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T, nb::ndim<1>>(owned->data(), {owned->size()}, owner);
}

template <typename T>
nb::ndarray<nb::numpy, T, nb::ndim<2>> to_numpy_2d(std::vector<T> values, std::size_t rows,
                                                    std::size_t cols) {
  auto* owned = new std::vector<T>(std::move(values));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T, nb::ndim<2>>(owned->data(), {rows, cols}, owner);
}

using FlowTuples = std::vector<std::tuple<std::string, double, double>>;

std::vector<FlowSpec> to_flows(const FlowTuples& flows) {
  std::vector<FlowSpec> out;
  for (const auto& [scheme, start, stop] : flows) {
    FlowSpec f;
    f.scheme = scheme;
    f.start_ms = start;
    f.stop_ms = stop < 0 ? kNever : stop;
    out.push_back(f);
  }
  return out;
}

// A rows x cols numpy array filled by `fill`: `out` if given (C-contiguous, that shape),
// else a new one numpy allocates (no C++ allocation per step).
template <typename T, typename Fill>
nb::object fill_rows(nb::object out, std::size_t rows, std::size_t cols, Fill fill) {
  if (out.is_none()) {
    out = nb::module_::import_("numpy").attr("empty")(
        nb::make_tuple(rows, cols), std::is_same_v<T, float> ? "float32" : "float64");
  }
  auto array = nb::cast<nb::ndarray<T, nb::ndim<2>, nb::c_contig>>(out);
  if (array.shape(0) != rows || array.shape(1) != cols) {
    throw std::invalid_argument("out has the wrong shape");
  }
  fill(array.data());
  return out;
}

// A step's output buffers: written in place, so never converted (a copy would be written).
template <typename T>
using Rows2d = nb::ndarray<T, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
template <typename T>
using Rows1d = nb::ndarray<T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

template <typename T>
Rows2d<T>* checked(Rows2d<T>& a, std::size_t rows, std::size_t cols, const char* name) {
  if (a.shape(0) != rows || a.shape(1) != cols) {
    throw std::invalid_argument(std::string(name) + " has the wrong shape");
  }
  return &a;
}

template <typename T>
Rows1d<T>* checked(Rows1d<T>& a, std::size_t rows, const char* name) {
  if (a.shape(0) != rows) throw std::invalid_argument(std::string(name) + " has the wrong shape");
  return &a;
}

std::size_t first_external(VecSimulator& v, std::size_t i) {
  v.sim(i);  // raises for no such simulation, or one never reset
  return v.row_flows()[v.row_begin(i)];
}

void check_flow(const Simulator& sim, std::size_t flow) {
  if (flow >= sim.num_flows()) throw nb::index_error("no such flow");
}

// A learned policy's inputs, which only an external flow's sender computes.
const Features& learned_features(Simulator& sim, std::size_t flow) {
  check_flow(sim, flow);
  if (!sim.sender(flow).keeps_features()) {
    throw std::invalid_argument("flow " + std::to_string(flow) +
                                " runs a classic scheme: only an external flow has features");
  }
  return sim.sender(flow).features();
}

nb::dict feature_dict(const FeatureValues& v) {
  nb::dict d;
  d["delay_ewma_ms"] = v.delay_ewma_ms;
  d["delivery_rate_mbps"] = v.delivery_rate_mbps;
  d["send_rate_mbps"] = v.send_rate_mbps;
  d["min_rtt_ms"] = v.min_rtt_ms;
  d["last_rtt_ms"] = v.last_rtt_ms;
  d["ack_rate_mbps"] = v.ack_rate_mbps;
  d["standing_queue"] = v.standing_queue;
  d["rate_ratio_log2"] = v.rate_ratio_log2;
  d["rate_ratio_log2_slow"] = v.rate_ratio_log2_slow;
  return d;
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "ccgym's C++ core: link emulation, the virtual-time simulator, schemes, features.";

  m.attr("OBS_DIM") = kObsDim;
  m.attr("NUM_ACTIONS") = kNumActions;
  m.attr("STEP_MS") = kStepMs;
  m.attr("TOGETHER_START_SPREAD_MS") = kTogetherStartSpreadMs;
  m.attr("MIN_WINDOW") = kMinWindow;
  m.attr("MAX_WINDOW") = kMaxWindow;
  m.attr("INITIAL_WINDOW") = kInitialWindow;
  m.attr("DELAY_UNIT_MS") = kDelayUnitMs;
  m.attr("DELAY_TOP_MS") = kDelayTopMs;
  m.attr("RATE_UNIT_MBPS") = kRateUnitMbps;
  m.attr("RATE_TOP_MBPS") = kRateTopMbps;
  m.attr("WINDOW_UNIT") = kWindowUnit;
  m.attr("OBSERVATION_VERSION") = kObservationVersion;
  m.attr("OBS_SCALED") = kObsScaled;
  m.attr("OBS_ACTION_OFFSET") = kObsActionOffset;
  // A list: nanobind's stub generator writes a one-element tuple as "(7)", an int.
  m.attr("OBS_SIGNED_INDICES") =
      nb::cast(std::vector<int>(kObsSignedIndices.begin(), kObsSignedIndices.end()));
  // Each observation version this build computes -> its length, and its signed entries.
  nb::dict obs_dims;
  nb::dict signed_by_version;
  for (int version : kObservationVersions) obs_dims[nb::int_(version)] = observation_dim(version);
  signed_by_version[nb::int_(kObservationVersion)] =
      std::vector<int>(kObsSignedIndices.begin(), kObsSignedIndices.end());
  signed_by_version[nb::int_(kCompetitionObservationVersion)] =
      std::vector<int>(kObsSignedIndicesV6.begin(), kObsSignedIndicesV6.end());
  m.attr("OBS_DIMS") = obs_dims;
  m.attr("OBS_SIGNED_INDICES_BY_VERSION") = signed_by_version;
  m.attr("COMPETITION_OBSERVATION_VERSION") = kCompetitionObservationVersion;
  m.attr("OBS_WINDOW_INDEX") = kObsWindowIndex;
  m.attr("HOLD_ACTION") = kHoldAction;
  m.attr("EXTERNAL_SCHEME") = std::string(kExternalScheme);
  nb::list action_names;
  for (const char* name : kActionNames) action_names.append(name);
  m.attr("ACTION_NAMES") = action_names;
  m.attr("DATA_PACKET_BYTES") = kDataPacketBytes;
  m.attr("OPPORTUNITY_BYTES") = kOpportunityBytes;
  m.attr("STAT_DELIVERED_BYTES") = kStatDeliveredBytes;
  m.attr("STAT_MEAN_DELAY_MS") = kStatMeanDelayMs;
  m.attr("STAT_WINDOW") = kStatWindow;
  m.attr("STAT_ACTIVE") = kStatActive;
  m.attr("STAT_ACTIVE_FLOWS") = kStatActiveFlows;
  m.attr("STAT_CAPACITY_BYTES") = kStatCapacityBytes;
  m.attr("STAT_GROWTH_CEILING") = kStatGrowthCeiling;
  m.attr("STAT_CLASSIC_FLOWS") = kStatClassicFlows;
  m.attr("STAT_CLASSIC_IN_FLIGHT") = kStatClassicInFlight;
  m.attr("STAT_DELIVERED_MBPS") = kStatDeliveredMbps;
  m.attr("STAT_DELAY_MS") = kStatDelayMs;
  m.attr("STAT_COLUMNS") = kStatColumns;
  nb::list actions;
  for (const auto& a : kActions)
    actions.append(nb::make_tuple(a.op == Op::kMultiply ? "*" : "+", a.value));
  m.attr("ACTIONS") = actions;
  m.def("apply_action", &apply_action, "window"_a, "action"_a);
  m.def("closest_action", &closest_action, "window"_a, "target"_a, "ceiling"_a = kMaxWindow);
  m.def("apply_policy_action", &apply_policy_action, "window"_a, "action"_a, "ceiling"_a);

  nb::class_<LinkSpec>(m, "LinkSpec")
      .def_ro("name", &LinkSpec::name)
      .def_ro("delay_ms", &LinkSpec::delay_ms)
      .def_ro("once", &LinkSpec::once)
      .def_prop_ro("data_trace", [](const LinkSpec& s) { return s.data.trace; })
      .def_prop_ro("ack_trace", [](const LinkSpec& s) { return s.ack.trace; })
      .def_prop_ro("rate_mbps", [](const LinkSpec& s) { return s.data.rate_mbps; })
      .def_prop_ro("delivery", [](const LinkSpec& s) { return s.data.delivery; })
      .def_prop_ro("queue", [](const LinkSpec& s) { return s.data.queue; })
      .def_prop_ro("loss", [](const LinkSpec& s) { return s.data.loss; })
      .def("to_string", &LinkSpec::to_string)
      .def("__repr__", [](const LinkSpec& s) { return "LinkSpec('" + s.to_string() + "')"; });
  m.def("parse_link_spec", &parse_link_spec, "text"_a,
        "Parses and validates a link spec; ValueError names the bad key.");
  m.def("link_spec_keys", &link_spec_keys);

  m.def("load_trace", [](const std::string& path) {
    Trace t = load_trace(path);
    return to_numpy<uint32_t>(std::move(t.timestamps));
  }, "path"_a, "A mahimahi trace's timestamps (ms); ValueError names FILE:LINE.");

  m.def("opportunities", [](const std::string& link, double duration_ms, uint64_t seed) {
    LinkSpec spec = parse_link_spec(link);
    auto direction = make_direction(spec.data, spec.delay_ms, spec.once,
                                    derive_seed(seed, kDataDirectionPart));
    direction->record_opportunities(true);
    direction->advance(duration_ms);
    std::vector<double> times = direction->opportunities();
    while (!times.empty() && times.back() >= duration_ms) times.pop_back();
    return to_numpy<double>(std::move(times));
  }, "link"_a, "duration_ms"_a, "seed"_a = 1,
     "The data direction's delivery opportunities (ms) in [0, duration), as a\n"
     "Simulator with this seed sees them.");

  m.def("scheme_catalog", [] {
    nb::list out;
    for (const auto& info : scheme_catalog()) {
      nb::dict d;
      d["name"] = info.name;
      d["summary"] = info.summary;
      nb::list params;
      for (const auto& p : info.params) {
        nb::dict param;
        param["name"] = p.name;
        param["default"] = p.value;
        param["help"] = p.help;
        param["range"] = p.range.to_string();
        // None for an unbounded end, so that the catalog is valid JSON.
        param["min"] = std::isfinite(p.range.lo) ? nb::cast(p.range.lo) : nb::none();
        param["max"] = std::isfinite(p.range.hi) ? nb::cast(p.range.hi) : nb::none();
        param["min_open"] = p.range.lo_open;
        param["max_open"] = p.range.hi_open;
        params.append(param);
      }
      d["params"] = params;
      out.append(d);
    }
    return out;
  }, "Every scheme make_controller() knows, in catalog order (external last): dicts with\n"
     "name, summary and params (name, default, help, range, min, max, min_open, max_open).");
  m.def("validate_scheme", [](const std::string& spec) { (void)make_controller(spec, 1); },
        "spec"_a, "Raises ValueError if the scheme or a parameter is unknown.");
  m.def("validate_classic_scheme", &check_classic_scheme, "spec"_a,
        "As validate_scheme, and ValueError for EXTERNAL_SCHEME too: what may compete beside\n"
        "a learned flow.");

  nb::class_<Simulator>(m, "Simulator")
      .def("__init__", [](Simulator* self, const std::string& link,
                          const std::vector<std::tuple<std::string, double, double>>& flows,
                          uint64_t seed, bool record_log, double start_spread_ms) {
        new (self) Simulator(parse_link_spec(link), to_flows(flows), seed, record_log,
                             start_spread_ms);
      }, "link"_a, "flows"_a, "seed"_a = 1, "record_log"_a = true,
         "start_spread_ms"_a = kTogetherStartSpreadMs,
         "flows: (scheme, start_ms, stop_ms) each; stop_ms < 0 runs to the end. Flows with one\n"
         "start_ms start each up to start_spread_ms later, seeded (simulator.hh).")
      .def("run_until", &Simulator::run_until, "until_ms"_a, nb::call_guard<nb::gil_scoped_release>())
      .def_prop_ro("now_ms", &Simulator::now_ms)
      .def_prop_ro("num_flows", &Simulator::num_flows)
      .def_prop_ro("min_rtt_ms", &Simulator::min_rtt_ms)
      .def("start_ms", [](Simulator& s, std::size_t flow) {
        check_flow(s, flow);
        return s.start_ms(flow);
      }, "flow"_a = 0, "When the flow starts (ms): as asked, plus its seeded offset if others\n"
         "were asked to start with it.")
      .def("window", [](Simulator& s, std::size_t flow) {
        check_flow(s, flow);
        return s.sender(flow).window();
      }, "flow"_a = 0)
      .def("packets_sent", [](Simulator& s, std::size_t flow) {
        check_flow(s, flow);
        return s.sender(flow).next_seq();
      }, "flow"_a = 0)
      .def("in_flight", [](Simulator& s, std::size_t flow) {
        check_flow(s, flow);
        return s.sender(flow).in_flight();
      }, "flow"_a = 0)
      .def("set_window", [](Simulator& s, double window, std::size_t flow) {
        check_flow(s, flow);
        ExternalWindow* w = s.external(flow);
        if (!w) throw std::invalid_argument("flow's scheme is not 'external'");
        w->set_window(std::clamp(window, kMinWindow, kMaxWindow));
      }, "window"_a, "flow"_a = 0)
      .def("take_action", [](Simulator& s, int action, std::size_t flow) {
        check_flow(s, flow);
        ExternalWindow* w = s.external(flow);
        if (!w) throw std::invalid_argument("flow's scheme is not 'external'");
        if (action < 0 || action >= kNumActions) throw std::invalid_argument("action out of range");
        return take_policy_action(s.sender(flow).features(), *w, action);
      }, "action"_a, "flow"_a = 0,
      "A learned policy's action: the new window (grown at most to the growth ceiling).")
      .def("compete", [](Simulator& s, const std::string& spec, std::size_t flow, bool restart,
                         const std::string& first) {
        check_flow(s, flow);
        s.compete(flow, spec, restart, first);
      }, "spec"_a, "flow"_a = 0, "restart"_a = false, "first"_a = "",
      "Puts a classic scheme under the external flow: its competitive mode (policy_action.hh);\n"
      "first, when given, the classic that takes over first.")
      .def("competitive_mode", [](Simulator& s, std::size_t flow) {
        check_flow(s, flow);
        ExternalWindow* w = s.external(flow);
        if (!w) throw std::invalid_argument("flow's scheme is not 'external'");
        nb::dict d;
        d["competing"] = w->competing();
        d["decisions"] = w->decisions();
        d["competing_decisions"] = w->competing_decisions();
        d["share"] = w->share_meter().share();
        d["capacity_mbps"] = w->share_meter().capacity_mbps();
        d["first_classic"] = w->using_first_classic();
        return d;
      }, "flow"_a = 0,
      "Whether the flow is in competitive mode now, and its decisions in all and in that mode.")
      .def("observation", [](Simulator& s, int previous_action, std::size_t flow, int version) {
        const Features& features = learned_features(s, flow);
        const int dim = observation_dim(version);
        if (dim < 0) throw std::invalid_argument("no such observation version");
        std::vector<float> obs(static_cast<std::size_t>(dim));
        features.observation_into(version, s.sender(flow).window(),
                                  previous_action, s.now_ms(), obs.data());
        return to_numpy<float>(std::move(obs));
      }, "previous_action"_a, "flow"_a = 0, "version"_a = kObservationVersion)
      .def("growth_ceiling", [](Simulator& s, std::size_t flow) {
        check_flow(s, flow);
        ExternalWindow* w = s.external(flow);
        if (!w) throw std::invalid_argument("flow's scheme is not 'external'");
        return growth_ceiling(s.sender(flow).features(), *w);
      }, "flow"_a = 0, "How far a learned policy may grow the flow's window now (actions.hh).")
      .def("features", [](Simulator& s, std::size_t flow) {
        return feature_dict(learned_features(s, flow).values());
      }, "flow"_a = 0)
      .def("step_stats", [](Simulator& s, std::size_t flow) {
        check_flow(s, flow);
        const StepStats& st = s.step_stats(flow);
        nb::dict d;
        d["delivered_bytes"] = st.delivered_bytes;
        d["delay_sum_ms"] = st.delay_sum_ms;
        d["delay_max_ms"] = st.delay_max_ms;
        d["arrivals"] = st.arrivals;
        d["drops"] = st.drops;
        return d;
      }, "flow"_a = 0)
      .def("clear_step_stats", &Simulator::clear_step_stats)
      .def("log", [](Simulator& s) {
        const PacketLog& l = s.log();
        nb::dict d;
        d["flow"] = to_numpy<int32_t>(l.flow);
        d["seq"] = to_numpy<int64_t>(l.seq);
        d["bytes"] = to_numpy<int32_t>(l.bytes);
        d["send_ms"] = to_numpy<double>(l.send_ms);
        d["arrival_ms"] = to_numpy<double>(l.arrival_ms);
        d["dropped"] = to_numpy<uint8_t>(l.dropped);
        return d;
      }, "The packet log: one entry per datagram sent, numpy columns.")
      .def("opportunities", [](Simulator& s) { return to_numpy<double>(s.opportunities()); });

  m.def("run_all_until", [](std::vector<Simulator*> sims, double until_ms, int threads) {
    nb::gil_scoped_release release;
    run_all_until(sims, until_ms, threads);
  }, "sims"_a, "until_ms"_a, "threads"_a = 0);

  nb::class_<VecSimulator>(m, "VecSimulator")
      .def(nb::init<std::size_t, int>(), "n"_a, "threads"_a = 1,
           "n simulations; threads: 0 chooses by size (never slower than one), else that many.")
      .def("__len__", &VecSimulator::size)
      .def("reset", &VecSimulator::reset, "i"_a, "link"_a, "seed"_a, "window"_a = kInitialWindow,
           "Starts simulation i afresh with one external flow (one row).")
      .def("reset_flows", [](VecSimulator& v, std::size_t i, const std::string& link,
                             uint64_t seed, const FlowTuples& flows, double window) {
        v.reset_flows(i, link, seed, to_flows(flows), window);
      }, "i"_a, "link"_a, "seed"_a, "flows"_a, "window"_a = kInitialWindow,
         "Starts simulation i afresh with flows (scheme, start_ms, stop_ms; stop_ms < 0 runs\n"
         "to the end); its 'external' flows are its rows, in flow order, at `window`.")
      .def("advance", &VecSimulator::advance, "i"_a, "until_ms"_a,
           "Runs simulation i alone to until_ms (competitors that start first).")
      .def_prop_ro("num_rows", &VecSimulator::rows, "External flows of all simulations.")
      .def_prop_ro("obs_dim", &VecSimulator::obs_dim, "Each row's observation length.")
      .def("set_observation_version", &VecSimulator::set_observation_version, "version"_a,
           "Which observation every row reads (OBS_DIMS' keys); OBSERVATION_VERSION until set.")
      .def_prop_ro("threads", &VecSimulator::threads, "Threads a step runs on.")
      .def("row_begin", &VecSimulator::row_begin, "i"_a,
           "Simulation i's first row; row_begin(len(self)) == num_rows.")
      .def("row_flows", [](VecSimulator& v) { return to_numpy<uint32_t>(v.row_flows()); },
           "Each row's flow index within its simulation.")
      .def("previous_action", &VecSimulator::previous_action, "row"_a)
      .def("step", [](VecSimulator& v, nb::ndarray<const int32_t, nb::ndim<1>, nb::c_contig> actions,
                      std::optional<Rows2d<float>> obs, std::optional<Rows2d<double>> columns,
                      std::optional<Rows1d<const double>> targets,
                      std::optional<Rows1d<int64_t>> experts) {
        const std::size_t rows = v.rows();
        if (actions.shape(0) != rows) throw std::invalid_argument("one action per row");
        StepOutputs out;
        if (obs) out.obs = checked(*obs, rows, v.obs_dim(), "obs")->data();
        if (columns) out.columns = checked(*columns, kStatColumns, rows, "columns")->data();
        if (targets) out.targets = checked(*targets, rows, "targets")->data();
        if (experts) out.experts = checked(*experts, rows, "experts")->data();
        nb::gil_scoped_release release;
        v.step(actions.data(), out);
      }, "actions"_a, nb::arg("obs").noconvert() = nb::none(),
         nb::arg("columns").noconvert() = nb::none(), nb::arg("targets").noconvert() = nb::none(),
         nb::arg("experts").noconvert() = nb::none(),
         "Applies one action per row (-1: keep the window), then runs every simulation\n"
         "10 ms, on threads, without the GIL. The step's threads also write what is given:\n"
         "obs (as observations()), columns (STAT_COLUMNS x rows: stats() transposed, each\n"
         "statistic contiguous) and, for a target window per row, experts (int64: as\n"
         "closest_actions(targets) would after the step).")
      .def("observations", [](VecSimulator& v, nb::object out) {
        return fill_rows<float>(out, v.rows(), v.obs_dim(), [&](float* p) { v.observations(p); });
      }, "out"_a = nb::none(), "rows x obs_dim float32, into out if given.",
         // out is a plain object here (fill_rows checks it), an array in the stub.
         nb::sig("def observations(self, out: numpy.typing.NDArray[numpy.float32] | None = None)"
                 " -> numpy.typing.NDArray[numpy.float32]"))
      .def("stats", [](VecSimulator& v, nb::object out) {
        return fill_rows<double>(out, v.rows(), kStatColumns, [&](double* p) { v.stats(p); });
      }, "out"_a = nb::none(),
         "The last step's statistics, one row per external flow, columns STAT_*; into out if given.",
         nb::sig("def stats(self, out: numpy.typing.NDArray[numpy.float64] | None = None)"
                 " -> numpy.typing.NDArray[numpy.float64]"))
      .def("closest_actions", [](VecSimulator& v,
                                 nb::ndarray<const double, nb::ndim<1>, nb::c_contig> targets) {
        if (targets.shape(0) != v.rows()) throw std::invalid_argument("one target per row");
        std::vector<int32_t> out(v.rows());
        v.closest_actions(targets.data(), out.data());
        return to_numpy<int32_t>(std::move(out));
      }, "targets"_a, "Each row's action closest to its target window (the expert's label).")
      .def("now_ms", [](VecSimulator& v, std::size_t i) { return v.sim(i).now_ms(); }, "i"_a)
      .def("window", [](VecSimulator& v, std::size_t i) {
        return v.sim(i).sender(first_external(v, i)).window();
      }, "i"_a, "The window of simulation i's first external flow.")
      .def("growth_ceiling", [](VecSimulator& v, std::size_t i) {
        const std::size_t f = first_external(v, i);
        return growth_ceiling(v.sim(i).sender(f).features(), *v.sim(i).external(f));
      }, "i"_a, "How far a learned policy may grow the window of simulation i's first external\n"
                "flow now (actions.hh).");
}
