// CUDA graphs with a host tier (docs/CONTRACT.md §12): validate() + apply() and
// validate_and_apply() captured once (cudaStreamCaptureModeGlobal, which fails
// on any synchronisation or allocation) with a pinned host tier bound, then
// replayed with random batches mixing device commands, offloads, onloads and
// restores from the host tier, at capacities 16 (one validate kernel) and 128
// (the sorted validation); and with commits (§13) of both moves and prefix
// keys (§14), where each replay draws new accepted counts, at capacities 4 (the
// flat grid of validate_and_apply on Kokkos 4), 16 and 128. Every replay is
// held against the oracle: codes, commit positions, the pool, the host tier,
// both caches and the state rows.

#include <cuda/TestCuda_Category.hpp>

#include <cuda_runtime.h>

#include <cstdio>

#include <string>
#include <type_traits>
#include <vector>

#include <common/tier_fixture.hpp>

namespace {

using Exec = Kokkos::Cuda;
namespace ft = statexfer::test;

#define STATEXFER_TIER_CUDA_CHECK(call) ASSERT_EQ((call), cudaSuccess) << #call

void capture_and_replay_tiers(std::int64_t capacity, bool fused, int positions = 0,
                              statexfer::CommitMove move = statexfer::CommitMove::remap,
                              statexfer::CommandPlacement placement = statexfer::CommandPlacement::device) {
  const bool mapped = placement == statexfer::CommandPlacement::mapped;
  SCOPED_TRACE("capacity " + std::to_string(capacity) + (fused ? ", validate_and_apply" : "") +
               (positions > 0 ? std::string(", commits ") + statexfer::to_string(move) : "") +
               (mapped ? ", mapped commands" : ""));
  static_assert(std::is_same_v<statexfer::HostTier<Exec>::memory_space, Kokkos::CudaHostPinnedSpace>);
  cudaStream_t stream;
  STATEXFER_TIER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  {
    const Exec exec(stream);
    ft::TierOptions o;
    o.capacity = capacity;
    o.host_rows = capacity;
    o.cache_pages = 2 * capacity + 6;
    o.positions = positions;
    o.move = move;
    o.keys = positions > 0;
    o.placement = placement;
    ft::TierRig<Exec> rig(o, exec);  // prepare(exec)

    cudaGraph_t graph;
    STATEXFER_TIER_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    if (fused) {
      rig.transfer->validate_and_apply(exec);
    } else {
      rig.transfer->validate(exec);
      rig.transfer->apply(exec);
    }
    STATEXFER_TIER_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    std::size_t nodes = 0;
    STATEXFER_TIER_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
    std::vector<cudaGraphNode_t> list(nodes);
    STATEXFER_TIER_CUDA_CHECK(cudaGraphGetNodes(graph, list.data(), &nodes));
    // One launch where the plan says so (up to 64 commands, the teams up to 256 while a wave holds
    // them); else validate() (two launches where it sorts, above 256) and apply().
    const statexfer::LaunchPlan plan = rig.transfer->launch_plan();
    const bool one = fused && plan.validate_and_apply != statexfer::FusedDesign::two_launches;
    EXPECT_EQ(one, fused && capacity <= 128) << rig.transfer->launch_summary();
    const std::size_t want = one ? 1u : plan.sorted_validation ? 3u : 2u;
    EXPECT_EQ(nodes, want);
    for (auto n : list) {
      cudaGraphNodeType type;
      STATEXFER_TIER_CUDA_CHECK(cudaGraphNodeGetType(n, &type));
      EXPECT_EQ(type, cudaGraphNodeTypeKernel) << "only kernels: the host rows are moved by the kernels themselves";
    }
    cudaGraphExec_t instance;
    STATEXFER_TIER_CUDA_CHECK(cudaGraphInstantiate(&instance, graph, 0));

    ft::TierRng rng(0x71e4ca00ULL + static_cast<std::uint64_t>(capacity) * 2 + (fused ? 1 : 0));
    std::int64_t tier_applied = 0, commits_moved = 0;
    // Failures of this configuration alone (HasFailure() stays true for the test's later ones).
    const auto failures = [] {
      return ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count();
    };
    const int failures_before = failures();
    // Small capacities draw few commits that accept a draft a replay: more replays.
    const int replays = capacity < 16 ? 240 : 60;
    for (int rep = 0; rep < replays; ++rep) {
      // New memory, state rows and accepted counts each replay: the graph does not change with them.
      const ft::TierCommands k = ft::random_tier_batch(rng, rig, rep % 3 == 2);
      const std::vector<std::int32_t> accepted = rig.accepted_h;
      rig.upload_all(k);  // deep copies (they fence): new contents for the replay
      STATEXFER_TIER_CUDA_CHECK(cudaGraphLaunch(instance, stream));
      STATEXFER_TIER_CUDA_CHECK(cudaStreamSynchronize(stream));
      const std::vector<std::int32_t> codes = rig.check(k, "replay " + std::to_string(rep));
      for (std::int64_t r = 0; r < k.count && r < capacity; ++r) {
        const auto i = static_cast<std::size_t>(r);
        tier_applied += codes[i] == 0 && k.op[i] >= 2 && k.op[i] <= 4;
        commits_moved += codes[i] == 0 && k.op[i] == 5 && accepted[static_cast<std::size_t>(k.slot[i])] > 0;
      }
      ASSERT_EQ(failures(), failures_before) << "replay " << rep;
    }
    std::printf("[tier_capture] capacity %lld%s: %lld tier moves, %lld commits that moved a state applied\n",
                static_cast<long long>(capacity), fused ? " (validate_and_apply)" : "",
                static_cast<long long>(tier_applied), static_cast<long long>(commits_moved));
    EXPECT_GT(tier_applied, positions > 0 ? 10 : 30) << "too few tier moves applied to exercise the mapped host rows";
    if (positions > 0) EXPECT_GE(commits_moved, 3) << "too few commits moved a state";
    STATEXFER_TIER_CUDA_CHECK(cudaGraphExecDestroy(instance));
    STATEXFER_TIER_CUDA_CHECK(cudaGraphDestroy(graph));
  }
  STATEXFER_TIER_CUDA_CHECK(cudaStreamDestroy(stream));
}

TEST(cuda, tier_capture_validate_then_apply) {
  for (const std::int64_t capacity : {16, 128, 512}) capture_and_replay_tiers(capacity, false);
}

TEST(cuda, tier_capture_validate_and_apply) {
  for (const std::int64_t capacity : {16, 128, 512}) capture_and_replay_tiers(capacity, true);
}

// Commands in mapped pinned memory, which the replays read in place: the host
// writes each batch into it between replays (no copy in or outside the graph).
TEST(cuda, mapped_commands_capture) {
  for (const std::int64_t capacity : {4, 16, 128})
    for (const bool fused : {false, true})
      capture_and_replay_tiers(capacity, fused, 4, statexfer::CommitMove::remap, statexfer::CommandPlacement::mapped);
}

TEST(cuda, speculative_capture) {
  for (const auto move : {statexfer::CommitMove::remap, statexfer::CommitMove::copy})
    for (const std::int64_t capacity : {4, 16, 128})
      for (const bool fused : {false, true}) capture_and_replay_tiers(capacity, fused, 4, move);
}

}  // namespace
