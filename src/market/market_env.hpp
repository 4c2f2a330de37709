#pragma once
// Market replay: N trading envs replaying windows of one OHLCV series on the
// device (docs BENCHMARKS.md, "Market replay"; docs/environments.md).
//
// Timing: an env at decision bar t has seen bars <= t-1 (its observation),
// chooses a position p' in {-1, 0, +1} (action - 1; long-only {0, +1},
// the action itself: market/position_set.hpp), and earns
//   reward = p' * r[t] - cost * |p' - p|,   r[t] = log(close[t] / close[t-1]),
// then moves to t + 1. Episodes end by truncation only.
//
// Splits: a split [begin, end) of bars owns the decisions and rewards of
// its episodes: start bars t0 are uniform in [max(begin, W), end - E], so
// rewards read bars t0 .. t0+E-1 < end and observations bars < t0+E <= end.
// The only bars before `begin` that a split reads are the observation
// lookback (W bars of returns and the rolling statistics' window) and the
// entry price close[begin-1] of r[begin].

#include "config/train_config.hpp"
#include "core/compat.hpp"
#include "core/error.hpp"
#include "core/validate.hpp"
#include "kernels/core/counter_rng.hpp"
#include "kernels/envs/choose_then_step.hpp"
#include "kernels/market/features.hpp"
#include "kernels/market/market_step.hpp"
#include "market/market_data.hpp"
#include "market/market_setup.hpp"
#include "market/market_splits.hpp"
#include "market/position_set.hpp"
#include "views/envs/env_step.hpp"
#include "views/envs/env_traits.hpp"
#include "views/market/market_views.hpp"

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <string>

namespace foxrl {

/// The feature set named `name` ("returns", "ohlcv"); UsageError otherwise.
FeatureSet parse_feature_set(const std::string& name);
/// The name parse_feature_set reads back.
std::string feature_set_name(FeatureSet set);

struct MarketEnvConfig {
  ObservationSpec observation;  ///< default: 64 returns + position (the benchmark's)
  int episode_length = 1000;    ///< steps per episode (then truncated)
  /// Cost per unit of position change, as a fraction (0.0005 in the benchmark).
  double cost = 0.0005;
  PositionSet positions = PositionSet::long_short;  ///< long and short, or long only

  int num_actions() const { return position_set_actions(positions); }
  int min_position() const { return position_set_min(positions); }

  /// Cost from a quoted spread and a commission: half the spread plus the
  /// commission, in basis points, per unit of position change.
  static double cost_from_bps(double spread_bps, double commission_bps) {
    return (spread_bps / 2.0 + commission_bps) * 1e-4;
  }
};

/// The market env a config describes (features, window, episode length,
/// cost, positions).
inline MarketEnvConfig market_env_config(const TrainConfig& config) {
  MarketEnvConfig m;
  m.observation.set = parse_feature_set(config.features);
  m.observation.window = static_cast<int>(config.window);
  m.episode_length = static_cast<int>(config.episode_length);
  m.cost = config.cost_bps * 1e-4;
  m.positions = parse_position_set(config.positions);
  return m;
}

/// The series and its per-bar features on the device; shared (cheaply
/// copied) by the envs of every split.
template <class ExecSpace>
class MarketFeatures {
 public:
  using memory_space = typename ExecSpace::memory_space;

  /// Uploads `series` and computes its bar features (stats_window bars of
  /// rolling statistics). Setup: fences once so `series` may go away.
  MarketFeatures(const ExecSpace& space, const MarketSeries& series, int stats_window)
      : stats_window_(stats_window), source_(series.source) {
    if (series.size() < 2) throw UsageError(series.source + ": a market series needs at least 2 bars");
    if (series.size() > static_cast<std::size_t>(INT32_MAX / 2)) {
      throw UsageError(series.source + ": too many bars (" + std::to_string(series.size()) + ")");
    }
    require_at_least("MarketFeatures", "stats_window", stats_window, 1);
    const int L = static_cast<int>(series.size());
    auto upload = [&](const char* name, const std::vector<double>& v) {
      Kokkos::View<double*, memory_space> d(
          Kokkos::view_alloc(space, Kokkos::WithoutInitializing, std::string("foxrl::Market::") + name), L);
      Kokkos::deep_copy(
          space, d,
          Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(v.data(), v.size()));
      return d;
    };
    bars_.open = upload("open", series.open);
    bars_.high = upload("high", series.high);
    bars_.low = upload("low", series.low);
    bars_.close = upload("close", series.close);
    bars_.volume = upload("volume", series.volume);
    auto feature = [&](const char* name) {
      return Kokkos::View<float*, memory_space>(
          Kokkos::view_alloc(space, Kokkos::WithoutInitializing, std::string("foxrl::Market::") + name), L);
    };
    features_.log_return = feature("log_return");
    features_.range = feature("range");
    features_.volume_z = feature("volume_z");
    features_.volatility = feature("volatility");
    kernels::compute_bar_features(space, bars_, stats_window, features_);
    compat::fence(space, "foxrl::Market::upload");  // the host vectors may be released after return
  }

  int size() const { return bars_.size(); }
  int stats_window() const { return stats_window_; }
  const std::string& source() const { return source_; }
  const MarketBars<memory_space>& bars() const { return bars_; }
  const BarFeatures<memory_space>& features() const { return features_; }

 private:
  int stats_window_;
  std::string source_;
  MarketBars<memory_space> bars_;
  BarFeatures<memory_space> features_;
};

/// A run's market, built once and shared by the envs of every split: the
/// series and its splits (host) and their features on the device (the
/// market env's registered Data).
template <class ExecSpace>
struct MarketComponents {
  MarketSetup data;
  MarketFeatures<ExecSpace> features;
};

/// N market-replay envs over one split. Observations [N, obs_dim] float
/// LayoutRight (the ObservationSpec's layout); actions 0 short, 1 flat, 2 long,
/// or long-only 0 flat, 1 long (config.positions).
template <class ExecSpace>
class MarketEnv {
 public:
  using execution_space = ExecSpace;
  using memory_space = typename ExecSpace::memory_space;
  using obs_view = Kokkos::View<float**, Kokkos::LayoutRight, memory_space>;
  using action_view = Kokkos::View<const std::int32_t*, memory_space>;

  // --- the registered env's contract (envs/env_registry.hpp) ---------------
  static constexpr const char* name = "market";
  static constexpr const char* summary =
      "market replay of OHLCV bars (a CSV or the built-in generator): trade short, flat or long, pay costs";
  static constexpr EvaluationKind evaluation = EvaluationKind::backtest;
  /// The series, its splits and features of `config` (data, synthetic,
  /// start_date, train_end, test_start, window, ...).
  using Data = MarketComponents<ExecSpace>;
  static EnvSpaces spaces(const TrainConfig& config) {
    const MarketEnvConfig m = market_env_config(config);
    return {m.observation.obs_dim(), m.num_actions(), market_normalize_mask(m.observation)};
  }
  /// Loads or generates the market of `config` and computes its features
  /// over the observation's rolling window. Setup: fences.
  static Data make_data(const ExecSpace& space, const TrainConfig& config) {
    MarketSetup data = prepare_market(config);
    MarketFeatures<ExecSpace> features(space, data.series, market_env_config(config).observation.rolling_window());
    return {std::move(data), std::move(features)};
  }
  /// `num_envs` envs replaying the split `which` of `data`.
  static MarketEnv make(const ExecSpace& space, const TrainConfig& config, const Data& data, int num_envs,
                        std::uint64_t seed, EnvSplit which) {
    return MarketEnv(space, data.features, data.data.splits.of(which), num_envs, seed, market_env_config(config));
  }

  MarketEnv(const ExecSpace& space, const MarketFeatures<ExecSpace>& market, MarketSplit split, int num_envs,
            std::uint64_t seed, MarketEnvConfig config = {})
      : market_(market),
        split_(split),
        num_envs_(num_envs),
        config_(config),
        start_seed_(kernels::derive_seed(seed, kernels::rng_tag::market_start)) {
    const auto& spec = config.observation;
    require_positive("MarketEnv", "num_envs", num_envs);
    require_at_least("foxrl::MarketEnvConfig", "observation.window", spec.window, 1);
    if (spec.set == FeatureSet::ohlcv && spec.rolling_window() != market.stats_window()) {
      throw UsageError("MarketEnv: observation wants rolling statistics over " + std::to_string(spec.rolling_window()) +
                       " bars, the market features were computed over " + std::to_string(market.stats_window()));
    }
    require_at_least("foxrl::MarketEnvConfig", "episode_length", config.episode_length, 1);
    require_at_least("foxrl::MarketEnvConfig", "cost", config.cost, 0.0);
    require(std::isfinite(config.cost), "foxrl::MarketEnvConfig", "cost", config.cost, "must be finite");
    if (split.begin < 0 || split.end > market.size() || split.begin >= split.end) {
      // An empty split comes from train_end / test_start outside the data's
      // time span; the user's keys, not the bar indices, say how to fix it.
      throw UsageError(market.source() + ": the split of bars [" + std::to_string(split.begin) + ", " +
                       std::to_string(split.end) + ") of " + std::to_string(market.size()) +
                       " is empty or outside the series (check train_end and test_start against the data's dates)");
    }
    first_start_ = split.begin > spec.min_decision_bar() ? split.begin : spec.min_decision_bar();
    const int last_start = split.end - config.episode_length;
    if (last_start < first_start_) {
      throw UsageError(market.source() + ": the split of bars [" + std::to_string(split.begin) + ", " +
                       std::to_string(split.end) + ") is too short for episodes of " +
                       std::to_string(config.episode_length) + " bars (episode_length) after a lookback of " +
                       std::to_string(spec.min_decision_bar()) + " bars (window " + std::to_string(spec.window) + ")");
    }
    num_starts_ = static_cast<std::uint32_t>(last_start - first_start_ + 1);

    auto ivec = [&](const char* name) {
      return Kokkos::View<std::int32_t*, memory_space>(
          Kokkos::view_alloc(space, Kokkos::WithoutInitializing, std::string("foxrl::MarketEnv::") + name), num_envs);
    };
    state_.time = ivec("time");
    state_.position = ivec("position");
    state_.episode_steps = ivec("episode_steps");
    state_.episodes =
        Kokkos::View<std::uint64_t*, memory_space>(Kokkos::view_alloc(space, "foxrl::MarketEnv::episodes"), num_envs);
    next_time_ = ivec("next_time");
    next_position_ = ivec("next_position");
    obs_ = obs_view(Kokkos::view_alloc(space, Kokkos::WithoutInitializing, "foxrl::MarketEnv::observations"), num_envs,
                    obs_dim());
    last_ = EnvStep<memory_space>::allocate(space, num_envs, obs_dim(), "foxrl::MarketEnv");
    reset(space);
  }

  int obs_dim() const { return config_.observation.obs_dim(); }
  int num_actions() const { return config_.num_actions(); }
  int num_envs() const { return num_envs_; }
  const MarketEnvConfig& config() const { return config_; }
  const MarketSplit& split() const { return split_; }
  /// Range of start bars [first, first + count) episodes draw from.
  int first_start() const { return first_start_; }
  int num_starts() const { return static_cast<int>(num_starts_); }

  /// Starts a new episode in every env (two launches).
  void reset(const ExecSpace& space) {
    kernels::market_reset(space, functor(action_view(), last_));
    kernels::build_observations(space, market_.features(), config_.observation, state_.time, state_.position, obs_);
  }

  /// Steps every env (two launches) into step_result(); observations() then
  /// holds the next observation (post-reset where an episode ended).
  void step(const ExecSpace& space, const action_view& actions) { step(space, actions, last_); }

  /// Same, writing the step result into caller-owned Views.
  void step(const ExecSpace& space, const action_view& actions, const EnvStep<memory_space>& out) {
    kernels::market_step(space, functor(actions, out));
    observations_after_step(space, out, {});
  }

  /// step(space, actions) with each env's action chosen by `choose` in the
  /// step's own thread (kernels::ChooseThenStep: `choose` records the action
  /// where its caller wants it), also writing the observations the actions
  /// were chosen from (observations() before the step) into `acted_on`
  /// [N, obs_dim] in the observation launch. Two launches, as step().
  template <class Choose>
  void step_choosing(const ExecSpace& space, const Choose& choose, const obs_view& acted_on) {
    using Step = kernels::MarketStep<memory_space>;
    kernels::market_step(space, kernels::ChooseThenStep<Choose, Step>{choose, functor(action_view(), last_)});
    observations_after_step(space, last_, acted_on);
  }

  /// step_choosing() after `act`, which forms the actions `choose` reads.
  /// The market's step is two launches, not one per-env functor: `act`
  /// gets kernels::NoPerEnvStep (as CartPoleEnv::act_then_step_choosing).
  template <class Choose, class Act>
  void act_then_step_choosing(const ExecSpace& space, const Choose& choose, const obs_view& acted_on, const Act& act) {
    act(kernels::NoPerEnvStep{});
    step_choosing(space, choose, acted_on);
  }

  /// Starts env `env`'s episode at bar t0 (flat, step 0) and rebuilds the
  /// observations (for tests and rollouts from a chosen bar).
  void set_start(const ExecSpace& space, int env, int t0) {
    if (env < 0 || env >= num_envs_)
      throw LogicError("MarketEnv::set_start: env " + std::to_string(env) + " out of range");
    if (t0 < first_start_ || t0 >= first_start_ + static_cast<int>(num_starts_)) {
      throw UsageError("MarketEnv::set_start: start bar " + std::to_string(t0) + " outside the split's range [" +
                       std::to_string(first_start_) + ", " + std::to_string(first_start_ + num_starts_ - 1) + "]");
    }
    kernels::market_set_start(space, state_, env, t0);
    kernels::build_observations(space, market_.features(), config_.observation, state_.time, state_.position, obs_);
  }

  /// [N, obs_dim] the observation each env acts on next (post-reset).
  const obs_view& observations() const { return obs_; }
  const EnvStep<memory_space>& step_result() const { return last_; }
  Kokkos::View<const std::int32_t*, memory_space> episode_steps() const { return state_.episode_steps; }
  const MarketState<memory_space>& state() const { return state_; }
  const MarketFeatures<ExecSpace>& market() const { return market_; }

 private:
  void observations_after_step(const ExecSpace& space, const EnvStep<memory_space>& out, const obs_view& acted_on) {
    kernels::market_step_observations(space, market_.features(), config_.observation.set, config_.observation.window,
                                      obs_dim(), next_time_, next_position_, state_.time, state_.position,
                                      out.truncated, out.next_observations, obs_, acted_on);
  }

  kernels::MarketStep<memory_space> functor(const action_view& actions, const EnvStep<memory_space>& out) const {
    return {state_,
            market_.features().log_return,
            actions,
            out,
            next_time_,
            next_position_,
            config_.cost,
            config_.num_actions(),
            config_.min_position(),
            config_.episode_length,
            start_seed_,
            first_start_,
            num_starts_};
  }

  MarketFeatures<ExecSpace> market_;
  MarketSplit split_;
  int num_envs_;
  MarketEnvConfig config_;
  std::uint64_t start_seed_;
  int first_start_ = 0;
  std::uint32_t num_starts_ = 0;
  MarketState<memory_space> state_;
  Kokkos::View<std::int32_t*, memory_space> next_time_, next_position_;
  obs_view obs_;
  EnvStep<memory_space> last_;

 public:
  /// The env's device state in a trainer state file (env.market.*; the
  /// observations are VectorEnv's). `a` is a StateWriter or StateReader
  /// (which also runs check_state).
  template <class Archive>
  void visit_state(Archive& a, const ExecSpace& space) {
    a.tensor(space, "env.market.time", state_.time);
    a.tensor(space, "env.market.position", state_.position);
    a.tensor(space, "env.market.episode_steps", state_.episode_steps);
    a.tensor(space, "env.market.episodes", state_.episodes);
    if constexpr (!Archive::saving) check_state(a);
  }

  /// Checks a loaded state before it reaches a kernel (the kernels index
  /// the series with `time`): episode steps in [0, episode_length),
  /// positions in {-1, 0, 1} ({0, 1} long-only), and every env's time its episode's start bar
  /// (one the split draws from) plus its episode steps.
  template <class Reader>
  void check_state(const Reader& a) const {
    const int length = config_.episode_length;
    a.template require_each<std::int32_t>(
        "env.market.episode_steps", -1, [&](std::int32_t k) { return k >= 0 && k < length; },
        "must be in [0, episode_length = " + std::to_string(length) + ")");
    const int lowest = config_.min_position();
    a.template require_each<std::int32_t>(
        "env.market.position", -1, [lowest](std::int32_t p) { return p >= lowest && p <= 1; },
        lowest < 0 ? "must be -1, 0 or 1" : "must be 0 or 1 (positions = long_only)");
    const auto time = a.template values<std::int32_t>("env.market.time");
    const auto steps = a.template values<std::int32_t>("env.market.episode_steps");
    const std::int64_t first = first_start_, last = first_start_ + std::int64_t(num_starts_) - 1;
    for (std::int64_t i = 0; i < time.size(); ++i) {
      const std::int64_t start = std::int64_t(time[i]) - steps[i];
      if (start < first || start > last)
        a.fail_value("env.market.time", time.index(i), time[i],
                     "must be a start bar in [" + std::to_string(first) + ", " + std::to_string(last) +
                         "] of the split plus env.market.episode_steps (" + std::to_string(steps[i]) + ")");
    }
  }
};

}  // namespace foxrl
