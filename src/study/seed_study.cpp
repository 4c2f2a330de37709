#include "study/seed_study.hpp"

#include "config/resume_check.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "dist/communicator.hpp"
#include "envs/env_registry.hpp"
#include "io/atomic_file.hpp"
#include "io/output_dir.hpp"
#include "io/strict_json.hpp"
#include "study/study_directory.hpp"
#include "study/study_lock.hpp"
#include "study/study_manifest.hpp"
#include "train/checkpoint_store.hpp"
#include "train/run_manifest.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

namespace foxrl {
namespace {

namespace fs = std::filesystem;

/// Files whose presence means a directory holds a run (TrainingRun's
/// markers, with checkpoints/).
const char* const kRunMarkers[] = {
    "checkpoints",   "checkpoint.json", "checkpoint.safetensors", "trainer_state.safetensors",
    "metrics.jsonl", "train.log"};

std::string run_marker_in(const std::string& dir) {
  std::error_code ec;
  for (const char* name : kRunMarkers) {
    const fs::path p = fs::path(dir) / name;
    if (fs::exists(p, ec)) return p.string();
  }
  return std::string();
}

std::uint64_t parse_seed(const std::string& text, const std::string& list) {
  const bool digits = !text.empty() && text.size() <= 20 &&
                      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  std::uint64_t value = 0;
  bool fits = digits;
  for (char c : text) {
    if (!fits) break;
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (value > (UINT64_MAX - d) / 10) fits = false;
    value = value * 10 + d;
  }
  // The bound of the config key `seed`, which each seed's run stores: a
  // larger seed would train and then be refused by its own checkpoint.
  if (!fits || value > kMaxSeed) {
    throw UsageError("--seeds: " + quote_excerpt(text) + " in " + quote_excerpt(list) +
                     " is not a seed (an integer from 0 to " + std::to_string(kMaxSeed) + ")");
  }
  return value;
}

/// What a study does with one seed.
enum class SeedAction { start, resume, complete };

struct SeedPlan {
  std::uint64_t seed = 0;
  std::string dir;
  TrainConfig config;
  SeedAction action = SeedAction::start;
  std::int64_t checkpoint_epoch = 0;
};

/// The seed's market evaluation is finished and readable: evaluation.json
/// (written last) and the backtests are newer than the newest checkpoint
/// and read back as the study report reads them. A seed killed while it
/// wrote them, or with a damaged one, is evaluated again.
bool evaluation_complete(std::uint64_t seed, const std::string& dir, const CheckpointGeneration& newest) {
  if (!written_after(dir, {"evaluation_backtest.csv", "evaluation.json"}, newest)) return false;
  try {
    (void)read_seed_market_result(seed, dir, StudyWeights::last);
    if (has_best_weights(dir)) {
      if (!written_after(dir, {"evaluation_best_backtest.csv"}, newest)) return false;
      (void)read_seed_market_result(seed, dir, StudyWeights::best);
    }
  } catch (const Error&) {  // UsageError too: a damaged file
    return false;
  }
  return true;
}

/// The config of a resumed study that predates study_manifest.json (and
/// has no --config): a checkpointed seed's saved config, the overrides on
/// top. UsageError when no seed has a checkpoint: the config is unknown, and
/// the defaults would train another experiment.
TrainConfig config_without_manifest(const std::string& out_dir, const std::vector<std::uint64_t>& seeds,
                                    const std::vector<std::string>& overrides) {
  std::vector<std::uint64_t> candidates = seeds;
  for (const auto seed : seeds_in_study_directory(out_dir)) candidates.push_back(seed);
  for (const auto seed : candidates) {
    const std::string dir = SeedStudy::seed_dir(out_dir, seed);
    if (CheckpointStore(dir).generations().empty()) continue;
    TrainConfig config = RunManifest::read_newest(dir).config;
    config.apply_overrides(overrides);
    config.out_dir = out_dir;
    return config;
  }
  throw UsageError("--resume: out_dir '" + out_dir + "' holds no seed study to continue (no " + StudyManifest::file +
                   " and no seed with a checkpoint): start the study without --resume, or give its --config");
}

/// The seeds of a resume must be the study's, in its order; more may follow.
void check_resumed_seeds(const StudyManifest& manifest, const std::vector<std::uint64_t>& seeds,
                         const std::string& out_dir) {
  const bool extends =
      seeds.size() >= manifest.seeds.size() && std::equal(manifest.seeds.begin(), manifest.seeds.end(), seeds.begin());
  if (extends) return;
  throw UsageError("--seeds " + seed_list_text(seeds) + ": the seed study in '" + out_dir + "' (" +
                   StudyManifest::path_in(out_dir) + ", field 'seeds') is of seeds " + seed_list_text(manifest.seeds) +
                   "; a resume continues them (more may follow): --seeds " + seed_list_text(manifest.seeds));
}

}  // namespace

std::string seed_list_text(const std::vector<std::uint64_t>& seeds) {
  std::string text;
  for (std::size_t i = 0; i < seeds.size(); ++i) text += (i ? "," : "") + std::to_string(seeds[i]);
  return text;
}

std::vector<std::uint64_t> seeds_in_study_directory(const std::string& out_dir) {
  std::vector<std::uint64_t> seeds;
  std::error_code ec;
  for (fs::directory_iterator it(out_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("seed_", 0) != 0 || name.size() == 5 || !it->is_directory(ec)) continue;
    const std::string digits = name.substr(5);
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    if (digits.size() > 19 || run_marker_in(it->path().string()).empty()) continue;
    seeds.push_back(std::stoull(digits));
  }
  std::sort(seeds.begin(), seeds.end());
  return seeds;
}

std::vector<std::uint64_t> parse_seed_list(const std::string& text) {
  std::vector<std::uint64_t> seeds;
  std::set<std::uint64_t> seen;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto dash = item.find('-');
    std::uint64_t first = 0, last = 0;
    if (dash == std::string::npos) {
      first = last = parse_seed(item, text);
    } else {
      first = parse_seed(item.substr(0, dash), text);
      last = parse_seed(item.substr(dash + 1), text);
      if (last < first) throw UsageError("--seeds: the range " + quote_excerpt(item) + " runs backwards");
      if (last - first >= 10000) throw UsageError("--seeds: the range " + quote_excerpt(item) + " is over 10000 seeds");
    }
    for (std::uint64_t s = first;; ++s) {
      if (!seen.insert(s).second)
        throw UsageError("--seeds: seed " + std::to_string(s) + " is given twice in " + quote_excerpt(text));
      seeds.push_back(s);
      if (s == last) break;
    }
  }
  if (seeds.empty() || text.empty() || text.back() == ',') {
    throw UsageError("--seeds: " + quote_excerpt(text) + " is not a list of seeds (e.g. 1,2,3 or 1-5)");
  }
  return seeds;
}

SeedStudy::SeedStudy(SeedStudyConfig config, SeedStudyOptions options)
    : config_(std::move(config)), options_(std::move(options)) {
  if (options_.resume && options_.overwrite) {
    throw UsageError("a seed study either resumes its directory or overwrites it, not both");
  }
  if (options_.seeds.empty()) throw UsageError("--seeds: no seeds");
  const double block = options_.bootstrap.block_length;
  if (!(block == 0 || (block >= 1 && std::isfinite(block)))) {
    throw UsageError("--block-length: " + std::to_string(block) +
                     " is not a mean block length (0 for the default, or at least 1 bar)");
  }
  if (options_.bootstrap.resamples < 100) {
    throw UsageError("--bootstrap-resamples: " + std::to_string(options_.bootstrap.resamples) +
                     " is below 100 (the 95% intervals need the tails of the resamples)");
  }
}

void SeedStudy::add_observer(TrainingObserver& observer) { observers_.push_back(&observer); }

std::string SeedStudy::seed_dir(const std::string& out_dir, std::uint64_t seed) {
  return out_dir + "/seed_" + std::to_string(seed);
}

void SeedStudy::say(const std::string& line) {
  if (dist::world()->rank() != 0) return;
  for (auto* o : observers_) o->on_log(line);
}

StudyReport SeedStudy::run() {
  if (started_) throw LogicError("SeedStudy::run(): a study runs once");
  started_ = true;
  const std::string out_dir = config_.base.out_dir;
  const bool writer = dist::world()->rank() == 0;
  std::error_code ec;
  if (options_.resume) {
    if (!fs::is_directory(out_dir, ec)) {
      throw UsageError("--resume: out_dir '" + out_dir + "' is not a directory (no seed study to continue)");
    }
  } else if (writer) {
    prepare_output_directory(out_dir, "out_dir");
  }
  // One process per study: a second one (an --overwrite, a --resume) is
  // refused before it looks at anything.
  std::unique_ptr<StudyLock> lock;
  if (writer) {
    lock = std::make_unique<StudyLock>(out_dir);
    // What killed writers left in out_dir (a manifest's temporary, a probe),
    // whether the study resumes or starts again.
    remove_stale_temporaries_in(out_dir);
  }
  // The seeds' directories sit beside each other: a run in out_dir itself
  // would be mistaken for the study's and the study's for it.
  if (const std::string marker = run_marker_in(out_dir); !marker.empty()) {
    throw UsageError("out_dir '" + out_dir + "' holds a single run (" + marker +
                     "), not a seed study: choose another out_dir for the study");
  }
  const std::string study_json = out_dir + "/study.json";
  const std::size_t n = options_.seeds.size();
  const std::optional<StudyManifest> manifest = StudyManifest::read_if_present(out_dir);
  if (manifest && manifest->kind != StudyManifest::Kind::seeds) {
    throw UsageError("out_dir '" + out_dir + "' holds a " + manifest->kind_name() + " (" +
                     StudyManifest::path_in(out_dir) + "), not a seed study: choose another out_dir");
  }

  // The study's config: a resume takes the one its manifest recorded (a
  // --config must agree with it), never the defaults.
  TrainConfig study_config = config_.base;
  if (options_.resume && manifest) {
    study_config = resumed_study_config(*manifest, config_.base, config_.base_from_file, config_.overrides, out_dir);
    check_resumed_seeds(*manifest, options_.seeds, out_dir);
  } else if (options_.resume && !config_.base_from_file) {
    study_config = config_without_manifest(out_dir, options_.seeds, config_.overrides);
  } else if (manifest && !options_.overwrite) {
    throw UsageError("out_dir '" + out_dir + "' already holds a seed study (" + StudyManifest::path_in(out_dir) +
                     "): continue it with `foxrl train --seeds " + seed_list_text(manifest->seeds) +
                     " --resume --set out_dir=" + out_dir +
                     "`, replace it with --overwrite, or choose another out_dir");
  }

  // Every seed's plan (and every resumed config's check) before any seed
  // trains: a study that cannot go through stops before it changes files.
  std::vector<SeedPlan> plans;
  for (const auto seed : options_.seeds) {
    SeedPlan plan;
    plan.seed = seed;
    plan.dir = seed_dir(out_dir, seed);
    plan.config = study_config;
    const CheckpointStore store(plan.dir);
    const auto generations = store.generations();
    if (!options_.resume) {
      const std::string marker = run_marker_in(plan.dir);
      if (!marker.empty() && !options_.overwrite) {
        throw UsageError("out_dir '" + out_dir + "' already holds a seed study (" + marker +
                         "): continue it with `foxrl train --seeds " + seed_list_text(options_.seeds) +
                         " --resume --set out_dir=" + out_dir +
                         "`, replace it with --overwrite, or choose another out_dir");
      }
    } else if (!generations.empty()) {
      const RunManifest saved = RunManifest::read_newest(plan.dir);
      if (!manifest && !config_.base_from_file) {
        plan.config = saved.config;
        plan.config.apply_overrides(config_.overrides);
      }
      plan.config.seed = seed;
      plan.config.out_dir = plan.dir;
      check_resume_compatible(saved.config, plan.config, plan.dir + "/checkpoints");
      plan.checkpoint_epoch = saved.epoch;
      const bool trained =
          saved.epoch >= plan.config.epochs || solved_at(plan.dir, plan.config.target_return, saved.epoch);
      const bool evaluated = env_info(plan.config.env).evaluation != EvaluationKind::backtest ||
                             evaluation_complete(seed, plan.dir, generations.front());
      plan.action = trained && evaluated ? SeedAction::complete : SeedAction::resume;
    }
    plan.config.seed = seed;
    plan.config.out_dir = plan.dir;
    plan.config.validate();
    plans.push_back(plan);
  }
  if (!options_.resume && !options_.overwrite && fs::exists(study_json, ec)) {
    throw UsageError("out_dir '" + out_dir + "' already holds a seed study (" + study_json +
                     "): continue it with --resume, replace it with --overwrite, or choose another out_dir");
  }
  std::string env = plans.front().config.env;
  for (const auto& plan : plans) {
    if (plan.config.env != env) {
      throw UsageError("seed " + std::to_string(plan.seed) + " in '" + plan.dir + "' is a " + plan.config.env +
                       " run, seed " + std::to_string(plans.front().seed) + " a " + env +
                       " run: a study compares one kind");
    }
  }
  if (writer) {
    if (options_.resume) {
      // What killed writers left in the seeds' runs: temporaries, staging generations.
      for (const auto& plan : plans) tidy_member_directory(plan.dir);
    } else if (options_.overwrite) {
      // The earlier study goes before the new plan is recorded: a study
      // killed in between must not find the old seeds' runs under the new
      // plan. study.json first: it describes the old runs.
      fs::remove(study_json, ec);
      fs::remove(StudyManifest::path_in(out_dir), ec);
      for (const auto& plan : plans) TrainingRun::clear_directory(plan.dir);
    }
    // The plan, before the first seed starts (a resume records a grown
    // `epochs` or appended seeds).
    StudyManifest record;
    record.kind = StudyManifest::Kind::seeds;
    record.config = study_config;
    record.config.out_dir = out_dir;
    record.seeds = options_.seeds;
    record.write(out_dir);
  }

  say("seed study: " + std::to_string(n) + " seeds (" + seed_list_text(options_.seeds) + ") of " + env +
      ", one after another; each seed's run in " + out_dir +
      "/seed_<N>/ (a complete run directory: `foxrl train --resume`, `eval` and `infer` take it on its own); the "
      "study's summary in " +
      study_json);
  std::vector<std::string> dirs;
  for (std::size_t k = 0; k < n; ++k) {
    const SeedPlan& plan = plans[k];
    dirs.push_back(plan.dir);
    const std::string head =
        "seed " + std::to_string(plan.seed) + " (" + std::to_string(k + 1) + " of " + std::to_string(n) + ")";
    if (plan.action == SeedAction::complete) {
      say("=== " + head + ": complete (checkpoint of epoch " + std::to_string(plan.checkpoint_epoch) + " of " +
          std::to_string(plan.config.epochs) + ", evaluated) in " + plan.dir + ": not trained again");
      if (writer) prune_member_generations(plan.dir, plan.config.keep_checkpoints);
      continue;
    }
    say("=== " + head + ": " +
        (plan.action == SeedAction::resume
             ? "resuming from its checkpoint of epoch " + std::to_string(plan.checkpoint_epoch)
             : std::string("training")) +
        " in " + plan.dir);
    // A resumed study starts a seed without a checkpoint afresh: the logs
    // of an attempt that stopped before its first checkpoint are replaced.
    const bool resume = plan.action == SeedAction::resume;
    const bool overwrite = !resume && (options_.overwrite || options_.resume);
    {
      TrainingRun run(plan.config, resume, overwrite);
      for (auto* o : observers_) run.add_observer(*o);
      run.run();
    }
    if (writer) prune_member_generations(plan.dir, plan.config.keep_checkpoints);
  }
  if (!writer) return StudyReport{};

  StudyReport report = build_study_report(env, out_dir, options_.seeds, dirs, options_.bootstrap);
  std::istringstream table(report.table());
  for (std::string line; std::getline(table, line);) say(line);
  write_file_atomically(study_json, report.json() + "\n");
  say("study: wrote " + study_json + " (bootstrap seed " + std::to_string(options_.bootstrap.seed) + ", " +
      std::to_string(options_.bootstrap.resamples) + " resamples)");
  return report;
}

}  // namespace foxrl
