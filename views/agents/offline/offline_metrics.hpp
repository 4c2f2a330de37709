#pragma once
// Slots of an offline learner's device metrics View
// (float[OfflineMetrics::count]): each offline loss kernel writes the batch
// means of its own slots only, so IQL's three losses, CQL and BC can share
// one View (or a learner may hand each kernel a subview whose slots it
// names with these indices).

namespace foxrl {

/// Indices into the metrics View of the offline loss kernels.
struct OfflineMetrics {
  enum Slot : int {
    value_loss = 0,       ///< IQL: mean expectile loss |tau - 1(u < 0)| u^2, u = min Q_target(s, a) - V(s)
    mean_value = 1,       ///< IQL: mean V(s)
    mean_advantage = 2,   ///< IQL: mean u = min Q_target(s, a) - V(s)
    q1_loss = 3,          ///< IQL: mean (Q1(s, a) - y)^2, y = r + discount V(s')
    q2_loss = 4,          ///< IQL: mean (Q2(s, a) - y)^2
    mean_q = 5,           ///< IQL: mean (Q1(s, a) + Q2(s, a)) / 2
    mean_target = 6,      ///< IQL: mean y
    policy_loss = 7,      ///< IQL: mean -w log pi(a | s)
    mean_weight = 8,      ///< IQL: mean w = min(exp(beta u), w_max)
    clipped_weights = 9,  ///< IQL: fraction of rows whose weight was clipped at w_max
    cql_loss = 10,        ///< CQL: alpha * cql_penalty + cql_td_loss
    cql_penalty = 11,     ///< CQL: mean logsumexp_a Q(s, a) - Q(s, a_data)
    cql_td_loss = 12,     ///< CQL: mean (Q(s, a_data) - y)^2
    cql_mean_q = 13,      ///< CQL: mean Q(s, a_data)
    bc_loss = 14,         ///< BC: mean -log pi(a | s)
    bc_accuracy = 15,     ///< BC: fraction of rows whose greedy action is the dataset's
    count = 16
  };
};

}  // namespace foxrl
