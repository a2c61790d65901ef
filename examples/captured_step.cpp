// One serving step as an engine runs it: the host writes a batch of commands,
// uploads it, and one prepared transfer validates and applies it on the device.
// On a CUDA build validate() + apply() are captured once into a CUDA graph on
// the execution space instance's stream and replayed every step; on host
// backends the same two calls run directly.
//
// Request slots 0 and 1 hold live rows 1 and 2, row 3 is a snapshot row.
// Step 1 snapshots slot 0 (40 tokens, so its KV page 2 is half full) into row 3;
// step 2 restores row 3 into slot 1 and resets slot 0 in one batch; step 3 sends
// a snapshot whose endpoint is wrong, which validate() refuses (code 3).
// Exits 1 if a code or a byte differs from what the contract says.

#include <statexfer/statexfer.hpp>

#include <cstdio>
#include <cstring>
#include <vector>

#ifdef KOKKOS_ENABLE_CUDA
#include <cuda_runtime.h>
#endif

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
constexpr std::int64_t capacity = 2, rows = 4, pages = 8, page_tokens = 16, width = 4;
constexpr std::int64_t ssm_bytes = 4096, kv_bytes = 256;

// A host copy of a View (a new allocation, also on host backends).
template <class View>
auto host_copy(const View& v) {
  auto h = Kokkos::create_mirror(v);
  Kokkos::deep_copy(h, v);
  return h;
}

// Host set-up: recognisable row and page bytes, live rows, page tables, 40 and 7 tokens consumed.
template <class Pool, class Cache, class Tables, class Rows, class Consumed>
void fill(const Pool& pool, const Cache& cache, const Tables& tables, const Rows& state_rows,
          const Consumed& consumed) {
  auto p = Kokkos::create_mirror_view(pool);
  auto c = Kokkos::create_mirror_view(cache);
  auto t = Kokkos::create_mirror_view(tables);
  auto s = Kokkos::create_mirror_view(state_rows);
  auto n = Kokkos::create_mirror_view(consumed);
  for (std::size_t r = 0; r < p.extent(0); ++r)
    for (std::size_t b = 8; b < p.extent(1); ++b) p(r, b) = static_cast<std::uint8_t>(0x10 * r + b % 7);
  for (std::size_t q = 0; q < c.extent(0); ++q)
    for (std::size_t b = 0; b < c.extent(1); ++b) c(q, b) = static_cast<std::uint8_t>(0xa0 + q);
  const std::int64_t tokens[capacity] = {40, 7};
  for (std::int64_t slot = 0; slot < capacity; ++slot) {
    s(slot, 0) = 1 + slot;  // the slot's live row
    n(slot, 0) = tokens[slot];
    std::memcpy(&p(1 + slot, 0), &tokens[slot], 8);  // the row's consumed_tokens region
    for (std::int64_t l = 0; l < width; ++l) t(slot, l) = static_cast<std::int32_t>(slot * width + l);
  }
  Kokkos::deep_copy(pool, p);
  Kokkos::deep_copy(cache, c);
  Kokkos::deep_copy(tables, t);
  Kokkos::deep_copy(state_rows, s);
  Kokkos::deep_copy(consumed, n);
}

int run(const Exec& exec) {
  // --- set-up: once, before serving -----------------------------------------
  const auto layout = statexfer::StateLayout::pack({{"consumed_tokens", 8, statexfer::DType::int64},
                                                    {"ssm", ssm_bytes, statexfer::DType::bfloat16},
                                                    {"kv", kv_bytes, statexfer::DType::uint8}});
  statexfer::StatePool<Exec> pool(layout, rows, pages);  // row 0 null, 1-2 live, 3 snapshot
  statexfer::PageBinding<Exec>::cache_view kv_cache("example::kv_cache", pages, kv_bytes);
  statexfer::PageTable<Exec> tables("example::page_tables", capacity, width);
  statexfer::StateRows<Exec> state_rows("example::state_rows", capacity, 8);
  auto requests = statexfer::RequestState<Exec>::allocate(capacity);
  auto commands = statexfer::StateCommands<Exec>::allocate(capacity);
  fill(pool.backing(), kv_cache, tables, state_rows, requests.consumed_tokens);

  statexfer::TransferConfig<Exec> config;
  config.pages = {{"kv", kv_cache}};  // a partial page at a prefix end is saved in region "kv"
  config.page_tokens = page_tokens;
  config.state_rows = state_rows;
  config.requests = requests;
  statexfer::PreparedStateTransfer<Exec> transfer(pool, commands, tables, config);  // every host check

  transfer.prepare(exec);  // host work and first launches, outside any capture; binds exec

#ifdef KOKKOS_ENABLE_CUDA
  const cudaStream_t stream = exec.cuda_stream();
  cudaGraph_t graph;
  cudaGraphExec_t step_graph;
  cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
  transfer.validate(exec);  // tensor parallel: combine the ranks' errors here
  transfer.apply(exec);
  cudaStreamEndCapture(stream, &graph);
  cudaGraphInstantiate(&step_graph, graph, 0);
#endif

  // --- every step ------------------------------------------------------------
  statexfer::CommandBatch<Exec> batch(capacity);  // pinned host memory on GPUs
  auto step = [&](const std::vector<statexfer::Command>& step_commands) {
    batch.clear();
    for (const auto& c : step_commands) batch.push_back(c);
    commands.upload(exec, batch);  // one asynchronous copy on exec
#ifdef KOKKOS_ENABLE_CUDA
    cudaGraphLaunch(step_graph, stream);  // validate + apply, read the uploaded arrays afresh
#else
    transfer.validate(exec);
    transfer.apply(exec);
#endif
    exec.fence();  // here only to read the results; an engine goes on with its model
    return host_copy(commands.errors);
  };

  const std::int64_t s0_row = 1, s1_row = 2, snapshot_row = 3;
  const auto before = host_copy(pool.backing());
  auto e1 = step({statexfer::Command::snapshot(0, s0_row, snapshot_row, 40)});
  auto e2 = step({statexfer::Command::restore(1, snapshot_row, s1_row, 40), statexfer::Command::reset(0, s0_row)});
  auto e3 = step({statexfer::Command::snapshot(1, s1_row, snapshot_row, 41)});  // slot 1 consumed 7 tokens, not 41

  // --- check what the contract says happened ---------------------------------
  const auto after = host_copy(pool.backing());
  const auto cache = host_copy(kv_cache);
  const std::int64_t ssm = layout.region("ssm").offset, kv = layout.region("kv").offset;
  const bool codes = e1(0) == 0 && e2(0) == 0 && e2(1) == 0 && e3(0) == 3;
  // Slot 0's partial page (logical page 40 / 16 = 2, physical page 2) went into row 3's "kv" and then
  // into slot 1's physical page 6; row 2 holds row 1's former state; row 1 is zero.
  const bool bytes = std::memcmp(&after(s1_row, ssm), &before(s0_row, ssm), ssm_bytes) == 0 &&
                     after(snapshot_row, kv) == 0xa2 && cache(6, 0) == 0xa2 && cache(6, kv_bytes - 1) == 0xa2 &&
                     after(s0_row, ssm) == 0 && after(s0_row, ssm + ssm_bytes - 1) == 0;
  std::printf("captured_step on %s: %s %s / %s %s / %s\n", Exec::name(), statexfer::command_error_name(e1(0)),
              statexfer::command_error_name(e2(0)), statexfer::command_error_name(e2(1)),
              statexfer::command_error_name(e3(0)), codes && bytes ? "as the contract says" : "MISMATCH");

#ifdef KOKKOS_ENABLE_CUDA
  cudaGraphExecDestroy(step_graph);
  cudaGraphDestroy(graph);
#endif
  return codes && bytes ? 0 : 1;
}

}  // namespace

int main(int argc, char* argv[]) {
  Kokkos::initialize(argc, argv);
  int status = 1;
  {
#ifdef KOKKOS_ENABLE_CUDA
    cudaStream_t stream = nullptr;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    {
      const Exec exec(stream);  // the engine's stream
      status = run(exec);
    }
    cudaStreamDestroy(stream);
#else
    status = run(Exec());
#endif
  }  // every View is gone before finalize
  Kokkos::finalize();
  return status;
}
