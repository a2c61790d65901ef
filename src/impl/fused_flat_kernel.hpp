#ifndef STATEXFER_IMPL_FUSED_FLAT_KERNEL_HPP
#define STATEXFER_IMPL_FUSED_FLAT_KERNEL_HPP

// validate_and_apply() in one launch shaped like the flat apply
// (flat_apply_kernel.hpp): a block per chunk of a few KiB of one work item of
// one row, and every block decides its row itself. Its threads load the C
// rows' keys into team scratch, a thread a row as in ValidateFunctor's one
// team, while every thread already loads its words of the chunk as an
// operation 0 row tile would read them: that source follows from the command
// alone. After a barrier the thread holding the row's record decides it
// (row_check, the scan over the peers, finish_row) and shares the chunk's move;
// after a second, the threads store the words they hold when the move reads
// what they guessed, and copy as the flat apply does otherwise. A bad command
// still writes nothing (a load is not a write, and a guess reads only inside
// the pool's rows); the copy's loads are in flight during the validation's,
// and the many short blocks overlap one another's decisions (a block moves
// further chunks after its decision when prepare() asks: `rounds`). This is
// for few commands of large rows, where validate()'s launch ahead of apply()
// is most of what separates two launches from a copy.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "apply_kernel.hpp"
#include "device_types.hpp"
#include "flat_apply_kernel.hpp"
#include "validate_kernel.hpp"
#include "validate_pairs.hpp"
#include "wide_copy.hpp"

namespace statexfer::impl {

/// `Features`: the optional checks the transfer has (ValidateFunctor). `Words`:
/// 16-byte words a thread moves of its block's chunk in one round.
template <class ExecutionSpace, int Features = feature_every, int Words = 4>
struct FusedFlatFunctor {
  // Blocks of up to 512 threads (prepare() picks); 64 registers a thread hold
  // a row's record beside the guessed words, 128 with both optional parts
  // (whose records are the largest: 64 would spill them).
  static constexpr int max_block_threads = 512;
  using policy_type =
      Kokkos::TeamPolicy<ExecutionSpace,
                         Kokkos::LaunchBounds<max_block_threads, (Features & feature_all) == feature_all ? 1 : 2>>;
  using member_type = typename policy_type::member_type;
  static constexpr int words_per_thread = Words;

  ValidateFunctor<ExecutionSpace, Features> validate;
  Kokkos::View<const WorkItem*, typename ExecutionSpace::memory_space> items;
  Kokkos::View<std::int64_t**, Kokkos::LayoutRight, typename ExecutionSpace::memory_space> state_rows;  // remaps
  std::int32_t items_per_row = 1;
  std::int32_t chunk_shift = 0;  // log2 of the blocks a work item has
  std::int32_t chunk_bytes = 0;  // bytes of its item a block moves in a round (a multiple of 16)
  std::int32_t rounds = 1;       // a block's rounds: the first guessed, the others after its decision
  std::int32_t guess = 0;        // load the guessed words first: one round covers a chunk (GPUs)

  using limit_inputs_type = typename ValidateFunctor<ExecutionSpace, Features>::LimitInputs;

  /// What the deciding thread reads after the first barrier: its row's record,
  /// the limits' inputs and the work item (kept in team scratch rather than in
  /// registers across the barrier, which the guessed words need), then the move
  /// it shares after the second.
  struct BlockShared {
    RowRecord q;
    limit_inputs_type in;
    WorkItem item;
    ItemMove move;
    // The deciding thread's limits and plan, here rather than in registers beside the guessed words.
    ValidateLimits lim;
    RowPlan plan;
  };

  /// Team scratch: every row's PeerKeys, then the BlockShared.
  KOKKOS_INLINE_FUNCTION static std::size_t scratch_bytes(std::int64_t capacity) {
    return static_cast<std::size_t>(capacity) * sizeof(PeerKeys) + sizeof(BlockShared) + alignof(PeerKeys);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    static_assert(sizeof(PeerKeys) % alignof(BlockShared) == 0);
    const TransferShape& shape = validate.shape;
    const int c = static_cast<int>(shape.capacity);
    const int t = team.team_rank(), threads = team.team_size();
    auto* peers = static_cast<PeerKeys*>(team.team_scratch(0).get_shmem_aligned(
        c * sizeof(PeerKeys) + sizeof(BlockShared), static_cast<std::ptrdiff_t>(alignof(PeerKeys))));
    auto* shared = reinterpret_cast<BlockShared*>(peers + c);
    const std::int32_t b = team.league_rank();
    const std::int32_t w = b >> chunk_shift;
    const std::int32_t chunk = b - (w << chunk_shift);
    const std::int32_t r = w / items_per_row;
    const std::int32_t item_index = w - r * items_per_row;
    // Below twice the longest item (at most 2^30 bytes, a tile); past its item's end a block moves nothing.
    const std::int32_t offset = chunk * chunk_bytes * rounds;

    // One round of independent loads: what the guess needs of the item and
    // the command, the limits and the rows' records. Registers are what the
    // guessed words compete with, so the deciding thread alone loads the whole
    // item (a cached line by then) and keeps it in scratch.
    const WorkItem& item_ref = items(item_index);
    const std::int32_t kind = item_ref.kind;
    const std::int64_t item_offset = item_ref.offset, item_length = item_ref.length;
    const limit_inputs_type in = validate.limit_inputs();
    const std::int64_t src_slot = guess ? validate.source_slots(r) : 0;
    const std::int32_t op = guess ? validate.operation(r) : -1;
    for (int o = t; o < c; o += threads) {
      const RowRecord rec = validate.load_row(o);
      peers[o] = peer_keys<Features>(rec);
      if (o == r) shared->q = rec, shared->in = in, shared->item = item_ref;
    }
    // The guess: an operation 0 row tile reads its source row at the item's
    // offset when its code is 0. Only 16-byte words, only inside the pool's rows.
    Word16 v[Words]{};
    const std::uint8_t* guessed = nullptr;
    if (guess && kind == work_row && op == 0 && src_slot > 0 && src_slot < shape.rows && offset < item_length) {
      guessed = validate.row_bases.device + src_slot * shape.row_bytes + item_offset + offset;
      if ((reinterpret_cast<std::uintptr_t>(guessed) & 15) != 0) guessed = nullptr;
    }
    if (guessed != nullptr) {
      const std::int64_t left = item_length - offset;
      const int words = static_cast<int>((left < chunk_bytes ? left : chunk_bytes) >> 4);
      const Word16* KOKKOS_RESTRICT s = reinterpret_cast<const Word16*>(guessed);
      for (int j = 0; j < Words; ++j)
        if (t + j * threads < words) v[j] = s[t + j * threads];
    }
    team.team_barrier();
    if (t == r % threads) {  // the thread that loaded row r
      // Read from scratch where used: registers hold the guessed words.
      const RowRecord& q = shared->q;
      ValidateLimits& lim = shared->lim;
      lim = validate.limits(shared->in);
      const RowCheck k = row_check<Features>(q, r, lim);
      const OwnKeys own = own_keys(q, k);
      const bool narrow = shape.rows + shape.host_rows <= INT32_MAX;
      // Two peers in flight: the guessed words hold registers across the scan.
      constexpr bool commits = (Features & feature_commit) != 0;
      const int bits =
          k.check ? conflict_bits<commits, 2>(own, peers, r, static_cast<int>(lim.count), 0, 1, narrow) : 0;
      std::int32_t code;
      RowPlan& p = shared->plan;
      validate.finish(q, k, bits, lim, code, p);
      if (item_index == 0 && chunk == 0) {
        validate.errors(r) = code;
        validate.plan(r) = p;
        validate.record_commit(r, q, lim);
        // The row's one swap of state-row entries, which other blocks read:
        // docs/CONTRACT.md §13 says why no other row's code changes with it.
        if (code == 0 && (p.flags & plan_remap)) remap_state_rows(state_rows, p);
      }
      shared->move = item_move(p, code, shared->item);
    }
    team.team_barrier();
    const ItemMove m = shared->move;
    if (m.stamp) {
      if (t == 0 && offset == 0) stamp_key(m.dst, shared->q.key);
      return;
    }
    // The block's rounds, one decision for all of them: the first stores the
    // words this thread holds when the move reads what it guessed.
    for (int round = 0; round < rounds; ++round) {
      const std::int64_t at = offset + std::int64_t(round) * chunk_bytes;
      if (at >= m.length) return;
      const int n = static_cast<int>(m.length - at < chunk_bytes ? m.length - at : chunk_bytes);
      std::uint8_t* dst = m.dst + at;
      const std::uint8_t* src = m.src == nullptr ? nullptr : m.src + at;
      if constexpr (std::is_same_v<typename ExecutionSpace::memory_space, Kokkos::HostSpace>) {
        if (threads == 1) {  // hosts' teams of one (STATEXFER_VALIDATE_AND_APPLY=2 there): one round
          if (src == nullptr)
            std::memset(dst, 0, static_cast<std::size_t>(n));
          else
            std::memcpy(dst, src, static_cast<std::size_t>(n));
          continue;
        }
      }
      if (round == 0 && guessed != nullptr && src == guessed && (reinterpret_cast<std::uintptr_t>(dst) & 15) == 0) {
        // One round covers the chunk (prepare()).
        const int words = n >> 4;
        Word16* KOKKOS_RESTRICT d = reinterpret_cast<Word16*>(dst);
        for (int j = 0; j < Words; ++j)
          if (t + j * threads < words) d[t + j * threads] = v[j];
        if (t < (n & 15)) dst[(words << 4) + t] = src[(words << 4) + t];
      } else {
        flat_move_widest<Words>(dst, src, n, t, threads);  // 32 threads and more (prepare())
      }
    }
  }
};

}  // namespace statexfer::impl

#endif
