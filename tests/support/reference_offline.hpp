#pragma once
// Float64 host implementations of the offline losses (IQL value, twin Q and
// policy losses, discrete CQL, behavior cloning), written from the formulas
// independently of the kernels, for the tests to compare against and to
// take finite differences of. Heads are row-major [B, A] vectors of double.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace foxrl::test {

/// Row-major [B, A] heads and the dataset columns of one batch, in double.
struct RefOfflineBatch {
  int batch = 0;
  int num_actions = 0;
  std::vector<int> actions;
  std::vector<double> rewards;
  std::vector<double> discounts;
};

/// log sum_j exp(row_j) computed around the row's max.
inline double ref_logsumexp(const double* row, int n) {
  const double m = *std::max_element(row, row + n);
  double s = 0.0;
  for (int j = 0; j < n; ++j) s += std::exp(row[j] - m);
  return m + std::log(s);
}

/// Index of the row's largest entry (the first on ties).
inline int ref_row_argmax(const double* row, int n) { return int(std::max_element(row, row + n) - row); }

struct RefIqlValue {
  double loss = 0, mean_value = 0, mean_advantage = 0;
  std::vector<double> d_value, advantages;  ///< [B]
};

/// L_V = mean |tau - 1(u < 0)| u^2, u = min(Q1t, Q2t)(s, a) - V(s); dL/dV.
inline RefIqlValue ref_iql_value_loss(const RefOfflineBatch& b, const std::vector<double>& q1t,
                                      const std::vector<double>& q2t, const std::vector<double>& v, double tau) {
  RefIqlValue r;
  const int B = b.batch, A = b.num_actions;
  r.d_value.resize(B);
  r.advantages.resize(B);
  for (int i = 0; i < B; ++i) {
    const std::size_t k = std::size_t(i) * A + b.actions[i];
    const double u = std::min(q1t[k], q2t[k]) - v[i];
    const double weight = std::fabs(tau - (u < 0 ? 1.0 : 0.0));
    r.loss += weight * u * u / B;
    r.mean_value += v[i] / B;
    r.mean_advantage += u / B;
    r.advantages[i] = u;
    r.d_value[i] = -2.0 * weight * u / B;
  }
  return r;
}

struct RefIqlQ {
  double q1_loss = 0, q2_loss = 0, mean_q = 0, mean_target = 0;
  std::vector<double> d_q1, d_q2;  ///< [B, A]
};

/// L_Qk = mean (Qk(s, a) - y)^2, y = r + discount V(s'); dL_Qk/dQk.
inline RefIqlQ ref_iql_q_loss(const RefOfflineBatch& b, const std::vector<double>& q1, const std::vector<double>& q2,
                              const std::vector<double>& v_next) {
  RefIqlQ r;
  const int B = b.batch, A = b.num_actions;
  r.d_q1.assign(std::size_t(B) * A, 0.0);
  r.d_q2.assign(std::size_t(B) * A, 0.0);
  for (int i = 0; i < B; ++i) {
    const std::size_t k = std::size_t(i) * A + b.actions[i];
    const double y = b.rewards[i] + b.discounts[i] * v_next[i];
    r.q1_loss += (q1[k] - y) * (q1[k] - y) / B;
    r.q2_loss += (q2[k] - y) * (q2[k] - y) / B;
    r.mean_q += 0.5 * (q1[k] + q2[k]) / B;
    r.mean_target += y / B;
    r.d_q1[k] = 2.0 * (q1[k] - y) / B;
    r.d_q2[k] = 2.0 * (q2[k] - y) / B;
  }
  return r;
}

struct RefIqlPolicy {
  double loss = 0, mean_weight = 0, clipped = 0;
  std::vector<double> d_logits;  ///< [B, A]
  std::vector<double> weights;   ///< [B]
};

/// L_pi = -mean w log softmax(logits)(a), w = min(exp(beta u), w_max).
inline RefIqlPolicy ref_iql_policy_loss(const RefOfflineBatch& b, const std::vector<double>& logits,
                                        const std::vector<double>& q1t, const std::vector<double>& q2t,
                                        const std::vector<double>& v, double beta, double w_max) {
  RefIqlPolicy r;
  const int B = b.batch, A = b.num_actions;
  r.d_logits.resize(std::size_t(B) * A);
  r.weights.resize(B);
  for (int i = 0; i < B; ++i) {
    const std::size_t row = std::size_t(i) * A;
    const int a = b.actions[i];
    const double u = std::min(q1t[row + a], q2t[row + a]) - v[i];
    const double w = std::min(std::exp(beta * u), w_max);
    const double lse = ref_logsumexp(&logits[row], A);
    r.loss += -w * (logits[row + a] - lse) / B;
    r.mean_weight += w / B;
    r.clipped += (w >= w_max ? 1.0 : 0.0) / B;
    r.weights[i] = w;
    for (int j = 0; j < A; ++j) r.d_logits[row + j] = w * (std::exp(logits[row + j] - lse) - (j == a ? 1.0 : 0.0)) / B;
  }
  return r;
}

struct RefCql {
  double loss = 0, penalty = 0, td_loss = 0, mean_q = 0;
  std::vector<double> d_q;     ///< [B, A]
  std::vector<double> abs_td;  ///< [B]
};

/// L = alpha mean(logsumexp Q(s, .) - Q(s, a)) + mean (Q(s, a) - y)^2 with
/// y = r + discount Q_target(s', a*), a* = argmax of `online_next` if given
/// (non-empty) else of `target_next`.
inline RefCql ref_cql_loss(const RefOfflineBatch& b, const std::vector<double>& q,
                           const std::vector<double>& target_next, const std::vector<double>& online_next,
                           double alpha) {
  RefCql r;
  const int B = b.batch, A = b.num_actions;
  r.d_q.resize(std::size_t(B) * A);
  r.abs_td.resize(B);
  for (int i = 0; i < B; ++i) {
    const std::size_t row = std::size_t(i) * A;
    const int a = b.actions[i];
    const int a_star = ref_row_argmax(online_next.empty() ? &target_next[row] : &online_next[row], A);
    const double y = b.rewards[i] + b.discounts[i] * target_next[row + a_star];
    const double td = q[row + a] - y;
    const double lse = ref_logsumexp(&q[row], A);
    r.penalty += (lse - q[row + a]) / B;
    r.td_loss += td * td / B;
    r.mean_q += q[row + a] / B;
    r.abs_td[i] = std::fabs(td);
    for (int j = 0; j < A; ++j)
      r.d_q[row + j] = alpha * (std::exp(q[row + j] - lse) - (j == a ? 1.0 : 0.0)) / B + (j == a ? 2.0 * td / B : 0.0);
  }
  r.loss = alpha * r.penalty + r.td_loss;
  return r;
}

struct RefBc {
  double loss = 0, accuracy = 0;
  std::vector<double> d_logits;  ///< [B, A]
};

/// L = -mean log softmax(logits)(a); accuracy: argmax(logits) == a.
inline RefBc ref_bc_loss(const RefOfflineBatch& b, const std::vector<double>& logits) {
  RefBc r;
  const int B = b.batch, A = b.num_actions;
  r.d_logits.resize(std::size_t(B) * A);
  for (int i = 0; i < B; ++i) {
    const std::size_t row = std::size_t(i) * A;
    const int a = b.actions[i];
    const double lse = ref_logsumexp(&logits[row], A);
    r.loss += (lse - logits[row + a]) / B;
    r.accuracy += (ref_row_argmax(&logits[row], A) == a ? 1.0 : 0.0) / B;
    for (int j = 0; j < A; ++j) r.d_logits[row + j] = (std::exp(logits[row + j] - lse) - (j == a ? 1.0 : 0.0)) / B;
  }
  return r;
}

}  // namespace foxrl::test
