#pragma once
// RunLoop: the one epoch loop of every trainer. `foxrl train` (online DQN,
// TrainingRun) and `foxrl train-offline` (IQL, CQL, BC; OfflineTrainingRun)
// run through it; what differs between them is the Job, the run class
// itself, that the loop asks at fixed points. The loop owns
// what every run has:
// - the start: fresh (refusing a directory that holds a run), overwrite,
//   resume, or auto-resume (resume when out_dir has a checkpoint, else start
//   over: the one mode for a job script that is requeued);
// - resume: the newest checkpoint generation that loads, falling back to
//   older ones (set aside as damaged, with a warning), nothing on disk
//   changed before one has loaded, the logs cut back to its lengths;
// - the run directory's lock, train.log (lines said before it opens are
//   kept and written first), metrics.jsonl, config.json;
// - the epochs, the stop criterion, the checkpoint cadence (every
//   `checkpoint_every` epochs, after the last one and when stopped) and the
//   data-parallel protocol of a checkpoint (rank 0 publishes; ranks that
//   write a part of it add theirs first);
// - the final outputs the Job writes.
//
// A Job provides (see OnlineJob for the documented set):
//   Summary (the run's result type); config(); validate(); files();
//   check_resume(); on_fresh_directory(overwrite); make_trainer();
//   load(dir) -> LoadedGeneration; discard_trainer();
//   previous_epochs(summary, metrics_path); opening_lines(resumed);
//   after_open(resumed); epoch(); run_epoch() -> record;
//   after_epoch(record); add(summary, record); log_lines(record, first);
//   metrics_line(record); notify_log(line); notify_epoch(record);
//   stop_line(summary, record); save_checkpoint(dir, log_bytes);
//   join_checkpoint(); after_checkpoint(store); finish(summary, say).
// TrainingRun (train/training_run.hpp) documents each.

#include "core/error.hpp"
#include "dist/communicator.hpp"
#include "io/atomic_file.hpp"
#include "io/output_dir.hpp"
#include "train/checkpoint_store.hpp"
#include "train/run_directory.hpp"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace foxrl {

/// How a run starts in its directory.
enum class RunStart {
  fresh,        ///< a new run; a directory that already holds one is refused
  overwrite,    ///< a new run replacing the one in the directory (its files only)
  resume,       ///< continue the newest intact checkpoint of the directory
  auto_resume,  ///< resume if the directory has a checkpoint, else overwrite
};

/// `resume` and `overwrite` flags as a RunStart (both: UsageError).
inline RunStart run_start(bool resume, bool overwrite) {
  if (resume && overwrite) throw UsageError("a run either resumes its directory or overwrites it, not both");
  return resume ? RunStart::resume : overwrite ? RunStart::overwrite : RunStart::fresh;
}

/// auto_resume decided for `out_dir`: resume when it holds a checkpoint
/// generation, else overwrite (an attempt that stopped before its first
/// checkpoint is replaced). Other starts as they are.
inline RunStart decide_start(RunStart start, const std::string& out_dir) {
  if (start != RunStart::auto_resume) return start;
  return CheckpointStore(out_dir).generations().empty() ? RunStart::overwrite : RunStart::resume;
}

/// The config a run of `Config` starts from: `file` (or the defaults),
/// `overrides` ("key=value") on top; a resume without `file` takes the
/// saved config of out_dir's newest checkpoint (`saved(out_dir)`) instead,
/// `overrides` again on top. `start` is decided for out_dir first
/// (decide_start) and returned decided.
template <class Config, class Saved>
Config run_config(const std::string& file, const std::vector<std::string>& overrides, RunStart& start,
                  const Saved& saved) {
  Config config = file.empty() ? Config{} : Config::from_json_file(file);
  config.apply_overrides(overrides);
  start = decide_start(start, config.out_dir);
  if (start == RunStart::resume && file.empty()) {
    const std::string out_dir = config.out_dir;
    config = saved(out_dir);
    config.out_dir = out_dir;
    config.apply_overrides(overrides);
  }
  return config;
}

/// What a loaded checkpoint generation tells the loop.
struct LoadedGeneration {
  /// The byte lengths of train.log and metrics.jsonl at the checkpoint;
  /// empty for a legacy checkpoint (metrics.jsonl is then cut by epoch).
  std::map<std::string, std::int64_t> log_bytes;
  std::int64_t epoch = 0;
};

namespace detail {
/// The epochs of metrics.jsonl up to `last_epoch`, the file rewritten
/// without later lines or lines that are not JSON (train/run_loop.cpp).
void keep_metrics_until(const std::string& path, std::int64_t last_epoch);
/// The Error of epoch `epoch` failing with `e`: the reason on one line, the
/// last kernel launched where known, and which checkpoint is intact.
Error epoch_failure(std::int64_t epoch, const std::exception& e, std::int64_t checkpointed, const std::string& out_dir);
}  // namespace detail

template <class Job>
class RunLoop {
 public:
  using Summary = typename Job::Summary;

  RunLoop(Job& job, RunStart start, std::shared_ptr<dist::Communicator> comm)
      : job_(job), start_(start), comm_(std::move(comm)) {}

  /// One line of the run's log: to the observers (rank 0) and train.log.
  void say(const std::string& line) {
    if (comm_->rank() != 0) return;  // rank 0 speaks for the run
    job_.notify_log(line);
    if (open_) {
      log_ << line << std::endl;
    } else {
      pending_.push_back(line);
    }
  }

  Summary run() {
    namespace fs = std::filesystem;
    const std::string out_dir = job_.config().out_dir;
    start_ = decide_start(start_, out_dir);
    const bool resume = start_ == RunStart::resume;
    const bool writer = comm_->rank() == 0;  // rank 0 writes the run directory
    job_.validate();
    std::error_code ec;
    if (resume) {
      // Nothing on disk changes before the checkpoint has loaded: a failed
      // resume leaves the run as it was.
      if (!fs::is_directory(out_dir, ec)) throw UsageError("--resume: out_dir '" + out_dir + "' is not a directory");
      job_.check_resume();
      // A run the user cannot write (a read-only mount, another owner) is
      // refused as bad input before anything is loaded; the probe file
      // this creates is removed at once.
      if (writer) prepare_output_directory(out_dir, "--resume: out_dir");
    } else if (writer) {
      prepare_output_directory(out_dir, "out_dir");  // created, and writable
    }
    std::unique_ptr<RunDirectoryLock> lock;
    if (writer) lock = std::make_unique<RunDirectoryLock>(out_dir);
    const CheckpointStore store(out_dir);
    if (!resume && writer) {
      prepare_fresh_run_directory(out_dir, start_ == RunStart::overwrite, job_.files());
      job_.on_fresh_directory(start_ == RunStart::overwrite);
    }
    Summary summary;
    if (resume) {
      const LoadedGeneration loaded = resume_newest_generation(store);
      if (writer) {
        const std::string log_path = out_dir + "/train.log", metrics_path = out_dir + "/metrics.jsonl";
        if (loaded.log_bytes.empty()) {  // legacy checkpoint: cut metrics by epoch
          keep_metrics_until(metrics_path, loaded.epoch);
        } else {
          const auto bytes = [&](const char* name) {
            const auto it = loaded.log_bytes.find(name);
            return it == loaded.log_bytes.end() ? std::int64_t(0) : it->second;
          };
          cut_back_file(log_path, bytes("train.log"));
          cut_back_file(metrics_path, bytes("metrics.jsonl"));
        }
        job_.previous_epochs(summary, metrics_path);
      }
    } else {
      job_.make_trainer();
    }
    for (const auto& line : job_.opening_lines(resume)) say(line);
    if (writer) {
      store.remove_stale_temporaries();
      remove_stale_temporaries_in(out_dir);  // and the write probes of killed runs
      for (const auto& line : job_.after_open(resume)) say(line);
      log_.open(out_dir + "/train.log", std::ios::app);
      metrics_.open(out_dir + "/metrics.jsonl", std::ios::app);
      if (!log_ || !metrics_) throw UsageError("out_dir '" + out_dir + "': cannot write its logs");
      open_ = true;
      for (const auto& line : pending_) log_ << line << "\n";
      log_.flush();
      pending_.clear();
      write_file_atomically(out_dir + "/config.json", job_.config().to_json() + "\n");
    }

    const std::int64_t first = job_.epoch();
    std::int64_t checkpointed = first;
    const std::int64_t epochs = job_.config().epochs;
    for (std::int64_t e = first; e < epochs; ++e) {
      auto record = run_one_epoch(checkpointed);
      if (writer) job_.after_epoch(record);
      job_.add(summary, record);
      for (const auto& line : job_.log_lines(record, e == first)) say(line);
      if (writer) {
        metrics_ << job_.metrics_line(record) << std::endl;
        job_.notify_epoch(record);
      }
      const std::string stop = job_.stop_line(summary, record);
      const bool checkpoint = job_.epoch() % job_.config().checkpoint_every == 0 || e + 1 == epochs || !stop.empty();
      if (checkpoint && !writer) {
        job_.join_checkpoint();  // adds this rank's part to the generation rank 0 publishes
        checkpointed = job_.epoch();
      } else if (checkpoint) {
        // The logs' lengths go into the checkpoint: a resume cuts them back.
        log_.flush();
        metrics_.flush();
        const std::map<std::string, std::int64_t> log_bytes = {
            {"train.log", file_bytes(out_dir + "/train.log")},
            {"metrics.jsonl", file_bytes(out_dir + "/metrics.jsonl")}};
        store.publish(
            job_.epoch(), [&](const std::string& dir) { job_.save_checkpoint(dir, log_bytes); },
            static_cast<int>(job_.config().keep_checkpoints));
        job_.after_checkpoint(store);
        checkpointed = job_.epoch();
      }
      if (!stop.empty()) {
        say(stop);
        break;
      }
    }
    if (!writer) return summary;  // rank 0 reports and writes the outputs
    // A run killed between publishing its last generation and pruning the
    // oldest (checkpoints, or the best models the kept ones no longer name),
    // resumed with no epoch left, keeps what the uninterrupted one does. Both
    // prunes are no-ops on a directory that is already in order.
    prune_generations(store, job_.config().keep_checkpoints);
    job_.after_checkpoint(store);
    job_.finish(summary, [this](const std::string& line) { say(line); });
    return summary;
  }

 private:
  /// Loads the newest generation that passes every check into a new
  /// trainer, falling back to older ones (with a warning; the failed ones
  /// are set aside); UsageError listing why each failed if none does. Every
  /// rank resumes from the same generation: one that fails on any rank
  /// fails on all.
  LoadedGeneration resume_newest_generation(const CheckpointStore& store) {
    const auto generations = store.generations();
    std::string problems;
    for (std::size_t i = 0; i < generations.size(); ++i) {
      const auto& g = generations[i];
      LoadedGeneration loaded;
      std::string failure;
      try {
        loaded = job_.load(g.path);
      } catch (const LogicError&) {
        throw;
      } catch (const NewerFormatError&) {
        throw;  // not damaged: refused as it is, nothing set aside
      } catch (const UsageError& e) {
        failure = e.what();
      }
      if (comm_->size() > 1) {
        double failed = failure.empty() ? 0.0 : 1.0;
        comm_->sum(&failed, 1);
        if (failed > 0 && failure.empty()) failure = "another rank could not load its part of it";
      }
      if (failure.empty()) {
        // Newer generations that failed are set aside, never read again
        // (the resumed run writes its own generations of those epochs).
        if (comm_->rank() == 0) {
          for (std::size_t k = 0; k < i; ++k) store.set_aside(generations[k]);
        }
        if (i > 0) say("warning: resumed from the older checkpoint " + g.path + "; set aside as damaged: " + problems);
        return loaded;
      }
      // A damaged, incomplete or foreign generation: try the next older one
      // with a fresh trainer (a failed load leaves the trainer unspecified).
      problems += std::string(problems.empty() ? "" : "; ") + g.path + " (" + failure + ")";
      job_.discard_trainer();
    }
    throw UsageError("--resume: no usable checkpoint in " + job_.config().out_dir +
                     (problems.empty() ? std::string() : ": " + problems));
  }

  /// One epoch; a failure that is not foxrl's own (a device error, an
  /// allocation) becomes an Error saying which checkpoint is intact. The
  /// logs are flushed first; no checkpoint is written from a device state
  /// that is not to be trusted.
  auto run_one_epoch(std::int64_t checkpointed) {
    try {
      return job_.run_epoch();
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      log_.flush();
      metrics_.flush();
      throw detail::epoch_failure(job_.epoch() + 1, e, checkpointed, job_.config().out_dir);
    }
  }

  /// Legacy checkpoints (no recorded log lengths): metrics.jsonl keeps the
  /// epochs up to `last_epoch` (lines cut short by a crash dropped).
  static void keep_metrics_until(const std::string& path, std::int64_t last_epoch);

  Job& job_;
  RunStart start_;
  std::shared_ptr<dist::Communicator> comm_;
  std::ofstream log_, metrics_;
  bool open_ = false;
  std::vector<std::string> pending_;  ///< lines said before the log was opened
};

template <class Job>
void RunLoop<Job>::keep_metrics_until(const std::string& path, std::int64_t last_epoch) {
  detail::keep_metrics_until(path, last_epoch);
}

}  // namespace foxrl
