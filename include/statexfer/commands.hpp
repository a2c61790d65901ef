#ifndef STATEXFER_COMMANDS_HPP
#define STATEXFER_COMMANDS_HPP

// A batch of snapshot / restore / reset commands, and the per-request state the
// commands refer to.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <statexfer/layout.hpp>

namespace statexfer {

/// Device-side validation result of one command (docs/CONTRACT.md §4). 0 means the command
/// applies; any other code means it writes nothing.
enum class CommandError : std::int32_t {
  none = 0,
  invalid_operation = 1,  ///< not 0 (copy) or 1 (reset), nor 2..4 with a host tier, nor 5 with speculative positions
  invalid_slots = 2,     ///< slot, rows (or a commit's accepted count) form no snapshot, restore, reset, move or commit
  invalid_endpoint = 3,  ///< the row read is not at expected_consumed, or holds another prefix key (§14)
  alias_conflict = 4,    ///< another live command writes what this one reads or writes (rows or pages)
  invalid_count = 5,     ///< num_ops is negative or larger than the capacity (every row)
  invalid_page = 6,      ///< the partial (or trailing) page is unmapped or past the usable page count
};

/// Values of StateCommands::operation (docs/CONTRACT.md §2, §12, §13). Operations
/// 2..4 move rows to and from the host tier (HostTier) and are valid only when
/// the transfer has one; operation 5 commits a verify step's accepted position
/// and is valid only when the transfer has speculative positions. Without them
/// they get code 1 like any unknown value.
inline constexpr std::int32_t op_copy = 0;               ///< snapshot or restore between device rows
inline constexpr std::int32_t op_reset = 1;              ///< zero the request's live row
inline constexpr std::int32_t op_offload = 2;            ///< device row src -> host row dst
inline constexpr std::int32_t op_onload = 3;             ///< host row src -> device row dst
inline constexpr std::int32_t op_restore_from_host = 4;  ///< a restore whose source is host row src
inline constexpr std::int32_t op_commit = 5;             ///< make the accepted position's state the slot's live state

/// "none", "invalid_operation", ... ; "unknown" for values outside 0..6.
const char* to_string(CommandError code) noexcept;
/// Same for the raw int32 stored in the errors array.
const char* command_error_name(std::int32_t code) noexcept;

/// Batch capacities of the contract (docs/CONTRACT.md §2, the seed's): powers of two from 1
/// to max_capacity. Validation compares every command with every other one in
/// one team (O(C^2)), exactly as the seed.
inline constexpr int max_capacity = 64;
/// Whether `capacity` is one of the contract's 1, 2, 4, ..., 64.
bool is_valid_capacity(std::int64_t capacity) noexcept;

/// Extension beyond the contract (large batches): the powers of two 128 to
/// max_extended_capacity are accepted as well, with the same semantics (docs/CONTRACT.md §4
/// and §5 unchanged); their validation sorts the keys that can collide (team
/// bitonic sorts of chunks of at most 1024 keys, then a binary search per query)
/// instead of comparing every pair.
inline constexpr int max_extended_capacity = 4096;
/// Whether `capacity` is a power of two through max_extended_capacity: the
/// contract's 1..64 or the extension's 128..4096. StateCommands::allocate and
/// PreparedStateTransfer accept exactly these.
bool is_valid_extended_capacity(std::int64_t capacity) noexcept;

/// One upload target of StateCommands::buffers().
struct CommandBuffer {
  std::string name;    ///< "state_<field>"
  DType dtype;         ///< int64 or int32 (operation, num_ops)
  std::size_t extent;  ///< elements
  void* data;          ///< in the execution space's memory
};

/// Command arrays for capacity C (initial values: -1, or 0 for operation,
/// prefix_keys, num_ops and errors; -1 for commit_positions). `errors` and
/// `commit_positions` are written by validate().
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
struct StateCommands {
  using execution_space = ExecutionSpace;
  using memory_space = typename ExecutionSpace::memory_space;
  using int64_view = Kokkos::View<std::int64_t*, memory_space>;
  using int32_view = Kokkos::View<std::int32_t*, memory_space>;

  int64_view request_slots;      ///< request slot (row of page tables and state rows) per command
  int64_view source_slots;       ///< source row (-1 for a reset or a commit); a host row for operations 3 and 4
  int64_view destination_slots;  ///< destination row (-1 for a commit); a host row for operation 2
  int32_view operation;          ///< op_copy, op_reset, op_offload, op_onload, op_restore_from_host, op_commit
  int64_view expected_consumed;  ///< endpoint in tokens (0 for a reset; a commit: the live row's after the verify)
  int64_view prefix_keys;        ///< with a prefix_key region (§14): the key a snapshot stamps, a read row must hold
  int32_view num_ops;            ///< [1]: live command count
  int32_view errors;             ///< device-written CommandError per command
  int32_view commit_positions;   ///< device-written: a commit's accepted count as read, -1 for other rows (§13)

  /// Allocate and initialise arrays for `capacity` commands; std::invalid_argument
  /// naming `capacity` unless it is a power of two through 4096 (1..64: the
  /// contract; 128..4096: the large-batch extension).
  static StateCommands allocate(std::int64_t capacity) {
    if (!is_valid_extended_capacity(capacity))
      throw std::invalid_argument("statexfer::StateCommands::allocate: capacity must be a power of two through " +
                                  std::to_string(max_extended_capacity) + " (1.." + std::to_string(max_capacity) +
                                  " the contract, " + std::to_string(2 * max_capacity) + ".." +
                                  std::to_string(max_extended_capacity) + " the extension), got " +
                                  std::to_string(capacity));
    StateCommands c;
    const auto n = static_cast<std::size_t>(capacity);
    // Allocated and filled on this backend, not the default one (a Serial transfer in an OpenMP build).
    const ExecutionSpace exec;
    c.request_slots = int64_view(Kokkos::view_alloc(exec, "statexfer::request_slots"), n);
    c.source_slots = int64_view(Kokkos::view_alloc(exec, "statexfer::source_slots"), n);
    c.destination_slots = int64_view(Kokkos::view_alloc(exec, "statexfer::destination_slots"), n);
    c.operation = int32_view(Kokkos::view_alloc(exec, "statexfer::operation"), n);
    c.expected_consumed = int64_view(Kokkos::view_alloc(exec, "statexfer::expected_consumed"), n);
    c.prefix_keys = int64_view(Kokkos::view_alloc(exec, "statexfer::prefix_keys"), n);
    c.num_ops = int32_view(Kokkos::view_alloc(exec, "statexfer::num_ops"), 1);
    c.errors = int32_view(Kokkos::view_alloc(exec, "statexfer::errors"), n);
    c.commit_positions = int32_view(Kokkos::view_alloc(exec, "statexfer::commit_positions"), n);
    Kokkos::deep_copy(exec, c.request_slots, -1);
    Kokkos::deep_copy(exec, c.source_slots, -1);
    Kokkos::deep_copy(exec, c.destination_slots, -1);
    Kokkos::deep_copy(exec, c.expected_consumed, -1);
    Kokkos::deep_copy(exec, c.commit_positions, -1);
    exec.fence();
    return c;
  }

  std::int64_t capacity() const noexcept { return static_cast<std::int64_t>(source_slots.extent(0)); }

  /// The fixed upload names `state_<field>` of every field but the device outputs
  /// (`errors`, `commit_positions`).
  std::vector<CommandBuffer> buffers() const {
    return {{"state_request_slots", DType::int64, request_slots.extent(0), request_slots.data()},
            {"state_source_slots", DType::int64, source_slots.extent(0), source_slots.data()},
            {"state_destination_slots", DType::int64, destination_slots.extent(0), destination_slots.data()},
            {"state_operation", DType::int32, operation.extent(0), operation.data()},
            {"state_expected_consumed", DType::int64, expected_consumed.extent(0), expected_consumed.data()},
            {"state_prefix_keys", DType::int64, prefix_keys.extent(0), prefix_keys.data()},
            {"state_num_ops", DType::int32, num_ops.extent(0), num_ops.data()}};
  }
};

/// Per-request state of the C request slots: column 0 of `consumed_tokens`
/// (`[C, k]`, any row stride) is the number of tokens a live request consumed.
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
struct RequestState {
  using memory_space = typename ExecutionSpace::memory_space;
  using consumed_view = Kokkos::View<std::int64_t**, Kokkos::LayoutStride, memory_space>;

  consumed_view consumed_tokens;

  /// Zeroed `[capacity, columns]` consumed tokens.
  static RequestState allocate(std::int64_t capacity, std::int64_t columns = 1) {
    if (capacity < 0) throw std::invalid_argument("statexfer::RequestState::allocate: capacity must be >= 0");
    if (columns < 1) throw std::invalid_argument("statexfer::RequestState::allocate: columns must be >= 1");
    RequestState s;
    const ExecutionSpace exec;
    s.consumed_tokens = Kokkos::View<std::int64_t**, Kokkos::LayoutRight, memory_space>(
        Kokkos::view_alloc(exec, "statexfer::request_consumed"), static_cast<std::size_t>(capacity),
        static_cast<std::size_t>(columns));
    exec.fence();
    return s;
  }

  std::int64_t capacity() const noexcept { return static_cast<std::int64_t>(consumed_tokens.extent(0)); }
};

}  // namespace statexfer

#endif
