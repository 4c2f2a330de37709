#include "study/train_request.hpp"

#include "core/error.hpp"
#include "study/seed_study.hpp"
#include "study/walk_forward.hpp"
#include "train/checkpoint_store.hpp"

#include <filesystem>
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
  options.overwrite = request.start == RunStart::overwrite;
  // A requeued job continues the study if its directory exists, where a
  // resumed study starts the seeds that have no checkpoint yet.
  options.resume = request.start == RunStart::resume ||
                   (request.start == RunStart::auto_resume && std::filesystem::is_directory(config.out_dir));
  options.bootstrap = request.bootstrap;
  SeedStudy study({std::move(config), request.overrides, !request.config_file.empty()}, options);
  study.add_observer(observer);
  study.run();
}

}  // namespace

void run_train_request(const TrainRequest& request, TrainingObserver& observer) {
  TrainConfig config = request.config_file.empty() ? TrainConfig{} : TrainConfig::from_json_file(request.config_file);
  config.apply_overrides(request.overrides);
  if (request.walk_forward) {
    const WalkForwardSpec spec = parse_walk_forward_spec(*request.walk_forward);
    run_walk_forward(plan_walk_forward(config, spec, request.start == RunStart::overwrite), observer);
    return;
  }
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
