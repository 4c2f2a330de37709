#include "config/train_config.hpp"

#include "core/error.hpp"
#include "core/strings.hpp"
#include "io/strict_json.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <variant>

namespace foxrl {
namespace {

using Json = nlohmann::json;

using Member =
    std::variant<std::int64_t TrainConfig::*, std::uint64_t TrainConfig::*, double TrainConfig::*, bool TrainConfig::*,
                 std::string TrainConfig::*, std::vector<std::int64_t> TrainConfig::*, EnvKind TrainConfig::*>;

/// One key of the config: where it lives, its allowed range (numbers) or
/// values (strings), and what it means.
struct Field {
  const char* key;
  Member member;
  double min;
  double max;
  std::vector<std::string> choices;
  const char* help;
  /// Left out of to_json() while at its default: keys added after runs
  /// were saved keep those runs' config hash (checkpoint metadata), and an
  /// old run resumed or evaluated reads them as their defaults.
  bool omit_at_default = false;
};

constexpr double kInf = std::numeric_limits<double>::infinity();

const std::vector<Field>& fields() {
  using C = TrainConfig;
  static const std::vector<Field> table = {
      {"env", &C::env, 0, 0, {"cartpole", "market"}, "environment"},
      {"data", &C::data, 0, 0, {}, "market OHLCV CSV (empty: built-in synthetic market)"},
      {"synthetic", &C::synthetic, 0, 0, {"regime", "benchmark"}, "built-in market generator (no data file)"},
      {"synthetic_bars", &C::synthetic_bars, 1000, 1e8, {}, "bars of the built-in market"},
      {"features", &C::features, 0, 0, {"returns", "ohlcv"}, "market observation features"},
      {"num_envs", &C::num_envs, 1, 1 << 24, {}, "environments stepped in parallel"},
      {"episode_length", &C::episode_length, 1, 1e9, {}, "market episode length in bars"},
      {"cost_bps", &C::cost_bps, 0, 1e4, {}, "market cost per unit of position change (bp)"},
      {"window", &C::window, 1, 4096, {}, "market log returns in the observation"},
      {"train_end", &C::train_end, 0, 0, {}, "last timestamp of the training split (ISO date)"},
      {"test_start", &C::test_start, 0, 0, {}, "first timestamp of the test split (ISO date)"},
      {"skip_bad_rows", &C::skip_bad_rows, 0, 1, {}, "skip and count invalid CSV rows"},
      {"allow_implausible_bars",
       &C::allow_implausible_bars,
       0,
       1,
       {},
       "accept CSV bars with high/low or close/previous close beyond 10x"},
      {"start_date",
       &C::start_date,
       0,
       0,
       {},
       "first timestamp of the data used (ISO date; empty: the first bar)",
       true},
      {"bars_per_year",
       &C::bars_per_year,
       0,
       1e8,
       {},
       "Sharpe annualisation in bars per year (0: measured from the data's timestamps)",
       true},
      {"hidden", &C::hidden, 1, 1 << 16, {}, "hidden layer sizes of the MLP trunk"},
      {"lr", &C::lr, 0, 1, {}, "Adam learning rate"},
      {"adam_eps", &C::adam_eps, 0, 1, {}, "Adam epsilon"},
      {"weight_decay", &C::weight_decay, 0, 1, {}, "decoupled weight decay"},
      {"max_grad_norm", &C::max_grad_norm, 0, kInf, {}, "global gradient-norm clip (0: off)"},
      {"loss", &C::loss, 0, 0, {"huber", "mse"}, "TD loss"},
      {"gamma", &C::gamma, 0, 1, {}, "discount factor"},
      {"n_step", &C::n_step, 1, 64, {}, "n-step return length"},
      {"buffer_capacity", &C::buffer_capacity, 1, 1LL << 30, {}, "replay capacity (transitions)"},
      {"batch_size", &C::batch_size, 1, 1 << 16, {}, "minibatch size"},  // the replay buffer's limit
      {"learning_starts", &C::learning_starts, 0, 1e15, {}, "env steps before the first update"},
      {"updates_per_iteration", &C::updates_per_iteration, 0, 1024, {}, "gradient steps per round"},
      {"train_every", &C::train_every, 1, 1e9, {}, "iterations between update rounds"},
      {"target_update_every", &C::target_update_every, 1, 2147483647, {}, "gradient steps between target copies"},
      {"polyak_tau", &C::polyak_tau, 0, 1, {}, "soft target update rate (0: hard copies)"},
      {"eps_start", &C::eps_start, 0, 1, {}, "initial exploration rate"},
      {"eps_end", &C::eps_end, 0, 1, {}, "final exploration rate"},
      {"eps_decay_env_steps", &C::eps_decay_env_steps, 1, 1e15, {}, "env steps of the linear decay"},
      {"per_alpha", &C::per_alpha, 0, 1, {}, "priority exponent (0: uniform replay)"},
      {"per_beta_start", &C::per_beta_start, 0, 1, {}, "initial importance-weight exponent"},
      {"per_beta_anneal_updates", &C::per_beta_anneal_updates, 1, 1e15, {}, "updates until beta = 1"},
      {"guard_spike_factor", &C::guard_spike_factor, 1, kInf, {}, "loss spike factor over the running median"},
      {"guard_max_bad", &C::guard_max_bad, 1, 1e6, {}, "consecutive bad updates before a restore"},
      {"guard_lr_decay", &C::guard_lr_decay, 0, 1, {}, "learning-rate factor after a restore"},
      {"epochs", &C::epochs, 1, 1e9, {}, "epochs"},
      {"iterations_per_epoch", &C::iterations_per_epoch, 1, 1e12, {}, "collector steps per epoch"},
      {"seed", &C::seed, 0, 1.8e19, {}, "root random seed"},
      {"out_dir", &C::out_dir, 0, 0, {}, "directory for logs, metrics, checkpoints, charts"},
      {"checkpoint_every", &C::checkpoint_every, 1, 1e9, {}, "epochs between checkpoints"},
      {"keep_checkpoints",
       &C::keep_checkpoints,
       1,
       1e6,
       {},
       "checkpoint generations kept (a resume falls back to an older one if the newest is damaged)"},
      {"target_return", &C::target_return, 0, kInf, {}, "stop when the last-100 mean return reaches it (0: off)"},
  };
  return table;
}

const Field* find_field(const std::string& key) {
  for (const auto& f : fields()) {
    if (key == f.key) return &f;
  }
  return nullptr;
}

[[noreturn]] void reject(const std::string& where, const std::string& key, const std::string& why) {
  throw UsageError(where + ": key " + quote_excerpt(key, 64) + ": " + why);
}

/// Whole numbers in full (a range like [1, 2147483647] must not read as
/// [1, 2.14748e+09]), others as the stream prints them.
std::string number_text(double x) {
  std::ostringstream s;
  if (std::isfinite(x) && x == std::floor(x) && x >= 0 && x < 18446744073709551616.0) {
    s << static_cast<unsigned long long>(x);  // the seed's bound 1.8e19 too
  } else if (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 1e18) {
    s << static_cast<long long>(x);
  } else {
    s << x;
  }
  return s.str();
}

/// A field's range as --help-config prints it and messages quote it: "[1,
/// 65536]", or "[0, inf)" without an upper bound (infinity itself is refused).
std::string range_text(const Field& f) {
  return "[" + number_text(f.min) + ", " + (f.max == kInf ? std::string("inf)") : number_text(f.max) + "]");
}

void check_range(const std::string& where, const Field& f, double value) {
  if (!std::isfinite(value)) reject(where, f.key, "value " + number_text(value) + " is not finite");
  if (value < f.min || value > f.max) {
    std::ostringstream msg;
    msg << "value " << number_text(value) << " is out of range " << range_text(f);
    reject(where, f.key, msg.str());
  }
}

/// Whether the JSON integer `v` lies in [lo, hi], compared exactly: a double
/// holds integers only up to 2^53, so 18000000000000000500 would pass a
/// bound of 1.8e19 as a double. The table's integer bounds are whole
/// numbers in [0, 2^64).
bool integer_in_range(const Json& v, double lo, double hi) {
  if (v.is_number_integer() && !v.is_number_unsigned()) {
    const std::int64_t x = v.get<std::int64_t>();
    if (x < 0) return lo <= static_cast<double>(x) && static_cast<double>(x) <= hi;
  }
  const std::uint64_t u = v.get<std::uint64_t>();
  const bool above_lo = lo <= 0 || u >= static_cast<std::uint64_t>(lo);
  const bool below_hi = hi >= 18446744073709551615.0 || u <= static_cast<std::uint64_t>(hi);
  return above_lo && below_hi;
}

/// Checks an integer value against the field's range before it is narrowed
/// to the member's type; the message prints the value as given.
void check_integer_range(const std::string& where, const Field& f, const Json& v) {
  if (!integer_in_range(v, f.min, f.max)) {
    reject(where, f.key, "value " + v.dump() + " is out of range " + range_text(f));
  }
}

/// A JSON value quoted in a message (at most ~200 characters of it).
std::string excerpt(const Json& value) { return quote_excerpt(value.dump()); }

void assign(TrainConfig& config, const Field& f, const Json& value, const std::string& where) {
  std::visit(
      [&](auto member) {
        using T = std::decay_t<decltype(config.*member)>;
        if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, EnvKind>) {
          if (!value.is_string()) reject(where, f.key, "expected a string, got " + excerpt(value));
          const auto s = value.get<std::string>();
          if (!f.choices.empty()) {
            bool ok = false;
            for (const auto& c : f.choices) ok = ok || c == s;
            if (!ok) reject(where, f.key, quote_excerpt(s) + " is not one of " + Json(f.choices).dump());
          }
          if constexpr (std::is_same_v<T, EnvKind>) {
            config.*member = parse_env_kind(s);  // the one place the env's name is read
          } else {
            config.*member = s;
          }
        } else if constexpr (std::is_same_v<T, bool>) {
          if (!value.is_boolean()) reject(where, f.key, "expected true or false, got " + excerpt(value));
          config.*member = value.get<bool>();
        } else if constexpr (std::is_same_v<T, double>) {
          if (!value.is_number()) reject(where, f.key, "expected a number, got " + excerpt(value));
          check_range(where, f, value.get<double>());
          config.*member = value.get<double>();
        } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
          if (!value.is_array() || value.empty()) {
            reject(where, f.key, "expected a non-empty list of integers, got " + excerpt(value));
          }
          std::vector<std::int64_t> out;
          for (const auto& v : value) {
            if (!v.is_number_integer()) reject(where, f.key, "expected integers, got " + excerpt(v));
            check_integer_range(where, f, v);
            out.push_back(v.get<std::int64_t>());
          }
          config.*member = out;
        } else {
          if (!value.is_number_integer() || (std::is_unsigned_v<T> && value.get<double>() < 0)) {
            reject(where, f.key,
                   "expected a" + std::string(std::is_unsigned_v<T> ? " non-negative" : "n") + " integer, got " +
                       excerpt(value));
          }
          check_integer_range(where, f, value);
          config.*member = value.get<T>();
        }
      },
      f.member);
}

Json value_of(const TrainConfig& config, const Field& f) {
  return std::visit(
      [&](auto member) {
        if constexpr (std::is_same_v<std::decay_t<decltype(config.*member)>, EnvKind>) {
          return Json(env_kind_name(config.*member));
        } else {
          return Json(config.*member);
        }
      },
      f.member);
}

/// Parses a command-line value as the field's type: numbers and booleans as
/// JSON, lists as "a,b,c" (each entry JSON) or a JSON array, strings as they
/// are. Syntax errors name "--set <key>" and the column.
Json parse_override_value(const Field& f, const std::string& text) {
  const bool is_string = std::holds_alternative<std::string TrainConfig::*>(f.member) ||
                         std::holds_alternative<EnvKind TrainConfig::*>(f.member);
  if (is_string) return Json(text);
  const std::string source = std::string("--set ") + f.key;
  if (std::holds_alternative<std::vector<std::int64_t> TrainConfig::*>(f.member) &&
      (text.empty() || text.front() != '[')) {
    Json list = Json::array();
    std::size_t start = 0, entry = 1;
    for (;;) {
      const std::size_t comma = text.find(',', start);
      const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      list.push_back(parse_strict_json(item, source + " entry " + std::to_string(entry++)));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return list;
  }
  return parse_strict_json(text, source);
}

}  // namespace

TrainConfig TrainConfig::from_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": cannot open the config file");
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) throw UsageError(path + ": cannot read the config file");
  return from_json_text(text.str(), path);
}

TrainConfig TrainConfig::from_json_text(const std::string& text, const std::string& where) {
  const Json doc = parse_strict_json(text, where);
  if (!doc.is_object()) throw UsageError(where + ": expected a JSON object of keys, got " + excerpt(doc));
  TrainConfig config;
  for (const auto& [key, value] : doc.items()) {
    const Field* f = find_field(key);
    if (f == nullptr) reject(where, key, "unknown key (see `foxrl train --help-config`)");
    assign(config, *f, value, where);
  }
  config.validate();
  return config;
}

void TrainConfig::apply_overrides(const std::vector<std::string>& key_values) {
  for (const auto& kv : key_values) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw UsageError("--set " + quote_excerpt(kv) + ": expected key=value");
    }
    const std::string key = kv.substr(0, eq);
    const Field* f = find_field(key);
    if (f == nullptr) reject("--set", key, "unknown key (see `foxrl train --help-config`)");
    const Json value = parse_override_value(*f, kv.substr(eq + 1));
    assign(*this, *f, value, "--set");
  }
  validate();
}

void TrainConfig::validate() const {
  if (batch_size > buffer_capacity) {
    reject("config", "batch_size", "must not exceed buffer_capacity (" + std::to_string(buffer_capacity) + ")");
  }
  if (eps_end > eps_start) reject("config", "eps_end", "must not exceed eps_start");
  if (env == EnvKind::market && episode_length < n_step) {
    reject("config", "episode_length", "must be at least n_step");
  }
  if (buffer_capacity < num_envs * (n_step + 1)) {
    reject("config", "buffer_capacity", "must hold at least num_envs x (n_step + 1) transitions");
  }
}

std::string TrainConfig::to_json() const {
  Json out = Json::object();
  const TrainConfig defaults;
  for (const auto& f : fields()) {
    const Json value = value_of(*this, f);
    if (f.omit_at_default && value == value_of(defaults, f)) continue;
    out[f.key] = value;
  }
  return out.dump(2);
}

std::string TrainConfig::describe() {
  const TrainConfig defaults;
  std::ostringstream out;
  for (const auto& f : fields()) {
    out << "  " << f.key << " = " << value_of(defaults, f).dump();
    if (!f.choices.empty()) {
      out << "  (one of " << Json(f.choices).dump() << ")";
    } else if (f.max > f.min) {
      out << "  " << range_text(f);
    }
    out << "\n      " << f.help << "\n";
  }
  return out.str();
}

}  // namespace foxrl
