#pragma once
// Policy: a trained agent for inference, loaded from a run directory
// (checkpoint.safetensors + checkpoint.json) with its frozen signal
// normalizer. What `foxrl infer` uses, and what a trading system embeds:
//
//   foxrl::Policy<> policy(space, "runs/sp500");
//   auto d = policy.decide_market(space, series, /*position=*/0, /*latest_only=*/true);
//   // d.q.back() are the Q-values of {short, flat, long}, d.action.back() the greedy one

#include "agents/learner_registry.hpp"
#include "kernels/market/evaluation_kernels.hpp"
#include "market/market_data.hpp"
#include "market/market_env.hpp"
#include "market/market_setup.hpp"
#include "market/signal_adapter.hpp"
#include "train/checkpoint_store.hpp"
#include "train/run_manifest.hpp"
#include "train/run_spec.hpp"

#include <Kokkos_Core.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace foxrl {

/// Decisions of a policy on market bars, on the host.
struct MarketDecisions {
  std::vector<int> bar;                 ///< index of the last bar each decision has seen
  std::vector<std::int64_t> timestamp;  ///< its timestamp
  std::vector<std::vector<float>> q;    ///< Q-values per action (short, flat, long; long-only flat, long)
  std::vector<int> action;              ///< greedy action: 0 short, 1 flat, 2 long (long-only 0 flat, 1 long)
};

template <class ExecSpace = Kokkos::DefaultExecutionSpace>
class Policy {
 public:
  using memory_space = typename ExecSpace::memory_space;
  using obs_view = Kokkos::View<float**, Kokkos::LayoutRight, memory_space>;

  /// Loads the newest checkpoint of the run directory `run_dir` (or the
  /// checkpoint generation `run_dir` names: CheckpointStore::resolve);
  /// UsageError naming the file on anything missing, damaged or
  /// inconsistent. `max_rows`: the most observations one call evaluates.
  Policy(const ExecSpace& space, const std::string& run_dir, int max_rows = 4096)
      : dir_(CheckpointStore::resolve(run_dir)), manifest_(RunManifest::read(dir_)) {
    spec_ = run_spec(manifest_.config);
    learner_ = make_online_agent(space, manifest_.config, spec_.spaces(), max_rows);
    const std::string weights = dir_ + "/checkpoint.safetensors";
    manifest_.identity.check_metadata(learner_->load(space, weights), weights);
    if (manifest_.has_normalizer) {
      adapter_ = make_adapter(space, spec_);
      if (!adapter_) throw UsageError(dir_ + "/checkpoint.json: a normalizer, but the env does not normalise");
      adapter_->import_state(space, manifest_.normalizer, dir_ + "/checkpoint.json");
      adapter_->set_frozen(true);
    }
    normalized_ = obs_view(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::Policy::normalized"),
                           max_rows, spec_.obs_dim);
    greedy_ = Kokkos::View<std::int32_t*, memory_space>(
        Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::Policy::greedy"), max_rows);
  }

  int obs_dim() const { return spec_.obs_dim; }
  int num_actions() const { return spec_.num_actions; }
  /// The components of the run the policy was trained in (train/run_spec.hpp).
  const RunSpec& spec() const { return spec_; }
  int max_rows() const { return static_cast<int>(normalized_.extent(0)); }
  const RunManifest& manifest() const { return manifest_; }
  /// The checkpoint generation it was loaded from.
  const std::string& checkpoint_dir() const { return dir_; }

  /// Q-values [n, num_actions] of raw observations [n, obs_dim] (n <=
  /// max_rows), normalised as in training.
  void q_values(const ExecSpace& space, const Kokkos::View<const float**, Kokkos::LayoutRight, memory_space>& raw,
                const obs_view& q_out) {
    const int n = static_cast<int>(raw.extent(0));
    if (n > max_rows())
      throw UsageError("Policy: " + std::to_string(n) + " rows, at most " + std::to_string(max_rows()));
    auto input = Kokkos::subview(normalized_, std::make_pair(0, n), Kokkos::ALL);
    if (adapter_) {
      adapter_->normalize(space, raw, input);
    } else {
      Kokkos::deep_copy(space, input, raw);
    }
    learner_->q_values(space, input, q_out);
  }

  /// Decisions after each bar of `series` (or only after the last one) for
  /// a system holding `position` (-1, 0, +1; a long-only run 0 or +1).
  MarketDecisions decide_market(const ExecSpace& space, const MarketSeries& series, int position, bool latest_only) {
    if (spec_.env != MarketEnv<ExecSpace>::name)
      throw UsageError(std::string("Policy: this checkpoint was trained on ") + spec_.env);
    const ObservationSpec& obs_spec = spec_.market_env.observation;
    if (position < spec_.market_env.min_position() || position > 1)
      throw UsageError(spec_.market_env.positions == PositionSet::long_only
                           ? "Policy: position must be 0 or 1 (a long-only run), got " + std::to_string(position)
                           : "Policy: position must be -1, 0 or 1, got " + std::to_string(position));
    const int bars = static_cast<int>(series.size());
    // A decision at time t sees bars 0 .. t-1, and needs `window` returns.
    const int first_t = latest_only ? bars : obs_spec.min_decision_bar();
    if (bars < obs_spec.min_decision_bar()) {
      throw UsageError(series.source + ": " + std::to_string(bars) + " bars, the policy needs at least " +
                       std::to_string(obs_spec.min_decision_bar()));
    }
    MarketFeatures<ExecSpace> features(space, series, spec_.feature_window);
    MarketDecisions out;
    using Mem = memory_space;
    const int num_actions = spec_.num_actions;
    obs_view raw(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::Policy::raw"), max_rows(),
                 spec_.obs_dim);
    obs_view q(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::Policy::q"), max_rows(), num_actions);
    Kokkos::View<std::int32_t*, Mem> times(Kokkos::view_alloc(space, "foxrl::Policy::times"), max_rows());
    Kokkos::View<std::int32_t*, Mem> positions(Kokkos::view_alloc(space, "foxrl::Policy::positions"), max_rows());
    Kokkos::deep_copy(space, positions, position);
    for (int t0 = first_t; t0 <= bars; t0 += max_rows()) {
      const int n = std::min(max_rows(), bars + 1 - t0);
      kernels::decision_times(space, times, t0, n);
      auto rows = std::make_pair(0, n);
      auto raw_n = Kokkos::subview(raw, rows, Kokkos::ALL);
      kernels::build_observations(space, features.features(), obs_spec, Kokkos::subview(times, rows),
                                  Kokkos::subview(positions, rows), raw_n);
      auto q_n = Kokkos::subview(q, rows, Kokkos::ALL);
      q_values(space, raw_n, q_n);
      auto h_q = Kokkos::create_mirror_view(Kokkos::HostSpace(), q);
      Kokkos::deep_copy(space, h_q, q);
      compat::fence(space, "foxrl::Policy::copy_back");
      for (int i = 0; i < n; ++i) {
        const int t = t0 + i;
        out.bar.push_back(t - 1);
        out.timestamp.push_back(series.timestamp[static_cast<std::size_t>(t - 1)]);
        std::vector<float> row(static_cast<std::size_t>(num_actions));
        int best = 0;
        for (int a = 0; a < num_actions; ++a) {
          row[static_cast<std::size_t>(a)] = h_q(i, a);
          if (h_q(i, a) > h_q(i, best)) best = a;
        }
        out.q.push_back(row);
        out.action.push_back(best);
      }
    }
    return out;
  }

 private:
  std::string dir_;
  RunManifest manifest_;
  RunSpec spec_;
  std::unique_ptr<OnlineAgent<ExecSpace>> learner_;  ///< the run's algorithm, for inference
  std::optional<SignalAdapter<ExecSpace>> adapter_;
  obs_view normalized_;
  Kokkos::View<std::int32_t*, memory_space> greedy_;
};

}  // namespace foxrl
