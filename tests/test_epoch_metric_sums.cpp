// The epoch record's loss, Q, |td| and gradient norm are the means of its
// updates' own metrics. The trainer adds each update's metrics on the
// device (the last update of an iteration inside the clock's launch); the
// reference reads every update's metrics back on the host from a second,
// identical run and takes the means in float64 in the same order.
#include "support/test_spaces.hpp"
#include "support/tiny_trainer_config.hpp"
#include "train/online_trainer.hpp"

#include <catch2/catch.hpp>

#include <string>

TEMPLATE_TEST_CASE("the epoch record's means are the means of its updates' metrics", "[trainer][metrics]",
                   FOXRL_TEST_SPACES) {
  using Exec = TestType;
  using foxrl::LearnerMetrics;
  const std::string env = GENERATE(std::string("cartpole"), std::string("market"));
  INFO("env " << env);
  auto config = foxrl::test::tiny_trainer_config(env, "unused", 1);
  config.iterations_per_epoch = 12;
  foxrl::DqnTrainer<Exec> run(config), reference(config);
  for (auto* t : {&run, &reference})
    while (t->global_step() < config.learning_starts) t->iterate();

  const auto record = run.run_epoch();

  double sums[LearnerMetrics::count] = {};
  int applied = 0;
  for (std::int64_t it = 0; it < config.iterations_per_epoch; ++it) {
    reference.iterate();
    auto metrics = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), reference.learner().metrics());
    if (metrics(LearnerMetrics::rejected) != 0.0f) continue;
    for (int k = 0; k < LearnerMetrics::count; ++k) sums[k] += static_cast<double>(metrics(k));
    ++applied;
  }
  REQUIRE(applied > 0);
  CHECK(record.updates == reference.updates());
  CHECK(record.rejected_updates == config.iterations_per_epoch - applied);
  // The same float64 additions in the same order: equal, not close.
  CHECK(record.loss == sums[LearnerMetrics::loss] / applied);
  CHECK(record.mean_q == sums[LearnerMetrics::mean_q] / applied);
  CHECK(record.td_error == sums[LearnerMetrics::mean_abs_td] / applied);
  CHECK(record.grad_norm == sums[LearnerMetrics::grad_norm] / applied);
  CHECK(record.loss > 0.0);
}
