#include "faults.hpp"

#include <stdexcept>

#include <statexfer/commands.hpp>

namespace statexfer::sim {

Fault parse_fault(const std::string& text) {
  Fault f;
  try {
    std::vector<std::string> parts;
    for (std::size_t b = 0;;) {
      const auto e = text.find(':', b);
      parts.push_back(text.substr(b, e == std::string::npos ? std::string::npos : e - b));
      if (e == std::string::npos) break;
      b = e + 1;
    }
    if (parts.size() < 2 || parts.size() > 3) throw std::invalid_argument(text);
    std::size_t used = 0;
    f.rank = std::stoi(parts[0], &used);
    if (used != parts[0].size()) throw std::invalid_argument(text);
    f.step = std::stoll(parts[1], &used);
    if (used != parts[1].size() || f.rank < 0 || f.step < 0) throw std::invalid_argument(text);
    if (parts.size() == 3) {
      const std::string& k = parts[2];
      if (k == "snapshot")
        f.kind = kind_snapshot;
      else if (k == "restore")
        f.kind = kind_restore;
      else if (k == "host-restore")
        f.kind = kind_restore, f.host = true;
      else if (k == "stale-position")
        f.type = FaultType::stale_position;
      else if (k == "accepted-range")
        f.type = FaultType::accepted_range;
      else if (k == "accepted-disagree")
        f.type = FaultType::accepted_disagree;
      else if (k == "recycled-key")
        f.type = FaultType::recycled_key;
      else if (k == "offload-race")
        f.type = FaultType::offload_race;
      else if (k != "any")
        throw std::invalid_argument(text);
    }
  } catch (const std::exception&) {
    throw std::invalid_argument(
        "expected RANK:STEP or RANK:STEP:KIND (snapshot, restore, host-restore, any, stale-position, "
        "accepted-range, accepted-disagree, recycled-key, offload-race), got '" +
        text + "'");
  }
  return f;
}

std::string fault_kind_name(const Fault& f) {
  switch (f.type) {
    case FaultType::page: return f.host ? "host-restore" : f.kind < 0 ? "any" : kind_name(f.kind);
    case FaultType::stale_position: return "stale-position";
    case FaultType::accepted_range: return "accepted-range";
    case FaultType::accepted_disagree: return "accepted-disagree";
    case FaultType::recycled_key: return "recycled-key";
    case FaultType::offload_race: return "offload-race";
  }
  return "?";
}

std::string hit_name(const Fault& f) {
  if (f.hit_kind < 0) return "none";
  return std::string(kind_name(f.hit_kind)) + (f.op == statexfer::op_restore_from_host ? " from host" : "");
}

StepFaults FaultInjector::inject(std::int64_t step, const Batch& batch, const std::vector<std::int32_t>& tables,
                                 const HostStateRows& state_rows) {
  StepFaults out;
  const auto count = static_cast<std::int64_t>(batch.size());
  const std::int64_t pt = g_.page_tokens;
  for (std::size_t fi = 0; fi < faults_.size(); ++fi) {
    Fault& f = faults_[fi];
    if (f.injected_step >= 0 || step < f.step) continue;
    for (std::int64_t i = 0; i < count; ++i) {
      const BatchEntry& b = batch[static_cast<std::size_t>(i)];
      const Command& c = b.cmd;
      if (out.hit(i)) continue;
      if (f.type == FaultType::offload_race) {  // the scheduler issued it (race_due()); nothing to change
        if (!b.race) continue;
        f.injected_step = step, f.command = i, f.op = c.operation, f.hit_kind = b.kind, f.slot = c.request_slot;
        f.commands = 1;
        out.hits.push_back({fi, f.rank, i, true});
        injected_++;
        break;
      }
      FaultPatch p;
      p.rank = f.rank;
      if (f.type == FaultType::page) {
        const bool op = f.host ? c.operation == statexfer::op_restore_from_host : c.operation == statexfer::op_copy;
        if (!op || c.expected_consumed % pt == 0 || (f.kind >= 0 && b.kind != f.kind)) continue;
        p.target = FaultPatch::page;
        p.index = c.request_slot;
        p.at = c.expected_consumed / pt;
        p.value = -1;
        p.original = tables[static_cast<std::size_t>(c.request_slot * g_.table_width + p.at)];
      } else if (f.type == FaultType::recycled_key) {
        if (b.kind != kind_restore) continue;
        p.target = c.operation == statexfer::op_restore_from_host ? FaultPatch::host_word : FaultPatch::pool_word;
        p.index = c.source;
        p.at = g_.key_offset;
        p.value = ~c.prefix_key;  // another prefix's key (of any length: the row's endpoint still matches)
        p.original = c.prefix_key;
      } else {
        if (b.kind != kind_commit || (f.type == FaultType::accepted_disagree && b.drafts < 1)) continue;
        const std::int64_t a = b.accepted;
        if (f.type == FaultType::stale_position) {
          p.target = FaultPatch::pool_word;
          p.index = state_rows(c.request_slot, a);  // the row acceptance selects
          p.at = g_.consumed_offset;
          p.value = c.expected_consumed + a - 1;  // an endpoint the verify did not leave there
          p.original = c.expected_consumed + a;
        } else {
          p.target = FaultPatch::accepted;
          p.index = c.request_slot;
          p.value = f.type == FaultType::accepted_range ? g_.positions + 1 : a < b.drafts ? a + 1 : a - 1;
          p.original = a;
        }
      }
      f.injected_step = step;
      f.command = i;
      f.op = c.operation;
      f.hit_kind = b.kind;
      f.slot = c.request_slot;
      f.commands = 1;
      out.hits.push_back({fi, f.rank, i});
      out.patches.push_back(p);
      injected_++;
      if (f.type == FaultType::recycled_key) {
        // Every other command that reads the row proves its key too: restores, offloads, onloads.
        const bool host = p.target == FaultPatch::host_word;
        for (std::int64_t o = 0; o < count; ++o) {
          const Command& d = batch[static_cast<std::size_t>(o)].cmd;
          const bool reads =
              host ? (d.operation == statexfer::op_onload || d.operation == statexfer::op_restore_from_host)
                   : (d.operation == statexfer::op_copy || d.operation == statexfer::op_offload);
          if (o != i && reads && d.source == c.source) {
            out.hits.push_back({fi, f.rank, o});
            f.commands++;
          }
        }
      }
      break;
    }
  }
  return out;
}

bool FaultInjector::race_due(std::int64_t step) const {
  bool race = false;
  for (const Fault& f : faults_) {
    if (f.injected_step >= 0 || step < f.step) continue;
    if (f.type != FaultType::offload_race) return false;  // the others first: no view changed beside the race
    race = true;
  }
  return race;
}

void FaultInjector::record(const StepFaults& step, const std::vector<std::int32_t>& codes) {
  for (const auto& h : step.hits) {
    Fault& f = faults_[h.fault];
    const std::int32_t code = codes[static_cast<std::size_t>(h.command)];
    if (h.command == f.command) {
      f.code = code;
      f.refused = code != 0;
    } else if (code == 0) {
      f.refused = false;
    }
  }
}

bool FaultInjector::settled(const Fault& f) {
  if (f.injected_step < 0) return false;
  if (f.type == FaultType::offload_race) return f.code == 0 || f.code == 7;
  return f.refused;
}

std::int64_t FaultInjector::missed() const {
  std::int64_t n = 0;
  for (const Fault& f : faults_)
    if (f.injected_step < 0) n++;
  return n;
}

std::int64_t FaultInjector::refused() const {
  std::int64_t n = 0;
  for (const Fault& f : faults_)
    if (f.injected_step >= 0 && f.refused) n++;
  return n;
}

std::int64_t FaultInjector::settled() const {
  std::int64_t n = 0;
  for (const Fault& f : faults_)
    if (settled(f)) n++;
  return n;
}

}  // namespace statexfer::sim
