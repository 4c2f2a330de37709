// A short CartPole training run with faults planted between epochs (NaN
// rewards in stored transitions, a NaN weight in the online network): the
// run goes on, the guard reports what it rejected and restored, and every
// weight, Adam moment and the replay's sum tree end finite.
#include "support/test_spaces.hpp"
#include "train/online_trainer.hpp"
#include "train/training_log.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>

namespace {

template <class Exec, class View>
bool all_finite(const Exec& space, const View& v) {
  auto h = Kokkos::create_mirror_view(Kokkos::HostSpace(), v);
  Kokkos::deep_copy(space, h, v);
  foxrl::compat::fence(space, "foxrl::test::copy");
  for (std::size_t i = 0; i < h.extent(0); ++i)
    if (!std::isfinite(h(i))) return false;
  return true;
}

template <class Exec, class View>
void plant(const Exec& space, const View& v, std::size_t i, float value) {
  Kokkos::deep_copy(space, Kokkos::subview(v, i), value);
  foxrl::compat::fence(space, "foxrl::test::plant");
}

}  // namespace

TEMPLATE_TEST_CASE("a training run with planted faults goes on and ends with finite weights", "[guard][trainer]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  foxrl::TrainConfig config;
  config.env = "cartpole";
  config.num_envs = 4;
  config.hidden = {16, 16};
  config.buffer_capacity = 1024;
  config.batch_size = 32;
  config.learning_starts = 64;
  config.iterations_per_epoch = 80;
  config.target_update_every = 10;
  config.guard_max_bad = 3;
  config.guard_lr_decay = 0.5;
  config.seed = 3;
  foxrl::DqnTrainer<Exec> trainer(config);
  const auto& space = trainer.context().space();

  const auto first = trainer.run_epoch();
  REQUIRE(first.updates > 0);
  CHECK(std::isfinite(first.loss));
  CHECK(first.lr == Approx(config.lr).epsilon(1e-12));
  const std::int64_t restores_before = first.restores;

  // Poisoned transitions: every batch that draws one has a NaN loss.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto size = trainer.replay().size();
  REQUIRE(size >= 64);
  for (std::int64_t slot = 0; slot < 64; slot += 4) plant(space, trainer.replay().storage().rewards, slot, nan);
  // A NaN weight behind the first ReLU.
  plant(space, trainer.learner().weights().online, trainer.learner().layout().layers[0].weight_offset, nan);

  const auto second = trainer.run_epoch();
  INFO(foxrl::format_epoch_log(second));
  CHECK(second.rejected_updates > 0);
  CHECK(second.nonfinite_total >= second.rejected_updates - second.spikes_total);
  CHECK(second.restores > restores_before);
  CHECK(second.lr < config.lr);
  CHECK(second.rejected_updates < second.updates - first.updates);  // learning went on
  CHECK(std::isfinite(second.loss));
  CHECK(std::isfinite(second.grad_norm));
  CHECK_THAT(foxrl::format_epoch_log(second), Catch::Contains("rejected") && Catch::Contains("restores"));
  CHECK_THAT(foxrl::epoch_json(second), Catch::Contains("\"restores\"") && Catch::Contains("\"rejected_total\""));

  const auto third = trainer.run_epoch();
  CHECK(third.updates > second.updates);
  // A poisoned transition is quarantined (priority 0) by the update that
  // drew it: the 16 of them and the NaN weight cause at most 17 rejections.
  CHECK(third.nonfinite_total <= first.nonfinite_total + 17);
  CHECK(third.lr >= second.lr);
  CHECK(std::isfinite(third.loss));
  const auto& w = trainer.learner().weights();
  CHECK(all_finite(space, w.online));
  CHECK(all_finite(space, w.target));
  CHECK(all_finite(space, w.adam_m));
  CHECK(all_finite(space, w.adam_v));
  CHECK(all_finite(space, trainer.replay().storage().tree));
}
