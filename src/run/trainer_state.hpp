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
// One enumeration (visit_trainer_tensors) serves saving and loading.

#include "core/error.hpp"
#include "collect/experience_collector.hpp"
#include "replay/replay_buffer.hpp"
#include "market/signal_adapter.hpp"
#include "nn/training_guard.hpp"
#include "io/state_archive.hpp"
#include "envs/vector_env.hpp"

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <string>

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
  SignalAdapter<ExecSpace>* adapter = nullptr;  ///< null: no normaliser (CartPole)
  const TrainingGuard<ExecSpace>* guard = nullptr;  ///< its View handles (device data is written on load)
};

/// Every host-side value of a trainer state, read before the tensors whose
/// sizes depend on them.
struct TrainerHostState {
  TrainerCounters trainer;
  std::int64_t replay_inserted = 0;
  std::int64_t replay_sample_calls = 0;
  std::int64_t replay_boundary_head = 0;  ///< boundary rows handed out (how many of the pool to keep)
  std::int64_t nstep_pushed = 0;
  NormalizerState normalizer;  ///< sized to the adapter's dim, or empty
};

template <class Archive>
void visit_trainer_host_state(Archive& a, TrainerHostState& h) {
  a.scalar("trainer.epoch", h.trainer.epoch);
  a.scalar("trainer.global_step", h.trainer.global_step);
  a.scalar("trainer.iteration", h.trainer.iteration);
  a.scalar("trainer.updates", h.trainer.updates);
  a.scalar("trainer.experiences", h.trainer.experiences);
  a.scalar("replay.inserted", h.replay_inserted);
  a.scalar("replay.sample_calls", h.replay_sample_calls);
  a.scalar("replay.boundary_rows", h.replay_boundary_head);  // = replay.boundary_head, on the host
  a.scalar("nstep.steps_pushed", h.nstep_pushed);
  if (!h.normalizer.count.empty()) {
    a.host_vector("normalizer.count", h.normalizer.count);
    a.host_vector("normalizer.mean", h.normalizer.mean);
    a.host_vector("normalizer.m2", h.normalizer.m2);
  }
}

template <class Archive, class ExecSpace>
void visit_trainer_tensors(Archive& a, const ExecSpace& space, const TrainerParts<ExecSpace>& p,
                           const TrainerHostState& h) {
  if (auto* cp = p.env->cartpole()) {
    const auto& s = cp->state();
    a.tensor(space, "env.cartpole.x", s.x);
    a.tensor(space, "env.cartpole.x_dot", s.x_dot);
    a.tensor(space, "env.cartpole.theta", s.theta);
    a.tensor(space, "env.cartpole.theta_dot", s.theta_dot);
    a.tensor(space, "env.cartpole.episode_steps", s.episode_steps);
    a.tensor(space, "env.cartpole.episodes", s.episodes);
  } else {
    const auto& s = p.env->market()->state();
    a.tensor(space, "env.market.time", s.time);
    a.tensor(space, "env.market.position", s.position);
    a.tensor(space, "env.market.episode_steps", s.episode_steps);
    a.tensor(space, "env.market.episodes", s.episodes);
  }
  a.tensor(space, "env.observations", p.env->observations());

  // Replay: only what has been written. The observation ring holds states
  // up to the write pointer and successors written up to n*N rows ahead.
  const auto& lay = p.replay->layout();
  const auto& st = p.replay->storage();
  const std::int64_t slots = std::min(h.replay_inserted, lay.capacity);
  a.tensor(space, "replay.observations", st.observations, std::min(lay.obs_rows, h.replay_inserted + lay.lookahead));
  a.tensor(space, "replay.actions", st.actions, slots);
  a.tensor(space, "replay.rewards", st.rewards, slots);
  a.tensor(space, "replay.discounts", st.discounts, slots);
  a.tensor(space, "replay.next_ref", st.next_ref, slots);
  a.tensor(space, "replay.boundary_observations", st.boundary_observations,
           std::min(lay.boundary_capacity, h.replay_boundary_head));
  a.tensor(space, "replay.boundary_owner", st.boundary_owner);
  a.tensor(space, "replay.boundary_head", st.boundary_head);
  a.tensor(space, "replay.boundary_evictions", st.boundary_evictions);
  // evicted_slots is scratch of a single insert: not state.
  a.tensor(space, "replay.tree", st.tree);
  a.tensor(space, "replay.max_priority", st.max_priority);
  a.tensor(space, "replay.teams_done", st.teams_done);
  a.tensor(space, "replay.batch_min_mass", st.batch_min_mass);

  const auto& ring = p.collector->nstep().ring();
  a.tensor(space, "nstep.observations", ring.observations);
  a.tensor(space, "nstep.next_observations", ring.next_observations);
  a.tensor(space, "nstep.actions", ring.actions);
  a.tensor(space, "nstep.rewards", ring.rewards);
  a.tensor(space, "nstep.episode_end", ring.episode_end);

  const auto& stats = p.collector->episode_stats();
  a.tensor(space, "episodes.running", stats.running());
  a.tensor(space, "episodes.ring", stats.ring());
  a.tensor(space, "episodes.count", stats.count());

  // The training guard: learning-rate scale, counters, loss window, and the
  // last good snapshot a later restore would return to.
  if (p.guard != nullptr) {
    a.tensor(space, "guard.state", p.guard->state());
    for (const auto& b : p.guard->snapshot_buffers()) a.tensor(space, "guard.snapshot_" + b.name, b.view);
    a.tensor(space, "guard.snapshot_adam_step", p.guard->snapshot_step());
  }
}

/// Writes `path` (atomically) from the components and `counters`. Fences.
template <class ExecSpace>
void save_trainer_state(const ExecSpace& space, const std::string& path, const TrainerParts<ExecSpace>& p,
                        const TrainerCounters& counters) {
  TrainerHostState h;
  h.trainer = counters;
  h.replay_inserted = p.replay->inserted();
  h.replay_sample_calls = static_cast<std::int64_t>(p.replay->sample_calls());
  {
    Kokkos::View<std::int64_t, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> head(
        &h.replay_boundary_head);
    Kokkos::deep_copy(space, head, p.replay->storage().boundary_head);
    compat::fence(space, "foxrl::save_trainer_state::boundary_head");
  }
  h.nstep_pushed = p.collector->nstep().steps_pushed();
  if (p.adapter != nullptr) h.normalizer = p.adapter->export_state(space);

  StateWriter<ExecSpace> w;
  visit_trainer_host_state(w, h);
  visit_trainer_tensors(w, space, p, h);
  auto& m = w.metadata();
  m["format"] = "foxrl.trainer_state";
  m["format_version"] = "1";
  m["env"] = p.env->is_market() ? "market" : "cartpole";
  m["num_envs"] = std::to_string(p.env->num_envs());
  m["obs_dim"] = std::to_string(p.env->obs_dim());
  m["replay_capacity"] = std::to_string(p.replay->capacity());
  w.write(space, path);
}

/// Reads `path` into the components (everything validated before the
/// first copy; foxrl::Error naming the file and tensor otherwise) and
/// returns the trainer's counters. Fences.
template <class ExecSpace>
TrainerCounters load_trainer_state(const ExecSpace& space, const std::string& path, const TrainerParts<ExecSpace>& p) {
  StateReader<ExecSpace> r(path);
  const auto& m = r.metadata();
  const auto meta = [&](const char* key) {
    const auto it = m.find(key);
    return it == m.end() ? std::string() : it->second;
  };
  if (meta("format") != "foxrl.trainer_state")
    throw Error("foxrl: trainer state '" + path + "': metadata 'format' is '" + meta("format") +
                "', expected foxrl.trainer_state");
  if (meta("format_version") != "1")
    throw Error("foxrl: trainer state '" + path + "': metadata 'format_version' is '" + meta("format_version") +
                "', this foxrl reads 1");

  TrainerHostState h;
  if (p.adapter != nullptr) {
    const auto d = static_cast<std::size_t>(p.adapter->dim());
    h.normalizer = NormalizerState{std::vector<double>(d), std::vector<double>(d), std::vector<double>(d)};
  }
  visit_trainer_host_state(r, h);
  const std::pair<const char*, std::int64_t> counters[] = {
      {"trainer.epoch", h.trainer.epoch},       {"trainer.global_step", h.trainer.global_step},
      {"trainer.iteration", h.trainer.iteration}, {"trainer.updates", h.trainer.updates},
      {"trainer.experiences", h.trainer.experiences}, {"replay.inserted", h.replay_inserted},
      {"replay.boundary_rows", h.replay_boundary_head}, {"nstep.steps_pushed", h.nstep_pushed}};
  for (const auto& [name, value] : counters)
    if (value < 0) r.fail(name, "negative counter " + std::to_string(value));
  if (h.replay_inserted != h.trainer.experiences)
    r.fail("replay.inserted", std::to_string(h.replay_inserted) + " inserts, but trainer.experiences is " +
                                  std::to_string(h.trainer.experiences));

  visit_trainer_tensors(r, space, p, h);
  r.check_no_extra();
  if (p.adapter != nullptr) p.adapter->import_state(space, h.normalizer);  // validates before copying
  r.apply(space);
  p.replay->restore_counters(h.replay_inserted, static_cast<std::uint64_t>(h.replay_sample_calls));
  p.collector->nstep().restore_steps_pushed(h.nstep_pushed);
  return h.trainer;
}

}  // namespace foxrl
