// Control flow: If, Loop and Scan, whose subgraphs (core/graph.h,
// GraphAttribute) run with the same CPU kernels as any node, on the device
// that runs the control-flow node.
//
// A subgraph is compiled once, when its node's kernel is built: a copy of it
// is constant-folded (FoldConstants; the other optimiser passes leave
// subgraphs alone, their shapes are often known only per iteration) and a
// kernel is built for each of its nodes from the registry the control-flow
// kernel was registered in. Each Compute then runs those kernels in order
// on host tensors of its own, so concurrent runs share nothing mutable.
#ifndef GLINT_DEVICES_CPU_CONTROL_FLOW_H_
#define GLINT_DEVICES_CPU_CONTROL_FLOW_H_

#include <cstdint>

namespace glint::cpu {

// The most iterations one Loop may run in one Compute: a trip count, or a
// loop whose condition stays true, beyond it is INVALID_ARGUMENT (found
// before the first iteration when the trip count alone decides), so that a
// run-time value cannot make a node run without bound.
inline constexpr int64_t kMaxLoopIterations = int64_t{1} << 20;

// The most subgraph runs (Loop and Scan iterations) one
// outermost control-flow node may cause, nested ones included: without a
// total, a Loop of 2^20 iterations around another would run 2^40 bodies and
// hold its device for days. Beyond it, INVALID_ARGUMENT.
inline constexpr int64_t kMaxSubgraphRuns = int64_t{1} << 22;

// Tests: lowers kMaxSubgraphRuns to `limit` for control-flow nodes computed
// on the calling thread while the object lives (reaching the real limit
// takes seconds). Not thread-safe across threads; not for production code.
class ScopedSubgraphRunLimitForTesting {
 public:
  explicit ScopedSubgraphRunLimitForTesting(int64_t limit);
  ~ScopedSubgraphRunLimitForTesting();
  ScopedSubgraphRunLimitForTesting(const ScopedSubgraphRunLimitForTesting&) =
      delete;
  ScopedSubgraphRunLimitForTesting& operator=(
      const ScopedSubgraphRunLimitForTesting&) = delete;

 private:
  const int64_t previous_;
};

// The most elements one Loop or Scan scan output may hold (the iterations'
// values stacked; for an opset-8 Scan, every batch entry's together):
// beyond it, INVALID_ARGUMENT, as for the generating ops. Checked as the
// iterations run, so that the values are never all held first.
inline constexpr int64_t kMaxScanOutputElements = int64_t{1} << 31;

// Tests: lowers kMaxScanOutputElements to `limit` on the calling thread
// while the object lives (reaching the real limit needs 8 GiB or more).
// Not thread-safe across threads; not for production code.
class ScopedScanOutputLimitForTesting {
 public:
  explicit ScopedScanOutputLimitForTesting(int64_t limit);
  ~ScopedScanOutputLimitForTesting();
  ScopedScanOutputLimitForTesting(const ScopedScanOutputLimitForTesting&) =
      delete;
  ScopedScanOutputLimitForTesting& operator=(
      const ScopedScanOutputLimitForTesting&) = delete;

 private:
  const int64_t previous_;
};

}  // namespace glint::cpu

#endif  // GLINT_DEVICES_CPU_CONTROL_FLOW_H_
