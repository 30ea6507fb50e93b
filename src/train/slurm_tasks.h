#pragma once
// How many tasks srun started on this node, from the variables it gives every task. Under srun no
// mpirun sets OMPI_COMM_WORLD_LOCAL_SIZE before the ranks start, and SLURM_NTASKS_PER_NODE exists
// only when the user asked for --ntasks-per-node (not for `srun -N 2 -n 4`).
#include <string_view>

namespace ff {

// Tasks on node `node` (0-based) of a Slurm tasks-per-node list such as "2(x3),1" (2 on each of
// 3 nodes, then 1); 0 when the list is malformed or has no such node.
int slurm_tasks_on_node(std::string_view per_node, int node);

// SLURM_STEP_TASKS_PER_NODE at this task's SLURM_NODEID (its node's index in the step), else
// SLURM_NTASKS_PER_NODE; 0 when neither says (not under srun).
int slurm_tasks_on_this_node();

}  // namespace ff
