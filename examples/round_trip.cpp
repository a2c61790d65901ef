// A snapshot -> restore -> reset round trip through one prepared transfer.
//
// Two request slots hold live rows 1 and 2. Request 0 has consumed 10 tokens
// (page size 4, so its last KV page is half full): the snapshot copies its row
// into snapshot row 3 and saves that partial page into the row's `kv` region.
// The cache page is then overwritten, the snapshot is restored into request 1's
// live row and page, and finally request 0's row is reset.

#include <statexfer/statexfer.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Host = Kokkos::HostSpace;

std::string hex(const std::uint8_t* p, int n) {
  std::string s;
  char buf[4];
  for (int i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%02x ", p[i]);
    s += buf;
  }
  return s;
}

template <class PoolHost, class CacheHost>
void show(const char* title, const PoolHost& pool, const CacheHost& cache, std::int64_t kv, std::int64_t ssm) {
  std::printf("%s\n", title);
  for (int row = 1; row <= 3; ++row)
    std::printf("  row %d  consumed %-3lld ssm %s kv %s\n", row,
                static_cast<long long>(*reinterpret_cast<const std::int64_t*>(&pool(row, 0))),
                hex(&pool(row, ssm), 4).c_str(), hex(&pool(row, kv), 4).c_str());
  for (int page = 0; page < 2; ++page) std::printf("  cache page %d  %s\n", page, hex(&cache(page, 0), 4).c_str());
}

void print_errors(const char* what, const statexfer::StateCommands<Exec>& c, int n) {
  auto errors = Kokkos::create_mirror_view_and_copy(Host(), c.errors);
  std::printf("%s:", what);
  for (int i = 0; i < n; ++i) std::printf(" %s", statexfer::command_error_name(errors(i)));
  std::printf("\n");
}

}  // namespace

int main(int argc, char* argv[]) {
  Kokkos::initialize(argc, argv);
  {
    constexpr std::int64_t capacity = 2, page_tokens = 4, width = 4, kv_bytes = 8;
    const auto layout = statexfer::StateLayout::pack({{"consumed_tokens", 8, statexfer::DType::int64},
                                                      {"ssm", 24, statexfer::DType::float32},
                                                      {"kv", kv_bytes, statexfer::DType::uint8}});
    // Rows: 0 null, 1-2 live (request slots 0 and 1), 3 snapshot.
    statexfer::StatePool<Exec> pool(layout, 4, 8);
    const std::int64_t kv = layout.region("kv").offset, ssm = layout.region("ssm").offset;

    statexfer::PageBinding<Exec>::cache_view cache("example::kv_cache", 8, kv_bytes);
    statexfer::PageTable<Exec> tables("example::page_tables", capacity, width);
    statexfer::StateRows<Exec> state_rows("example::state_rows", capacity, 8);
    auto requests = statexfer::RequestState<Exec>::allocate(capacity);
    auto commands = statexfer::StateCommands<Exec>::allocate(capacity);

    // Host set-up: live rows, consumed tokens, page tables, recognisable bytes.
    auto pool_h = Kokkos::create_mirror_view(pool.backing());
    auto cache_h = Kokkos::create_mirror_view(cache);
    auto tables_h = Kokkos::create_mirror_view(tables);
    auto rows_h = Kokkos::create_mirror_view(state_rows);
    auto consumed_h = Kokkos::create_mirror_view(requests.consumed_tokens);
    for (std::int64_t r = 0; r < 4; ++r)
      for (std::int64_t b = 0; b < layout.row_bytes(); ++b) pool_h(r, b) = static_cast<std::uint8_t>(0x10 * r + b % 16);
    *reinterpret_cast<std::int64_t*>(&pool_h(1, 0)) = 10;  // request 0's row: 10 tokens
    *reinterpret_cast<std::int64_t*>(&pool_h(2, 0)) = 3;
    *reinterpret_cast<std::int64_t*>(&pool_h(3, 0)) = 0;
    for (std::int64_t p = 0; p < 8; ++p)
      for (std::int64_t b = 0; b < kv_bytes; ++b) cache_h(p, b) = static_cast<std::uint8_t>(0xa0 + p);
    for (std::int64_t s = 0; s < capacity; ++s) {
      rows_h(s, 0) = 1 + s;
      for (std::int64_t l = 0; l < width; ++l) tables_h(s, l) = static_cast<std::int32_t>(s * width + l) % 8;
    }
    tables_h(0, 2) = 0;  // request 0's page at token 10 (logical page 2) is physical page 0
    tables_h(1, 2) = 1;  // request 1's is physical page 1
    consumed_h(0, 0) = 10;
    consumed_h(1, 0) = 3;
    Kokkos::deep_copy(pool.backing(), pool_h);
    Kokkos::deep_copy(cache, cache_h);
    Kokkos::deep_copy(tables, tables_h);
    Kokkos::deep_copy(state_rows, rows_h);
    Kokkos::deep_copy(requests.consumed_tokens, consumed_h);

    statexfer::TransferConfig<Exec> config;
    config.pages = {{"kv", cache}};
    config.page_tokens = page_tokens;
    config.state_rows = state_rows;
    config.requests = requests;
    statexfer::PreparedStateTransfer<Exec> transfer(pool, commands, tables, config);
    transfer.prepare();
    std::printf("statexfer example on %s: %lld-byte rows, page of %lld tokens\n", Exec::name(),
                static_cast<long long>(layout.row_bytes()), static_cast<long long>(page_tokens));

    // The host writes each batch into one CommandBatch; upload() copies it in one go.
    statexfer::CommandBatch<Exec> batch(capacity);
    auto step = [&](const char* title, const std::vector<statexfer::Command>& commands_of_step) {
      batch.clear();
      for (const auto& c : commands_of_step) batch.push_back(c);
      commands.upload(Exec(), batch);
      transfer.validate();
      transfer.apply();
      Kokkos::fence();
      Kokkos::deep_copy(pool_h, pool.backing());
      Kokkos::deep_copy(cache_h, cache);
      show(title, pool_h, cache_h, kv, ssm);
      print_errors("  errors", commands, static_cast<int>(batch.size()));
    };

    show("initial state", pool_h, cache_h, kv, ssm);
    // Snapshot request 0 (row 1, 10 tokens) into row 3: row copy + partial page 0 into row 3's kv.
    step("snapshot slot 0 -> row 3", {statexfer::Command::snapshot(0, 1, 3, 10)});
    // Restore row 3 into request 1's live row 2: row copy + the saved kv bytes into request 1's page 1.
    step("restore row 3 -> slot 1", {statexfer::Command::restore(1, 3, 2, 10)});
    // Reset request 0's row. The second command names the wrong endpoint: it is refused and writes nothing.
    step("reset slot 0, snapshot slot 1 with a wrong endpoint",
         {statexfer::Command::reset(0, 1), statexfer::Command::snapshot(1, 2, 3, 11)});
  }
  Kokkos::finalize();
  return 0;
}
