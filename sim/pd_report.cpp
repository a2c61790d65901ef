// statexfer-sim --pd: the run, its verdict, the summary and the JSON report.

#include "pd_run.hpp"

#include <Kokkos_Core.hpp>

#include "pd_rank.hpp"

namespace statexfer::sim {

PdOutcome run_pd(const Options& o, const Workload& w, MPI_Comm world) {
  PdRank rank(o, w, world);
  rank.run();
  PdOutcome out;
  out.stats = rank.totals();
  out.faults = rank.faults();
  out.model = rank.description();
  out.path = statexfer::to_string(rank.path());
  out.kokkos =
      std::string(PdRank::Exec::name()) + " (concurrency " + std::to_string(PdRank::Exec().concurrency()) + ")";
  out.ok = pd_verdict(out, rank.world_rank() == 0 ? stderr : nullptr);
  return out;
}

bool pd_verdict(const PdOutcome& out, std::FILE* err) {
  const PdStats& s = out.stats;
  bool ok = true;
  const auto fail = [&](const std::string& why) {
    if (err) std::fprintf(err, "statexfer-sim --pd: %s\n", why.c_str());
    ok = false;
  };
  if (s.mismatches > 0) fail(std::to_string(s.mismatches) + " row(s) differ from the oracle's shard");
  if (s.unexpected > 0) fail(std::to_string(s.unexpected) + " code(s) no injected fault explains");
  if (s.moved + s.decode_hits != s.requests)
    fail(std::to_string(s.moved + s.decode_hits) + " of " + std::to_string(s.requests) + " requests served");
  for (const PdFault& f : out.faults) {
    const std::string name = std::string(to_string(f.type)) + " on decode rank " + std::to_string(f.rank);
    if (f.injected_step < 0)
      fail(name + ": never injected (no request was moved from its step on)");
    else if (!f.refused)
      fail(name + ": not refused on every decode rank");
    else if (!f.untouched)
      fail(name + ": its row was written and published on a decode rank");
    else if (f.recomputed < 0)
      fail(name + ": its request was not moved again");
  }
  return ok;
}

namespace {

double per(double a, double b) { return b > 0 ? a / b : 0.0; }

}  // namespace

void print_pd_summary(std::FILE* f, const Options& o, const PdOutcome& out) {
  const PdStats& s = out.stats;
  std::fprintf(f, "statexfer-sim --pd: %s on %s\n", out.model.c_str(), out.kokkos.c_str());
  std::fprintf(f, "  instances    prefill TP %d, decode TP %d (MPI ranks 0..%d, %d..%d); transport %s\n",
               o.pd.prefill_tp, o.pd.decode_tp, o.pd.prefill_tp - 1, o.pd.prefill_tp,
               o.pd.prefill_tp + o.pd.decode_tp - 1, out.path.c_str());
  std::fprintf(f,
               "  requests     %lld in %lld steps (C = %lld): %lld moved, %lld served from the decode cache, "
               "%lld refused and moved again\n",
               static_cast<long long>(s.requests), static_cast<long long>(s.steps),
               static_cast<long long>(o.pd.capacity), static_cast<long long>(s.moved),
               static_cast<long long>(s.decode_hits), static_cast<long long>(s.refused));
  std::fprintf(f,
               "  prefill      %lld prompt tokens: %lld restored (%lld hits), %lld computed; %lld snapshots, "
               "%lld evictions\n",
               static_cast<long long>(s.prompt_tokens), static_cast<long long>(s.restored_tokens),
               static_cast<long long>(s.prefill_hits), static_cast<long long>(s.computed_tokens),
               static_cast<long long>(s.prefill_snapshots), static_cast<long long>(s.prefill_evictions));
  std::fprintf(f, "  decode cache %lld snapshots, %lld evictions\n", static_cast<long long>(s.decode_snapshots),
               static_cast<long long>(s.decode_evictions));
  std::fprintf(f, "  moved        %.1f MiB (%lld B of records per request, all pairs) in %lld transfers\n",
               static_cast<double>(s.bytes) / 1048576.0, static_cast<long long>(s.record_bytes),
               static_cast<long long>(s.transfers));
  const double gbps = per(static_cast<double>(s.bytes), s.transfer_s) / 1e9;
  std::fprintf(f, "  transfer     %.3f ms per request (%.3f ms per transfer), %.2f GB/s over the run\n",
               1e3 * per(s.transfer_s, static_cast<double>(s.moved + s.refused)),
               1e3 * per(s.transfer_s, static_cast<double>(s.transfers)), gbps);
  std::fprintf(f,
               "  bandwidth    C records of every pair: transport %.2f GB/s, plain %s send/recv %.2f GB/s "
               "(%.1f%%; %lld B, median of %lld)\n",
               s.transport_gbps, o.pd.transport == PdTransport::nccl ? "NCCL" : "MPI", s.plain_gbps,
               100 * per(s.transport_gbps, s.plain_gbps), static_cast<long long>(s.probe_bytes),
               static_cast<long long>(o.pd.plain_reps));
  if (o.cfg.verify)
    std::fprintf(f, "  verify       %lld rows against the oracle's reshard: %lld differ\n",
                 static_cast<long long>(s.rows_verified), static_cast<long long>(s.mismatches));
  for (const PdFault& x : out.faults)
    std::fprintf(f,
                 "  fault        %s on decode rank %d from step %lld: step %lld, request %lld, code %d, %s, %s, "
                 "moved again in step %lld\n",
                 to_string(x.type), x.rank, static_cast<long long>(x.step), static_cast<long long>(x.injected_step),
                 static_cast<long long>(x.request), static_cast<int>(x.code),
                 x.refused ? "refused on every decode rank" : "NOT refused everywhere",
                 x.untouched ? "nothing written or published" : "WRITTEN", static_cast<long long>(x.recomputed));
  std::fprintf(f, "  wall         %.2f s%s\n", s.wall_s, out.ok ? "" : "  (FAILED)");
}

nlohmann::json pd_report_json(const Options& o, const PdOutcome& out) {
  const PdStats& s = out.stats;
  nlohmann::json faults = nlohmann::json::array();
  for (const PdFault& x : out.faults)
    faults.push_back({{"kind", to_string(x.type)},
                      {"rank", x.rank},
                      {"step", x.step},
                      {"injected_step", x.injected_step},
                      {"request", x.request},
                      {"code", x.code},
                      {"refused", x.refused},
                      {"untouched", x.untouched},
                      {"recomputed_step", x.recomputed}});
  return {{"mode", "pd"},
          {"ok", out.ok},
          {"model", out.model},
          {"kokkos", out.kokkos},
          {"prefill_tp", o.pd.prefill_tp},
          {"decode_tp", o.pd.decode_tp},
          {"capacity", o.pd.capacity},
          {"cache_rows", o.pd.cache_rows},
          {"transport_path", out.path},
          {"requests", s.requests},
          {"steps", s.steps},
          {"transfers", s.transfers},
          {"moved", s.moved},
          {"decode_hits", s.decode_hits},
          {"refused", s.refused},
          {"unexpected_codes", s.unexpected},
          {"prefill",
           {{"prompt_tokens", s.prompt_tokens},
            {"restored_tokens", s.restored_tokens},
            {"computed_tokens", s.computed_tokens},
            {"hits", s.prefill_hits},
            {"snapshots", s.prefill_snapshots},
            {"evictions", s.prefill_evictions}}},
          {"decode_cache", {{"snapshots", s.decode_snapshots}, {"evictions", s.decode_evictions}}},
          {"bytes_moved", s.bytes},
          {"record_bytes_per_request", s.record_bytes},
          {"transfer_s", s.transfer_s},
          {"transfer_ms_per_request", 1e3 * per(s.transfer_s, static_cast<double>(s.moved + s.refused))},
          {"bandwidth",
           {{"bytes", s.probe_bytes},
            {"transport_gbps", s.transport_gbps},
            {"plain", o.pd.transport == PdTransport::nccl ? "nccl" : "mpi"},
            {"plain_send_recv_gbps", s.plain_gbps},
            {"share", per(s.transport_gbps, s.plain_gbps)},
            {"repetitions", o.pd.plain_reps}}},
          {"verify", {{"enabled", o.cfg.verify}, {"rows", s.rows_verified}, {"mismatches", s.mismatches}}},
          {"faults", faults},
          {"wall_s", s.wall_s}};
}

}  // namespace statexfer::sim
