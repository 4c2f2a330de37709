#include "study/walk_forward.hpp"

#include "config/resume_check.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "dist/communicator.hpp"
#include "io/atomic_file.hpp"
#include "io/output_dir.hpp"
#include "market/market_data.hpp"
#include "study/study_directory.hpp"
#include "study/study_lock.hpp"
#include "study/study_manifest.hpp"
#include "train/checkpoint_store.hpp"
#include "train/run_manifest.hpp"
#include "train/run_spec.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
#include <utility>

namespace foxrl {
namespace {

std::string fold_dir_name(int index) { return "fold_" + std::to_string(index); }

/// What a walk-forward writes into out_dir besides the fold directories.
constexpr const char* kReportFiles[] = {"walk_forward.json", "walk_forward_backtest.csv", "walk_forward_equity.svg"};

/// A fold's bars as a TrainConfig's keys: the timestamps of its first and
/// last train and test bars (full ISO times, so a key names one bar, not a
/// whole day).
TrainConfig fold_config(const TrainConfig& base, const MarketSetup& market, const WalkForwardFold& fold,
                        double bars_per_year) {
  const auto at = [&](int bar) { return format_timestamp(market.series.timestamp[static_cast<std::size_t>(bar)]); };
  TrainConfig c = base;
  c.out_dir = base.out_dir + "/" + fold_dir_name(fold.index);
  c.start_date = at(fold.train_begin);
  c.train_end = at(fold.train_end - 1);
  c.test_start = at(fold.test_begin);
  c.test_end = at(fold.test_end - 1);
  c.bars_per_year = bars_per_year;
  // A fold trains on its whole train period: no validation hold-out (and
  // so no best checkpoint); the fold's last weights are the ones tested.
  c.validation_fraction = 0;
  return c;
}

/// The fold's config read back through prepare_market must give the fold's
/// bars (the keys were written from them): a check of the plan itself.
void check_fold_setup(const TrainConfig& c, const WalkForwardFold& fold) {
  const MarketSetup m = prepare_market(c);
  const int shift = fold.train_begin;
  if (m.splits.train.begin != 0 || m.splits.train.end != fold.train_end - shift || m.splits.validation.size() != 0 ||
      m.splits.test.begin != fold.test_begin - shift || m.splits.test.end != fold.test_end - shift) {
    throw LogicError("walk-forward fold " + std::to_string(fold.index) + ": its config does not give its bars");
  }
}

void refuse_existing_report(const TrainConfig& config, const std::vector<WalkForwardFold>& folds) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string report = config.out_dir + "/walk_forward.json";
  if (fs::exists(report, ec)) {
    throw UsageError("out_dir '" + config.out_dir + "' already holds a walk-forward (" + report +
                     "); use --overwrite to replace it");
  }
  for (const auto& f : folds) {
    const std::string dir = config.out_dir + "/" + fold_dir_name(f.index);
    if (fs::is_directory(dir, ec) && !fs::is_empty(dir, ec)) {
      throw UsageError("out_dir '" + config.out_dir + "' already holds a walk-forward fold (" + dir +
                       "); use --overwrite to replace it");
    }
  }
  if (fs::exists(StudyManifest::path_in(config.out_dir), ec)) {
    throw UsageError("out_dir '" + config.out_dir + "' already holds a study (" +
                     StudyManifest::path_in(config.out_dir) + "): continue a walk-forward with --resume, " +
                     "replace it with --overwrite, or choose another out_dir");
  }
}

std::vector<StudyFoldDates> fold_dates(const WalkForwardPlan& plan) {
  std::vector<StudyFoldDates> dates;
  for (std::size_t k = 0; k < plan.folds.size(); ++k) {
    const TrainConfig& c = plan.fold_configs[k];
    dates.push_back({plan.folds[k].index, c.start_date, c.train_end, c.test_start, c.test_end});
  }
  return dates;
}

/// A resumed walk-forward's folds must be the recorded ones: the same data
/// and spec give the same dates.
void check_recorded_folds(const StudyManifest& manifest, const std::vector<StudyFoldDates>& now,
                          const std::string& out_dir) {
  const std::string where = StudyManifest::path_in(out_dir);
  if (manifest.folds.size() != now.size()) {
    throw UsageError("--resume: the walk-forward in '" + out_dir + "' has " + std::to_string(manifest.folds.size()) +
                     " folds (" + where + ", field 'folds'), its config and data now give " +
                     std::to_string(now.size()) + ": was the data changed?");
  }
  for (std::size_t k = 0; k < now.size(); ++k) {
    const StudyFoldDates& a = manifest.folds[k];
    const StudyFoldDates& b = now[k];
    const std::pair<const char*, std::pair<std::string, std::string>> keys[] = {
        {"start_date", {a.start_date, b.start_date}},
        {"train_end", {a.train_end, b.train_end}},
        {"test_start", {a.test_start, b.test_start}},
        {"test_end", {a.test_end, b.test_end}}};
    for (const auto& [key, values] : keys) {
      if (values.first == values.second && a.fold == b.fold) continue;
      throw UsageError("--resume: fold " + std::to_string(b.fold) + "'s " + key + " is " + values.second +
                       ", the walk-forward in '" + out_dir + "' (" + where + ", field 'folds') has " + values.first +
                       ": was the data changed?");
    }
  }
}

/// What a resumed walk-forward does with one fold.
enum class FoldAction { start, resume, complete };

struct FoldState {
  FoldAction action = FoldAction::start;
  std::int64_t checkpoint_epoch = 0;
  std::optional<EvaluationReport> evaluation;  ///< complete: read back from its files
};

/// The test evaluation of a finished fold, rebuilt from the positions in
/// its evaluation_backtest.csv on the fold's data; nothing unless the
/// rebuilt report writes that file back byte for byte (a file cut short,
/// damaged or of other data is not a finished evaluation).
std::optional<EvaluationReport> read_back_evaluation(const TrainConfig& c) {
  std::ifstream in(c.out_dir + "/evaluation_backtest.csv", std::ios::binary);
  if (!in) return std::nullopt;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    const MarketSetup market = prepare_market(c);
    const RunSpec spec = run_spec(c);
    const auto [first, length] = detail::evaluated_bars(market, market.splits.test, spec.market_env);
    std::istringstream rows(text);
    std::string line;
    std::getline(rows, line);  // the header
    std::vector<double> positions;
    while (std::getline(rows, line) && static_cast<int>(positions.size()) <= length) {
      const auto a = line.find(','), b = line.find(',', a + 1), e = line.find(',', b + 1);
      if (a == std::string::npos || b == std::string::npos || e == std::string::npos) return std::nullopt;
      positions.push_back(std::stod(line.substr(b + 1, e - b - 1)));
    }
    if (static_cast<int>(positions.size()) != length) return std::nullopt;
    EvaluationReport report = build_evaluation_report(market.series, first, positions, spec.market_env.cost,
                                                      market.annualisation.bars_per_year, c.seed + 1,
                                                      greedy_agent_name(c.algo), spec.market_env.positions);
    if (report.backtest_csv() != text) return std::nullopt;
    report.annualisation_basis = market.annualisation.basis;
    report.record = evaluation_record(market);
    return report;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

/// The state of a resumed walk-forward's fold of config `c`; UsageError
/// (naming the key) when its checkpoint is of another config.
FoldState fold_state(const TrainConfig& c) {
  FoldState state;
  const auto generations = CheckpointStore(c.out_dir).generations();
  if (generations.empty()) return state;
  const RunManifest saved = RunManifest::read_newest(c.out_dir);
  check_resume_compatible(saved.config, c, c.out_dir + "/checkpoints");
  state.action = FoldAction::resume;
  state.checkpoint_epoch = saved.epoch;
  const bool trained = saved.epoch >= c.epochs || solved_at(c.out_dir, c.target_return, saved.epoch);
  // evaluation.json is written last: newer than the checkpoint, the
  // evaluation finished.
  if (trained && written_after(c.out_dir, {"evaluation_backtest.csv", "evaluation.json"}, generations.front())) {
    state.evaluation = read_back_evaluation(c);
    if (state.evaluation) state.action = FoldAction::complete;
  }
  return state;
}

/// Passes a fold run's lines and epochs on to the walk-forward's observer.
struct Forward : TrainingObserver {
  explicit Forward(TrainingObserver& to) : to(to) {}
  void on_log(const std::string& line) override { to.on_log(line); }
  void on_epoch(const EpochRecord& record) override { to.on_epoch(record); }
  TrainingObserver& to;
};

}  // namespace

WalkForwardPlan plan_walk_forward(const TrainConfig& config, const WalkForwardSpec& spec, bool overwrite) {
  return plan_walk_forward(config, spec, overwrite ? WalkForwardStart::overwrite : WalkForwardStart::fresh);
}

WalkForwardPlan plan_walk_forward(const TrainConfig& config, const WalkForwardSpec& spec, WalkForwardStart start) {
  if (env_info(config.env).evaluation != EvaluationKind::backtest) {
    throw UsageError("--walk-forward: evaluates an env of time splits (market); the config's env is " + config.env);
  }
  const auto refuse_key = [](const char* key, const std::string& value) {
    if (!value.empty()) {
      throw UsageError("--walk-forward: sets the key '" + std::string(key) + "' of each fold; the config sets it (" +
                       quote_excerpt(value, 40) + "): remove it");
    }
  };
  refuse_key("train_end", config.train_end);
  refuse_key("test_start", config.test_start);
  refuse_key("test_end", config.test_end);
  WalkForwardPlan plan;
  plan.spec = spec;
  plan.config = config;
  plan.start = start;
  plan.market = prepare_market(config);
  const MarketSetup& market = plan.market;
  const std::vector<std::int64_t>& t = market.series.timestamp;
  const std::int64_t bar_seconds = market.annualisation.median_bar_seconds;
  // Durations count from start_date where it cut the data (a start_date
  // before the first bar would only add empty time to the first fold).
  const std::int64_t anchor = market.first_row > 0 ? parse_timestamp(config.start_date) : 0;
  const WalkForwardSpan span = walk_forward_span(t, bar_seconds, anchor, market.series.source);
  plan.folds = walk_forward_folds(t, span, spec);

  // Each fold must hold what its run needs: an episode after the
  // observation window in its train bars (as MarketEnv requires), and a
  // test period to evaluate.
  const RunSpec run = run_spec(config);
  const int lookback = run.market_env.observation.min_decision_bar();
  const int min_train = lookback + run.market_env.episode_length;
  for (const auto& f : plan.folds) {
    const std::string where = "--walk-forward " + spec.text() + ": fold " + std::to_string(f.index) + " (train " +
                              bar_range_text(t, f.train_begin, f.train_end, bar_seconds) + ", " +
                              std::to_string(f.train_bars()) + " bars; test " +
                              bar_range_text(t, f.test_begin, f.test_end, bar_seconds) + ", " +
                              std::to_string(f.test_bars()) + " bars)";
    if (f.train_bars() < min_train) {
      throw UsageError(where + ": its train period needs at least " + std::to_string(min_train) + " bars (window " +
                       std::to_string(lookback) + " + episode_length " + std::to_string(run.market_env.episode_length) +
                       "); lengthen train or shorten episode_length");
    }
    if (f.test_bars() < 2) {
      throw UsageError(where + ": its test period needs at least 2 bars; lengthen test");
    }
  }

  const double bars_per_year = config.bars_per_year > 0 ? config.bars_per_year : market.annualisation.bars_per_year;
  for (const auto& f : plan.folds) {
    plan.fold_configs.push_back(fold_config(config, market, f, bars_per_year));
    check_fold_setup(plan.fold_configs.back(), f);
  }
  if (start == WalkForwardStart::fresh) refuse_existing_report(config, plan.folds);

  WalkForwardContext& c = plan.context;
  c.spec = spec.text();
  c.data_origin = market.data_origin.empty() ? market.series.source : market.data_origin;
  c.data_sha256 = market.data_sha256;
  c.bar_seconds = bar_seconds;
  c.cost = run.market_env.cost;
  c.bars_per_year = bars_per_year;
  c.annualisation_basis = market.annualisation.basis;
  c.positions = run.market_env.positions;
  return plan;
}

WalkForwardResult run_walk_forward(const WalkForwardPlan& plan, TrainingObserver& observer) {
  const bool writer = dist::world()->rank() == 0;
  const auto say = [&](const std::string& line) {
    if (writer) observer.on_log(line);
  };
  const std::string& out_dir = plan.config.out_dir;
  const bool resume = plan.start == WalkForwardStart::resume;
  std::error_code ec;
  if (resume && !std::filesystem::is_directory(out_dir, ec)) {
    throw UsageError("--resume: out_dir '" + out_dir + "' is not a directory (no walk-forward to continue)");
  }
  if (writer && !resume) prepare_output_directory(out_dir, "out_dir");
  std::unique_ptr<StudyLock> lock;
  if (writer) {
    lock = std::make_unique<StudyLock>(out_dir);
    remove_stale_temporaries_in(out_dir);  // what killed writers left, resumed or not
  }
  const std::vector<StudyFoldDates> dates = fold_dates(plan);
  std::vector<FoldState> states(plan.folds.size());
  if (resume) {
    // Every fold looked at before any trains: a resume that cannot go
    // through changes nothing.
    const auto manifest = StudyManifest::read_if_present(out_dir);
    if (!manifest || manifest->kind != StudyManifest::Kind::walk_forward) {
      throw UsageError("--resume: out_dir '" + out_dir + "' holds no walk-forward to continue (no " +
                       StudyManifest::file + " of one)");
    }
    check_recorded_folds(*manifest, dates, out_dir);
    for (std::size_t k = 0; k < plan.folds.size(); ++k) states[k] = fold_state(plan.fold_configs[k]);
  }
  if (writer) {
    if (resume) {
      for (const auto& c : plan.fold_configs) tidy_member_directory(c.out_dir);
    } else if (plan.start == WalkForwardStart::overwrite) {
      // The earlier walk-forward's folds go before the new plan is
      // recorded: one killed in between must not find them under it.
      std::filesystem::remove(StudyManifest::path_in(out_dir), ec);
      for (const auto& c : plan.fold_configs) TrainingRun::clear_directory(c.out_dir);
    }
    // The report goes first: a walk-forward interrupted below must not
    // leave an old report beside new folds.
    for (const char* file : kReportFiles) std::filesystem::remove(out_dir + "/" + file, ec);
    StudyManifest record;
    record.kind = StudyManifest::Kind::walk_forward;
    record.config = plan.config;
    record.walk_forward = plan.spec.text();
    record.folds = dates;
    record.write(out_dir);
  }
  const auto& t = plan.market.series.timestamp;
  const std::int64_t bar_seconds = plan.context.bar_seconds;
  const int n = static_cast<int>(plan.folds.size());
  const MarketSetup& m = plan.market;
  say("walk-forward " + plan.spec.text() + ": " + std::to_string(n) + " folds over " + m.series.source + ": " +
      std::to_string(t.size()) + " bars " + bar_range_text(t, 0, static_cast<int>(t.size()), bar_seconds) +
      (m.first_row > 0 ? " from start_date (" + std::to_string(m.first_row) + " earlier bars dropped)" : "") +
      "; tested " + bar_range_text(t, plan.folds.front().test_begin, plan.folds.back().test_end, bar_seconds) +
      " out of sample");

  WalkForwardResult result;
  Forward forward(observer);
  for (int k = 0; k < n; ++k) {
    const WalkForwardFold& f = plan.folds[static_cast<std::size_t>(k)];
    say("walk-forward fold " + std::to_string(k + 1) + " of " + std::to_string(n) + ": train " +
        bar_range_text(t, f.train_begin, f.train_end, bar_seconds) + " (" + std::to_string(f.train_bars()) +
        " bars), test " + bar_range_text(t, f.test_begin, f.test_end, bar_seconds) + " (" +
        std::to_string(f.test_bars()) + " bars) -> " + plan.fold_configs[static_cast<std::size_t>(k)].out_dir);
    const TrainConfig& c = plan.fold_configs[static_cast<std::size_t>(k)];
    FoldState& state = states[static_cast<std::size_t>(k)];
    std::optional<EvaluationReport> evaluation;
    if (state.action == FoldAction::complete) {
      say("fold " + std::to_string(f.index) + ": complete (checkpoint of epoch " +
          std::to_string(state.checkpoint_epoch) + ", evaluated) in " + c.out_dir + ": not trained again");
      evaluation = std::move(state.evaluation);
    } else {
      if (state.action == FoldAction::resume) {
        say("fold " + std::to_string(f.index) + ": resuming from its checkpoint of epoch " +
            std::to_string(state.checkpoint_epoch));
      }
      // A resumed walk-forward starts a fold without a checkpoint afresh.
      const bool resume_fold = state.action == FoldAction::resume;
      TrainingRun run(c, resume_fold, !resume_fold && plan.start != WalkForwardStart::fresh);
      run.add_observer(forward);
      evaluation = run.run().evaluation;
    }
    if (!writer) continue;
    prune_member_generations(c.out_dir, c.keep_checkpoints);
    if (!evaluation) throw LogicError("walk-forward fold " + std::to_string(k) + ": no test evaluation");
    WalkForwardFoldResult r;
    r.fold = f;
    r.dir = fold_dir_name(f.index);
    r.train_first = t[static_cast<std::size_t>(f.train_begin)];
    r.train_last = t[static_cast<std::size_t>(f.train_end - 1)];
    r.test_first = t[static_cast<std::size_t>(f.test_begin)];
    r.test_last = t[static_cast<std::size_t>(f.test_end - 1)];
    r.evaluation = std::move(*evaluation);
    result.folds.push_back(std::move(r));
  }
  if (!writer) return result;

  result.stitched = stitch_walk_forward(result.folds, plan.context.bars_per_year);
  say(walk_forward_table(plan.context, result.folds, result.stitched));
  const std::string& dir = plan.config.out_dir;
  write_file_atomically(dir + "/" + kReportFiles[1], walk_forward_csv(result.stitched));
  write_file_atomically(dir + "/" + kReportFiles[2], walk_forward_svg(plan.context, result.stitched));
  // Last: walk_forward.json marks a finished walk-forward.
  write_file_atomically(dir + "/" + kReportFiles[0],
                        walk_forward_json(plan.context, result.folds, result.stitched) + "\n");
  say("walk-forward outputs in " + dir + ": fold_0/ .. fold_" + std::to_string(n - 1) +
      "/ (one training run each), walk_forward.json, walk_forward_backtest.csv, walk_forward_equity.svg");
  return result;
}

}  // namespace foxrl
