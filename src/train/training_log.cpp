#include "train/training_log.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <sstream>

namespace foxrl {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string format_epoch_log(const EpochRecord& r) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  if (r.backend == "Cuda") {
    out << "GPU collected " << r.experiences << " experiences";
  } else {
    out << "collected " << r.experiences << " experiences on " << r.backend;
  }
  out << " (" << r.env_steps << " env steps, " << r.updates << " updates, " << r.episodes << " episodes)\n";
  out.precision(3);
  out << "Epoch " << r.epoch << " complete in " << r.seconds << " s";
  out.precision(0);
  out << ": " << r.env_steps_per_s << " env steps/s, " << r.updates_per_s << " updates/s";
  out.precision(4);
  out << ", loss " << r.loss << ", mean Q " << r.mean_q << ", |TD| " << r.td_error << ", epsilon " << r.epsilon
      << ", return (last 100) " << r.mean_return_last_100;
  out.unsetf(std::ios::floatfield);
  out.precision(3);
  out << ", guard: " << r.rejected_updates << " rejected (" << r.rejected_total << " total), " << r.restores
      << " restores, lr " << r.lr;
  if (r.validation) {
    const auto& v = *r.validation;
    char line[224];
    std::snprintf(line, sizeof line,
                  "\nvalidation backtest: net return %.2f%%, Sharpe %.2f, %ld trades (buy and hold %.2f%%)%s",
                  100 * v.agent.total_return, v.agent.sharpe, v.agent.trades, 100 * v.buy_and_hold_return,
                  r.best ? ", best so far" : "");
    out << line;
  }
  return out.str();
}

std::string epoch_json(const EpochRecord& r) {
  nlohmann::json j = {{"epoch", r.epoch},
                      {"seconds", r.seconds},
                      {"env_steps", r.env_steps},
                      {"experiences", r.experiences},
                      {"updates", r.updates},
                      {"env_steps_per_s", r.env_steps_per_s},
                      {"updates_per_s", r.updates_per_s},
                      {"loss", r.loss},
                      {"mean_q", r.mean_q},
                      {"td_error", r.td_error},
                      {"grad_norm", r.grad_norm},
                      {"rejected_updates", r.rejected_updates},
                      {"rejected_total", r.rejected_total},
                      {"nonfinite_total", r.nonfinite_total},
                      {"spikes_total", r.spikes_total},
                      {"restores", r.restores},
                      {"lr", r.lr},
                      {"epsilon", r.epsilon},
                      {"beta", r.beta},
                      {"episodes", r.episodes},
                      {"mean_return_last_100", r.mean_return_last_100},
                      {"backend", r.backend}};
  if (r.validation) {  // the names of `foxrl train-offline`'s metrics
    j["val_total_return"] = r.validation->agent.total_return;
    j["val_sharpe"] = r.validation->agent.sharpe;
    j["val_trades"] = r.validation->agent.trades;
    j["val_buy_and_hold_return"] = r.validation->buy_and_hold_return;
    j["val_best"] = r.best;
  }
  return j.dump();
}

ProgressLine::ProgressLine(std::int64_t total)
    : total_(total), enabled_(::isatty(STDERR_FILENO) != 0), start_(now_seconds()), last_(start_) {}

void ProgressLine::tick(std::int64_t done) {
  if (!enabled_) return;
  const double t = now_seconds();
  // Only after a second, then at most four updates a second.
  if (t - start_ < 1.0 || t - last_ < 0.25) return;
  last_ = t;
  shown_ = true;
  std::fprintf(stderr, "\r  iteration %lld / %lld (%.0f it/s)   ", static_cast<long long>(done),
               static_cast<long long>(total_), static_cast<double>(done) / (t - start_));
  std::fflush(stderr);
}

void ProgressLine::finish() {
  if (shown_) std::fprintf(stderr, "\r%60s\r", "");
}

}  // namespace foxrl
