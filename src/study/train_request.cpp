#include "study/train_request.hpp"

#include "core/error.hpp"
#include "study/seed_study.hpp"
#include "study/study_manifest.hpp"
#include "study/walk_forward.hpp"
#include "train/checkpoint_store.hpp"

#include <filesystem>
#include <optional>
#include <utility>

namespace foxrl {
namespace {

void run_seed_study(const TrainRequest& request, TrainConfig config, TrainingObserver& observer) {
  for (const auto& kv : request.overrides) {
    if (kv.rfind("seed=", 0) == 0) {
      throw UsageError("--seeds " + request.seeds + " and --set " + kv +
                       " both set the seed: give the seeds with --seeds");
    }
  }
  SeedStudyOptions options;
  options.seeds = parse_seed_list(request.seeds);
  // A requeued job continues the study if its directory exists, where a
  // resumed study starts the seeds that have no checkpoint yet.
  // A requeued job continues the study once it has recorded its plan (or
  // an older study's seeds hold runs); before that, it starts it afresh.
  const bool started =
      StudyManifest::read_if_present(config.out_dir).has_value() || !seeds_in_study_directory(config.out_dir).empty();
  const bool auto_resume = request.start == RunStart::auto_resume;
  options.overwrite = request.start == RunStart::overwrite || (auto_resume && !started);
  options.resume = request.start == RunStart::resume || (auto_resume && started);
  options.bootstrap = request.bootstrap;
  SeedStudy study({std::move(config), request.overrides, !request.config_file.empty()}, options);
  study.add_observer(observer);
  study.run();
}

/// `foxrl train --walk-forward`: a fresh, overwriting or resumed
/// walk-forward (auto-resume: resumed once its plan is recorded).
void run_walk_forward_request(const TrainRequest& request, TrainConfig config, TrainingObserver& observer) {
  WalkForwardSpec spec = parse_walk_forward_spec(*request.walk_forward);
  const std::optional<StudyManifest> manifest = StudyManifest::read_if_present(config.out_dir);
  const bool resume = request.start == RunStart::resume || (request.start == RunStart::auto_resume && manifest);
  if (resume) {
    if (!manifest) {
      throw UsageError("--resume: out_dir '" + config.out_dir + "' holds no walk-forward to continue (no " +
                       StudyManifest::file + "): start it without --resume");
    }
    if (manifest->kind != StudyManifest::Kind::walk_forward) {
      throw UsageError("--walk-forward: out_dir '" + config.out_dir + "' holds a " + manifest->kind_name() + " (" +
                       StudyManifest::path_in(config.out_dir) + "), not a walk-forward");
    }
    if (parse_walk_forward_spec(manifest->walk_forward).text() != spec.text()) {
      throw UsageError("--walk-forward " + spec.text() + ": the walk-forward in '" + config.out_dir + "' (" +
                       StudyManifest::path_in(config.out_dir) + ", field 'walk_forward') is " + manifest->walk_forward +
                       "; a resume continues it: --walk-forward " + manifest->walk_forward);
    }
    config = resumed_study_config(*manifest, config, !request.config_file.empty(), request.overrides, config.out_dir);
  }
  const WalkForwardStart start = resume                             ? WalkForwardStart::resume
                                 : request.start == RunStart::fresh ? WalkForwardStart::fresh
                                                                    : WalkForwardStart::overwrite;
  run_walk_forward(plan_walk_forward(config, spec, start), observer);
}

}  // namespace

void run_train_request(const TrainRequest& request, TrainingObserver& observer) {
  TrainConfig config = request.config_file.empty() ? TrainConfig{} : TrainConfig::from_json_file(request.config_file);
  config.apply_overrides(request.overrides);
  const bool continues = request.start == RunStart::resume || request.start == RunStart::auto_resume;
  if (continues && !request.walk_forward && request.seeds.empty()) {
    // `foxrl train --resume` of a study's directory continues the study its
    // manifest records.
    if (const auto manifest = StudyManifest::read_if_present(config.out_dir)) {
      TrainRequest study = request;
      if (manifest->kind == StudyManifest::Kind::seeds) {
        study.seeds = seed_list_text(manifest->seeds);
      } else {
        study.walk_forward = manifest->walk_forward;
      }
      return run_train_request(study, observer);
    }
  }
  if (request.walk_forward) return run_walk_forward_request(request, std::move(config), observer);
  if (!request.seeds.empty()) return run_seed_study(request, std::move(config), observer);
  if (request.start == RunStart::resume && CheckpointStore(config.out_dir).generations().empty()) {
    if (const auto seeds = seeds_in_study_directory(config.out_dir); !seeds.empty()) {
      throw UsageError("--resume: out_dir '" + config.out_dir + "' holds a seed study (seed_" +
                       std::to_string(seeds.front()) + "/, ...): continue it with --seeds, e.g. --seeds " +
                       seed_list_text(seeds));
    }
  }
  RunStart start = request.start;
  config = TrainingRun::config_for(request.config_file, request.overrides, start);
  TrainingRun run(config, start);
  run.add_observer(observer);
  run.run();
}

}  // namespace foxrl
