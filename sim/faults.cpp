#include "faults.hpp"

#include <statexfer/commands.hpp>

namespace statexfer::sim {

StepFaults FaultInjector::inject(std::int64_t step, const Batch& batch) {
  StepFaults out;
  const auto count = static_cast<std::int64_t>(batch.size());
  for (Fault& f : faults_) {
    if (f.injected_step >= 0 || step < f.step) continue;
    for (std::int64_t i = 0; i < count; ++i) {
      const Command& c = batch[static_cast<std::size_t>(i)].cmd;
      const int kind = batch[static_cast<std::size_t>(i)].kind;
      const bool op = f.host ? c.op == statexfer::op_restore_from_host : c.op == statexfer::op_copy;
      if (!op || c.end % page_tokens_ == 0 || out.hits(i) || (f.kind >= 0 && kind != f.kind)) continue;
      f.injected_step = step;
      f.command = i;
      out.commands.emplace_back(f.rank, i);
      injected_++;
      if (f.rank == rank_) out.unmapped.emplace_back(c.slot, c.end / page_tokens_);
      break;
    }
  }
  return out;
}

std::int64_t FaultInjector::missed() const {
  std::int64_t n = 0;
  for (const Fault& f : faults_)
    if (f.injected_step < 0) n++;
  return n;
}

}  // namespace statexfer::sim
