#ifndef STATEXFER_TEST_ROW_CLAIMS_HPP
#define STATEXFER_TEST_ROW_CLAIMS_HPP

// Row claims (docs/CONTRACT.md §15): a step's transfer and a host-tier
// transfer over one pool and host tier, sharing one RowClaims, as an engine
// runs them on two streams. A batch is "in flight" from its validate() to the
// end of its apply(); here the tier batch is validated, the step batch runs
// whole, then the tier batch applies, so that every hazard of §15 meets the
// step deterministically: a restore from a row being onloaded, a snapshot or
// reset over a row being offloaded, a host row reused while an offload writes
// it. The refused command gets code 7 and writes nothing, the others apply, a
// refused row keeps none of its claims, and apply() frees every claim (every
// design), after which the same commands apply.

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <statexfer/statexfer.hpp>

#include "common/batch_fixture.hpp"

namespace {
namespace claims_test {

namespace ft = statexfer::test;
using Exec = TEST_EXECSPACE;
using statexfer::Command;

constexpr std::int64_t host_rows = 6;

/// One transfer's own arrays over the shared pool, tier and claims.
struct Side {
  statexfer::StateCommands<Exec> commands;
  statexfer::PageTable<Exec> tables;
  statexfer::StateRows<Exec> state_rows;
  statexfer::RequestState<Exec> requests;
  std::unique_ptr<statexfer::PreparedStateTransfer<Exec>> transfer;
  std::int64_t capacity = 0;

  void run_validate(const std::vector<Command>& batch) {
    statexfer::CommandBatch<Exec> b(capacity);
    for (const Command& c : batch) b.push_back(c);
    commands.upload(Exec(), b);
    transfer->validate(Exec());
    Exec().fence();
  }
  std::vector<std::int32_t> errors() const { return ft::download(commands.errors); }
};

struct Rig {
  statexfer::StatePool<Exec> pool;
  statexfer::HostTier<Exec> host;
  statexfer::RowClaims<Exec> claims;
  typename statexfer::PageBinding<Exec>::cache_view kv;
  Side step, tier, other;
  std::vector<std::uint8_t> pool_h, host_h;

  /// A step transfer of capacity `c`; `design` for the tier transfer's apply().
  Rig(std::int64_t c, statexfer::ApplyDesign design, bool claimed = true) {
    const std::int64_t rows = c + 12;
    pool = statexfer::StatePool<Exec>(ft::test_layout(), rows, 16);
    host = statexfer::HostTier<Exec>(ft::test_layout(), host_rows);
    if (claimed) claims = statexfer::RowClaims<Exec>(pool, host);
    kv = decltype(kv)("kv", 16, ft::kv_bytes);
    pool_h.resize(static_cast<std::size_t>(rows * ft::test_row_bytes));
    host_h.resize(static_cast<std::size_t>(host_rows * ft::test_row_bytes));
    for (std::size_t i = 0; i < pool_h.size(); ++i) pool_h[i] = static_cast<std::uint8_t>(i * 7 + 3);
    for (std::size_t i = 0; i < host_h.size(); ++i) host_h[i] = static_cast<std::uint8_t>(i * 13 + 101);
    for (std::int64_t r = 0; r < rows; ++r) set_consumed(pool_h, r, 8);  // endpoints on a page boundary: no pages
    for (std::int64_t r = 0; r < host_rows; ++r) set_consumed(host_h, r, 8);
    ft::upload(pool.backing(), pool_h);
    ft::upload(host.backing(), host_h);
    make(step, c, {});
    statexfer::TransferOptions tier_options;
    tier_options.apply = design;
    make(tier, 4, tier_options);
    make(other, 4, {});
  }

  static void set_consumed(std::vector<std::uint8_t>& image, std::int64_t row, std::int64_t v) {
    std::memcpy(image.data() + row * ft::test_row_bytes + ft::off_consumed, &v, sizeof(v));
  }

  void make(Side& s, std::int64_t c, const statexfer::TransferOptions& options) {
    s.capacity = c;
    s.commands = statexfer::StateCommands<Exec>::allocate(c);
    s.tables = statexfer::PageTable<Exec>("tables", c, 4);
    s.state_rows = statexfer::StateRows<Exec>("state_rows", c, 8);
    s.requests = statexfer::RequestState<Exec>::allocate(c);
    std::vector<std::int64_t> state(static_cast<std::size_t>(c * 8), 0), consumed(static_cast<std::size_t>(c), 8);
    for (std::int64_t i = 0; i < c; ++i) state[i * 8] = 1 + i;  // slot i's live row
    ft::upload(s.state_rows, state);
    ft::upload(s.requests.consumed_tokens, consumed);
    statexfer::TransferConfig<Exec> config;
    config.pages = {{"kv", kv}};
    config.page_tokens = 4;
    config.state_rows = s.state_rows;
    config.requests = s.requests;
    config.host_tier = host;
    config.claims = claims;
    config.options = options;
    s.transfer = std::make_unique<statexfer::PreparedStateTransfer<Exec>>(pool, s.commands, s.tables, config);
    s.transfer->prepare(Exec());
  }

  std::vector<std::int32_t> held() const { return ft::download(claims.claims()); }
  std::vector<std::uint8_t> device_row(std::int64_t r) const {
    const auto all = ft::download(pool.backing());
    return {all.begin() + r * ft::test_row_bytes, all.begin() + (r + 1) * ft::test_row_bytes};
  }
  std::vector<std::uint8_t> host_row(std::int64_t r) const {
    const auto all = ft::download(host.backing());
    return {all.begin() + r * ft::test_row_bytes, all.begin() + (r + 1) * ft::test_row_bytes};
  }
  std::vector<std::uint8_t> image_row(const std::vector<std::uint8_t>& image, std::int64_t r) const {
    return {image.begin() + r * ft::test_row_bytes, image.begin() + (r + 1) * ft::test_row_bytes};
  }
};

std::vector<std::int32_t> codes(std::int64_t c, std::vector<std::int32_t> leading) {
  leading.resize(static_cast<std::size_t>(c), 0);
  return leading;
}

}  // namespace claims_test

// The three hazards of §15 with the tier batch in flight, at a step capacity of
// 4 and 128 (the pair compares) and 512 (sorted), for every apply() design of
// the tier transfer.
TEST(TEST_CATEGORY, row_claims_refuse_the_hazards_of_a_batch_in_flight) {
  using namespace claims_test;
  using statexfer::ApplyDesign;
  for (const std::int64_t c : {4, 128, 512})
    for (const ApplyDesign design :
         {ApplyDesign::compact, ApplyDesign::flat_grid, ApplyDesign::teams, ApplyDesign::persistent}) {
      SCOPED_TRACE("step capacity " + std::to_string(c) + ", tier apply " + statexfer::to_string(design));
      Rig rig(c, design);
      const std::int64_t rows = rig.pool.rows();
      // In flight: an onload into device row 7 (host row 2), an offload reading
      // device row 9 into host row 4, an offload of slot 2's live row 3 into host row 1.
      rig.tier.run_validate({Command::onload(2, 7, 8), Command::offload(9, 4, 8), Command::offload(3, 1, 8)});
      ASSERT_EQ(rig.tier.errors(), codes(4, {}));
      std::vector<std::int32_t> held = rig.held();
      EXPECT_EQ(held[7], -1) << "the onload writes device row 7";
      EXPECT_EQ(held[9], 1) << "the offload reads device row 9";
      EXPECT_EQ(held[rows + 4], -1) << "the offload writes host row 4";

      // The step: a restore from row 7 (being onloaded), a snapshot into row 9
      // (being offloaded), a reset of row 3 (being offloaded), a restore from
      // host row 4 (being written), a restore reading row 9 beside the offload
      // (two readers), a snapshot of slot 1 into row 10 (apart from all).
      rig.step.run_validate({Command::restore(0, 7, 1, 8), Command::snapshot(1, 2, 9, 8), Command::reset(2, 3),
                             Command::restore_from_host(3, 4, 4, 8)});
      EXPECT_EQ(rig.step.errors(), codes(c, {7, 7, 7, 7}));
      held = rig.held();
      EXPECT_EQ(held[2], 0) << "the refused snapshot keeps no read claim on its live row";
      EXPECT_EQ(held[1], 0);
      rig.step.transfer->apply(Exec());
      Exec().fence();
      for (const std::int64_t r : {1, 2, 3, 4, 9})
        EXPECT_EQ(rig.device_row(r), rig.image_row(rig.pool_h, r))
            << "device row " << r << " written by a refused command";

      // Readers share: a restore from row 9 and a snapshot into row 10 apply.
      rig.step.run_validate({Command::restore(0, 9, 1, 8), Command::snapshot(1, 2, 10, 8)});
      EXPECT_EQ(rig.step.errors(), codes(c, {}));
      rig.step.transfer->apply(Exec());
      Exec().fence();
      EXPECT_EQ(rig.device_row(1), rig.image_row(rig.pool_h, 9));
      EXPECT_EQ(rig.device_row(10), rig.image_row(rig.pool_h, 2));
      // Another transfer may not write host row 4 either, nor read host row 2 while... (it only reads: allowed).
      rig.other.run_validate({Command::offload(11, 4, 8), Command::onload(2, 8, 8)});
      EXPECT_EQ(rig.other.errors(), codes(4, {7, 0}));
      rig.other.transfer->apply(Exec());
      Exec().fence();
      EXPECT_EQ(rig.device_row(8), rig.image_row(rig.host_h, 2));

      // The tier batch lands and frees its claims: every claim is 0, and the refused commands now apply.
      rig.tier.transfer->apply(Exec());
      Exec().fence();
      EXPECT_EQ(rig.held(), std::vector<std::int32_t>(static_cast<std::size_t>(rows + host_rows), 0));
      EXPECT_EQ(rig.device_row(7), rig.image_row(rig.host_h, 2));
      EXPECT_EQ(rig.host_row(4), rig.image_row(rig.pool_h, 9));
      rig.step.run_validate({Command::restore(0, 7, 1, 8), Command::snapshot(1, 2, 9, 8), Command::reset(2, 3),
                             Command::restore_from_host(3, 4, 4, 8)});
      EXPECT_EQ(rig.step.errors(), codes(c, {}));
      rig.step.transfer->apply(Exec());
      Exec().fence();
      EXPECT_EQ(rig.device_row(3), std::vector<std::uint8_t>(ft::test_row_bytes, 0)) << "the reset applies";
      EXPECT_EQ(rig.held(), std::vector<std::int32_t>(static_cast<std::size_t>(rows + host_rows), 0));
    }
}

// Without claims nothing is refused (the caller orders the streams); with
// claims one launch is never used (a block deciding a row could not claim it
// for the others), and the constructor refuses claims of another pool or tier.
TEST(TEST_CATEGORY, row_claims_construction) {
  using namespace claims_test;
  {
    Rig rig(4, statexfer::ApplyDesign::automatic, /*claimed=*/false);
    rig.tier.run_validate({Command::onload(2, 7, 8)});
    rig.step.run_validate({Command::restore(0, 7, 1, 8)});
    EXPECT_EQ(rig.step.errors(), codes(4, {})) << "no claims: no code 7";
    rig.step.transfer->apply(Exec());
    rig.tier.transfer->apply(Exec());
  }
  Rig rig(4, statexfer::ApplyDesign::automatic);
  EXPECT_EQ(rig.step.transfer->launch_plan().validate_and_apply, statexfer::FusedDesign::two_launches);
  for (const auto design :
       {statexfer::FusedDesign::teams, statexfer::FusedDesign::flat_grid, statexfer::FusedDesign::persistent}) {
    Side s;
    statexfer::TransferOptions o;
    o.validate_and_apply = design;
    rig.make(s, 4, o);
    EXPECT_EQ(s.transfer->launch_plan().validate_and_apply, statexfer::FusedDesign::two_launches)
        << statexfer::to_string(design);
  }
  // Claims of another pool, of the pool without its tier, and a tier without claims for it.
  const statexfer::StatePool<Exec> other_pool(ft::test_layout(), rig.pool.rows(), 16);
  auto config_with = [&](const statexfer::RowClaims<Exec>& claims, const statexfer::HostTier<Exec>& tier) {
    statexfer::TransferConfig<Exec> config;
    config.pages = {{"kv", rig.kv}};
    config.page_tokens = 4;
    config.state_rows = rig.step.state_rows;
    config.requests = rig.step.requests;
    config.host_tier = tier;
    config.claims = claims;
    return config;
  };
  const auto build = [&](const statexfer::RowClaims<Exec>& claims, const statexfer::HostTier<Exec>& tier) {
    (void)statexfer::PreparedStateTransfer<Exec>(rig.pool, rig.step.commands, rig.step.tables,
                                                 config_with(claims, tier));
  };
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>([&] { build(statexfer::RowClaims<Exec>(other_pool), rig.host); },
                                                       {"claims", "another pool"}));
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>([&] { build(statexfer::RowClaims<Exec>(rig.pool), rig.host); },
                                                       {"claims", "another host tier"}));
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>([&] { build(rig.claims, statexfer::HostTier<Exec>()); },
                                                       {"claims", "another host tier"}));
  EXPECT_NO_THROW(build(rig.claims, rig.host));
  // A claim's code has a name and combines after 6: a command refused by a claim on one rank applies on none.
  EXPECT_STREQ(statexfer::to_string(statexfer::CommandError::row_in_use), "row_in_use");
  EXPECT_EQ(statexfer::combine_error_codes(0, 7), 7);
  EXPECT_EQ(statexfer::combine_error_codes(7, 6), 6);
  EXPECT_EQ(statexfer::combine_error_codes(7, 4), 4);
}

}  // namespace

#endif
