#pragma once
// The trainer state beside a checkpoint (trainer_state.safetensors): all
// that the learner's checkpoint does not hold and a resumed run needs to
// continue bit for bit: the replay buffer (observation ring up to the rows
// written ahead, slot arrays of the filled slots, boundary pool, sum tree,
// maximum priority), the env states and observations, the n-step windows,
// the episode statistics, the signal normaliser (float64, exact), and the
// host counters (epoch, env steps, iterations, updates, experiences, replay
// inserts and sample calls, n-step pushes). Every random draw of a run is a
// counter-based function of (seed, stream, counter), and those counters are
// all here (env episode counts, replay sample calls, the global step), so no
// generator state exists beyond them.
//
// One enumeration (visit_trainer_state) serves saving and loading; each
// component names and enumerates its own state (visit_host_state /
// visit_state), this file only puts them in order.

#include "collect/experience_collector.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "envs/vector_env.hpp"
#include "io/state_archive.hpp"
#include "market/signal_adapter.hpp"
#include "nn/training_guard.hpp"
#include "replay/replay_buffer.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace foxrl {

/// File name of the trainer state inside a run directory.
inline const char* const trainer_state_file = "trainer_state.safetensors";

/// The trainer's own host counters.
struct TrainerCounters {
  std::int64_t epoch = 0;
  std::int64_t global_step = 0;  ///< env steps, summed over envs
  std::int64_t iteration = 0;
  std::int64_t updates = 0;
  std::int64_t experiences = 0;  ///< transitions inserted into replay
};

/// The components whose device state a trainer state holds (owned elsewhere).
template <class ExecSpace>
struct TrainerParts {
  VectorEnv<ExecSpace>* env = nullptr;
  ReplayBuffer<ExecSpace>* replay = nullptr;
  ExperienceCollector<ExecSpace>* collector = nullptr;
  SignalAdapter<ExecSpace>* adapter = nullptr;      ///< null: no normaliser (CartPole)
  const TrainingGuard<ExecSpace>* guard = nullptr;  ///< its View handles (device data is written on load)
};

/// The host values of a trainer state, read before the tensors whose sizes
/// depend on them.
template <class ExecSpace>
struct TrainerHostState {
  TrainerCounters trainer;
  typename ReplayBuffer<ExecSpace>::HostState replay;
  typename ExperienceCollector<ExecSpace>::HostState collector;
  NormalizerState normalizer;  ///< empty without an adapter
};

/// The trainer's own counters (trainer.*).
template <class Archive>
void visit_trainer_counters(Archive& a, TrainerCounters& c) {
  a.scalar("trainer.epoch", c.epoch);
  a.scalar("trainer.global_step", c.global_step);
  a.scalar("trainer.iteration", c.iteration);
  a.scalar("trainer.updates", c.updates);
  a.scalar("trainer.experiences", c.experiences);
}

/// The one enumeration of a trainer state, in file order: every host value
/// (trainer counters, then each component's), then every component's device
/// tensors. `a` is a StateWriter or a StateReader; each component names its
/// own tensors.
template <class Archive, class ExecSpace>
void visit_trainer_state(Archive& a, const ExecSpace& space, const TrainerParts<ExecSpace>& p,
                         TrainerHostState<ExecSpace>& h) {
  visit_trainer_counters(a, h.trainer);
  p.replay->visit_host_state(a, space, h.replay);
  p.collector->visit_host_state(a, h.collector);
  if (p.adapter != nullptr) p.adapter->visit_host_state(a, space, h.normalizer);
  if constexpr (!Archive::saving) {
    const std::pair<const char*, std::int64_t> counters[] = {{"trainer.epoch", h.trainer.epoch},
                                                             {"trainer.global_step", h.trainer.global_step},
                                                             {"trainer.iteration", h.trainer.iteration},
                                                             {"trainer.updates", h.trainer.updates},
                                                             {"trainer.experiences", h.trainer.experiences}};
    for (const auto& [name, value] : counters)
      if (value < 0) a.fail(name, "negative counter " + std::to_string(value));
    if (h.replay.inserted != h.trainer.experiences)
      a.fail("replay.inserted", std::to_string(h.replay.inserted) + " inserts, but trainer.experiences is " +
                                    std::to_string(h.trainer.experiences));
  }

  p.env->visit_state(a, space);
  p.replay->visit_state(a, space, h.replay, p.env->num_actions());
  p.collector->visit_state(a, space, h.collector);
  if (p.guard != nullptr) p.guard->visit_state(a, space);
}

/// Writes `path` (atomically) from the components and `counters`. Fences.
template <class ExecSpace>
void save_trainer_state(const ExecSpace& space, const std::string& path, const TrainerParts<ExecSpace>& p,
                        const TrainerCounters& counters, const std::map<std::string, std::string>& stamp = {}) {
  TrainerHostState<ExecSpace> h;
  h.trainer = counters;
  StateWriter<ExecSpace> w;
  visit_trainer_state(w, space, p, h);
  auto& m = w.metadata();
  m["format"] = "foxrl.trainer_state";
  m["format_version"] = "1";
  m["env"] = p.env->name();
  m["num_envs"] = std::to_string(p.env->num_envs());
  m["obs_dim"] = std::to_string(p.env->obs_dim());
  m["replay_capacity"] = std::to_string(p.replay->capacity());
  for (const auto& [key, value] : stamp) m[key] = value;
  w.write(space, path);
}

/// Reads `path` into the components and returns the trainer's counters
/// (and, if asked, the file's metadata). Everything is validated before the
/// first copy: checksums, tensors present with their dtype and shape, and
/// their values as each component checks them (indices and counters in
/// range, statistics finite); UsageError naming the file, the tensor and the
/// value otherwise. Fences.
template <class ExecSpace>
TrainerCounters load_trainer_state(const ExecSpace& space, const std::string& path, const TrainerParts<ExecSpace>& p,
                                   std::map<std::string, std::string>* metadata = nullptr) {
  StateReader<ExecSpace> r(path);
  const auto& m = r.metadata();
  if (metadata != nullptr) *metadata = m;
  const auto meta = [&](const char* key) {
    const auto it = m.find(key);
    return it == m.end() ? std::string() : it->second;
  };
  if (meta("format") != "foxrl.trainer_state")
    throw UsageError("trainer state '" + path + "': metadata 'format' is " + quote_excerpt(meta("format")) +
                     ", expected foxrl.trainer_state");
  if (const std::string v = meta("format_version");
      !v.empty() && v.size() < 10 && v.find_first_not_of("0123456789") == std::string::npos && std::stoi(v) > 1)
    throw NewerFormatError("trainer state '" + path + "'", "metadata 'format_version'", v, "1");
  if (meta("format_version") != "1")
    throw UsageError("trainer state '" + path + "': metadata 'format_version' is " +
                     quote_excerpt(meta("format_version")) + ", this foxrl reads 1");

  TrainerHostState<ExecSpace> h;
  visit_trainer_state(r, space, p, h);
  r.check_no_extra();
  if (p.adapter != nullptr) p.adapter->import_state(space, h.normalizer, path);  // validates before copying
  r.apply(space);
  p.replay->restore_host_state(h.replay);
  p.collector->restore_host_state(h.collector);
  return h.trainer;
}

}  // namespace foxrl
