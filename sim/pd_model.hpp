#ifndef STATEXFER_SIM_PD_MODEL_HPP
#define STATEXFER_SIM_PD_MODEL_HPP

// --pd's model: the sharded description of a real model's row and the bytes
// the simulated model writes (pd_model.cpp).

#include <cstdint>
#include <vector>

#include <statexfer/sharding.hpp>

#include "pd.hpp"
#include "workload.hpp"

namespace statexfer::sim {

/// The 64-bit prefix key of a token prefix (positive, never 0).
std::int64_t pd_key(const PrefixKey& key);

/// The whole model's row (model.whole()) of the state `seed` at `endpoint`, keyed `key`.
void write_whole(const statexfer::ModelLayout& model, std::uint64_t seed, std::int64_t endpoint, std::int64_t key,
                 std::vector<std::uint8_t>& out);

/// Rank `rank` of `tp`'s row of the same state, written straight into `out`
/// (model.local(tp, rank).row_bytes() bytes; the alignment gaps left alone).
void write_shard(const statexfer::ModelLayout& model, int tp, int rank, std::uint64_t seed, std::int64_t endpoint,
                 std::int64_t key, std::uint8_t* out);

}  // namespace statexfer::sim

#endif
