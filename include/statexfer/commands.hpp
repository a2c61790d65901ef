#ifndef STATEXFER_COMMANDS_HPP
#define STATEXFER_COMMANDS_HPP

// A batch of snapshot / restore / reset commands, and the per-request state the
// commands refer to.

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <statexfer/layout.hpp>

namespace statexfer {

/// Device-side validation result of one command (docs/CONTRACT.md §4). 0 means the command
/// applies; any other code means it writes nothing (an import that landed leaves its row
/// unpublished, §17).
enum class CommandError : std::int32_t {
  none = 0,
  invalid_operation = 1,  ///< not 0 (copy) or 1 (reset), nor 2..4 with a host tier, nor 5 with speculative positions
  invalid_slots = 2,     ///< slot, rows (or a commit's accepted count) form no snapshot, restore, reset, move or commit
  invalid_endpoint = 3,  ///< the row read is not at expected_consumed, or holds another prefix key (§14)
  alias_conflict = 4,    ///< another live command writes what this one reads or writes (rows or pages)
  invalid_count = 5,     ///< num_ops is negative or larger than the capacity (every row)
  invalid_page = 6,      ///< the partial (or trailing) page is unmapped or past the usable page count
  row_in_use = 7,        ///< with row claims (§15): another transfer's batch in flight reads or writes its rows
  layout_mismatch = 8,   ///< import (§17): a record's layout fingerprint is not the receiver's
  record_mismatch = 9,   ///< import: a record's header is not what the command and the groups give (or was refused), or
                         ///< its payload's endpoint or key not its header's
  checksum_mismatch = 10,  ///< import: a record's checksum is not the one its bytes give
  coverage_mismatch = 11,  ///< import: a record's slices would not cover the receiver's row exactly once
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
inline constexpr std::int32_t op_export = 6;  ///< pack pool row src into record slot dst of every wire buffer (§17)
inline constexpr std::int32_t op_import = 7;  ///< unpack record slot src of the wire buffers into pool row dst (§17)

/// "none", "invalid_operation", ... ; "unknown" for values outside 0..11.
const char* to_string(CommandError code) noexcept;
/// Same for the raw int32 stored in the errors array.
const char* command_error_name(std::int32_t code) noexcept;

/// Batch capacities of the contract (docs/CONTRACT.md §2, the reference module's):
/// powers of two from 1 to max_capacity. Validation compares every command with
/// every other one (O(C^2) pairs, over the threads of one or several teams), as
/// the reference module does.
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

namespace impl {
/// Where each array lies in the one allocation of StateCommands::allocate()
/// and of a CommandBatch, which share it so that an upload is one copy: the
/// arrays the host writes first (num_ops, then the int64 arrays, then
/// operation), then the two validate() writes.
struct CommandBlockLayout {
  std::size_t num_ops = 0, request_slots = 0, source_slots = 0, destination_slots = 0, expected_consumed = 0,
              prefix_keys = 0, operation = 0, uploaded = 0, errors = 0, commit_positions = 0, total = 0;
  explicit CommandBlockLayout(std::size_t c) {
    const std::size_t i64 = 8 * c, i32 = 4 * c;
    num_ops = 0;
    request_slots = 8;  // num_ops and its padding
    source_slots = request_slots + i64;
    destination_slots = source_slots + i64;
    expected_consumed = destination_slots + i64;
    prefix_keys = expected_consumed + i64;
    operation = prefix_keys + i64;
    uploaded = operation + i32;
    errors = (uploaded + 7) / 8 * 8;
    commit_positions = errors + i32;
    total = commit_positions + i32;
  }
};

/// Where a CommandBatch keeps its rows: pinned host memory on GPUs (so that the
/// upload is an asynchronous copy), host memory elsewhere.
template <class ExecutionSpace>
struct BatchMemorySpace {
  using type = Kokkos::HostSpace;
};
#ifdef KOKKOS_ENABLE_CUDA
template <>
struct BatchMemorySpace<Kokkos::Cuda> {
  using type = Kokkos::CudaHostPinnedSpace;
};
#endif
#ifdef KOKKOS_ENABLE_HIP
template <>
struct BatchMemorySpace<Kokkos::HIP> {
  using type = Kokkos::HIPHostPinnedSpace;
};
#endif

[[noreturn]] inline void bad_capacity(const char* who, std::int64_t capacity) {
  throw std::invalid_argument(std::string("statexfer::") + who + ": capacity must be a power of two through " +
                              std::to_string(max_extended_capacity) + " (1.." + std::to_string(max_capacity) +
                              " the contract, " + std::to_string(2 * max_capacity) + ".." +
                              std::to_string(max_extended_capacity) + " the extension), got " +
                              std::to_string(capacity));
}
}  // namespace impl

/// One command, as the host writes it (docs/CONTRACT.md §2). The named
/// constructors give the well-formed commands; any field may be set by hand
/// (a command the device refuses is still a command).
struct Command {
  std::int64_t request_slot = -1;
  std::int64_t source = -1;
  std::int64_t destination = -1;
  std::int32_t operation = op_copy;
  std::int64_t expected_consumed = -1;
  std::int64_t prefix_key = 0;  ///< read only with a prefix_key region (§14)

  /// Copy the slot's live row into a snapshot row, at the request's endpoint.
  static Command snapshot(std::int64_t slot, std::int64_t live_row, std::int64_t snapshot_row, std::int64_t endpoint,
                          std::int64_t key = 0) {
    return {slot, live_row, snapshot_row, op_copy, endpoint, key};
  }
  /// Copy a snapshot row at `endpoint` (holding `key`) into the slot's live row.
  static Command restore(std::int64_t slot, std::int64_t snapshot_row, std::int64_t live_row, std::int64_t endpoint,
                         std::int64_t key = 0) {
    return {slot, snapshot_row, live_row, op_copy, endpoint, key};
  }
  /// Zero the slot's live row.
  static Command reset(std::int64_t slot, std::int64_t live_row) { return {slot, -1, live_row, op_reset, 0, 0}; }
  /// Device row -> host row (§12).
  static Command offload(std::int64_t device_row, std::int64_t host_row, std::int64_t endpoint, std::int64_t key = 0) {
    return {-1, device_row, host_row, op_offload, endpoint, key};
  }
  /// Host row -> device row (§12).
  static Command onload(std::int64_t host_row, std::int64_t device_row, std::int64_t endpoint, std::int64_t key = 0) {
    return {-1, host_row, device_row, op_onload, endpoint, key};
  }
  /// A restore whose source is a host row (§12).
  static Command restore_from_host(std::int64_t slot, std::int64_t host_row, std::int64_t live_row,
                                   std::int64_t endpoint, std::int64_t key = 0) {
    return {slot, host_row, live_row, op_restore_from_host, endpoint, key};
  }
  /// Make the slot's accepted position the live state (§13); `live_endpoint`:
  /// the live row's endpoint after the verify step.
  static Command commit(std::int64_t slot, std::int64_t live_endpoint) {
    return {slot, -1, -1, op_commit, live_endpoint, 0};
  }
  /// Pack pool row `row` (at `endpoint`, holding `key`) into record slot `slot` of every wire buffer (§17).
  static Command export_row(std::int64_t row, std::int64_t slot, std::int64_t endpoint, std::int64_t key = 0) {
    return {-1, row, slot, op_export, endpoint, key};
  }
  /// Unpack the records at slot `slot` of the wire buffers into pool row `row`, expecting `endpoint` and `key` (§17).
  static Command import_row(std::int64_t slot, std::int64_t row, std::int64_t endpoint, std::int64_t key = 0) {
    return {-1, slot, row, op_import, endpoint, key};
  }
};

/// A batch of commands on the host, laid out as StateCommands' arrays are on
/// the device (impl::CommandBlockLayout), in pinned host memory on GPUs, so
/// that StateCommands::upload() moves it in one asynchronous copy. Its size is
/// the batch's num_ops.
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
class CommandBatch {
 public:
  using memory_space = typename impl::BatchMemorySpace<ExecutionSpace>::type;

  /// Room for `capacity` commands, as StateCommands::allocate() takes it
  /// (std::invalid_argument naming `capacity` otherwise). Empty.
  explicit CommandBatch(std::int64_t capacity) : layout_(static_cast<std::size_t>(capacity > 0 ? capacity : 0)) {
    if (!is_valid_extended_capacity(capacity)) impl::bad_capacity("CommandBatch", capacity);
    block_ = Kokkos::View<std::uint8_t*, memory_space>("statexfer::command_batch", layout_.uploaded);
    capacity_ = capacity;
    for (std::int64_t i = 0; i < capacity_; ++i) write(i, Command{});
    store<std::int32_t>(layout_.num_ops, 0, 0);
  }

  std::int64_t capacity() const noexcept { return capacity_; }
  std::int64_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }

  /// No live command (the rows keep their values; past size() they are not read).
  void clear() noexcept { resize(0); }
  /// The live count, 0..capacity(): rows below it are the batch. std::out_of_range otherwise.
  void resize(std::int64_t n) {
    if (n < 0 || n > capacity_)
      throw std::out_of_range("statexfer::CommandBatch::resize: " + std::to_string(n) + " is outside 0.." +
                              std::to_string(capacity_));
    size_ = n;
    store<std::int32_t>(layout_.num_ops, 0, static_cast<std::int32_t>(n));
  }
  /// Appends a command; std::length_error when the batch is full.
  void push_back(const Command& c) {
    if (size_ == capacity_)
      throw std::length_error("statexfer::CommandBatch::push_back: the batch is full (capacity " +
                              std::to_string(capacity_) + ")");
    write(size_, c);
    resize(size_ + 1);
  }
  /// Row i, 0 <= i < capacity() (std::out_of_range otherwise).
  Command operator[](std::int64_t i) const {
    check(i);
    return {load<std::int64_t>(layout_.request_slots, i),     load<std::int64_t>(layout_.source_slots, i),
            load<std::int64_t>(layout_.destination_slots, i), load<std::int32_t>(layout_.operation, i),
            load<std::int64_t>(layout_.expected_consumed, i), load<std::int64_t>(layout_.prefix_keys, i)};
  }
  /// Overwrites row i, 0 <= i < capacity() (std::out_of_range otherwise), live or not.
  void set(std::int64_t i, const Command& c) {
    check(i);
    write(i, c);
  }
  /// Sets num_ops to any value, for batches that test the device's checks (code 5).
  void set_num_ops(std::int32_t count) noexcept {
    size_ = count < 0 ? 0 : count > capacity_ ? capacity_ : count;
    store<std::int32_t>(layout_.num_ops, 0, count);
  }
  std::int32_t num_ops() const noexcept { return load<std::int32_t>(layout_.num_ops, 0); }

  /// The uploaded bytes (impl::CommandBlockLayout::uploaded of them).
  const Kokkos::View<std::uint8_t*, memory_space>& block() const noexcept { return block_; }

 private:
  void check(std::int64_t i) const {
    if (i < 0 || i >= capacity_)
      throw std::out_of_range("statexfer::CommandBatch: row " + std::to_string(i) + " is outside 0.." +
                              std::to_string(capacity_ - 1));
  }
  template <class T>
  void store(std::size_t array, std::int64_t i, T v) noexcept {
    reinterpret_cast<T*>(block_.data() + array)[i] = v;
  }
  template <class T>
  T load(std::size_t array, std::int64_t i) const noexcept {
    return reinterpret_cast<const T*>(block_.data() + array)[i];
  }
  void write(std::int64_t i, const Command& c) noexcept {
    store(layout_.request_slots, i, c.request_slot);
    store(layout_.source_slots, i, c.source);
    store(layout_.destination_slots, i, c.destination);
    store(layout_.operation, i, c.operation);
    store(layout_.expected_consumed, i, c.expected_consumed);
    store(layout_.prefix_keys, i, c.prefix_key);
  }

  impl::CommandBlockLayout layout_;
  Kokkos::View<std::uint8_t*, memory_space> block_;
  std::int64_t capacity_ = 0, size_ = 0;
};

/// Where StateCommands::allocate() puts the arrays the host writes.
enum class CommandPlacement : std::uint8_t {
  /// In the execution space's memory: upload() enqueues one copy of the batch.
  device,
  /// In pinned host memory (GPUs; host memory on host backends) that the
  /// kernels read directly: upload() writes them with the CPU, and no copy is
  /// enqueued. The batch of a step must not be written while the kernels of
  /// the step before still read it (wait for them, or use a second set).
  mapped,
};

/// Command arrays for capacity C (initial values: -1, or 0 for operation,
/// prefix_keys, num_ops and errors; -1 for commit_positions). `errors` and
/// `commit_positions` are written by validate(). allocate() puts them in one
/// allocation (`block`) laid out as a CommandBatch, so that upload() is one
/// copy; with CommandPlacement::mapped the arrays the host writes lie in
/// `mapped_block` instead, which the kernels read in place.
///
/// The arrays are unmanaged Views: they point into memory that something else
/// owns, `block` and `mapped_block` after allocate() (a copy of the
/// StateCommands shares them), the caller's own Views for arrays it puts
/// together. A copy of one array (`auto e = commands.errors;`) keeps no memory
/// alive: it is valid while a StateCommands (or a transfer or combiner built
/// from it) holds the block.
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
struct StateCommands {
  using execution_space = ExecutionSpace;
  using memory_space = typename ExecutionSpace::memory_space;
  using int64_view = Kokkos::View<std::int64_t*, memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using int32_view = Kokkos::View<std::int32_t*, memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  int64_view request_slots;      ///< request slot (row of page tables and state rows) per command
  int64_view source_slots;       ///< source row (-1 for a reset or a commit); a host row for operations 3 and 4
  int64_view destination_slots;  ///< destination row (-1 for a commit); a host row for operation 2
  int32_view operation;          ///< op_copy, op_reset, op_offload, op_onload, op_restore_from_host, op_commit
  int64_view expected_consumed;  ///< endpoint in tokens (0 for a reset; a commit: the live row's after the verify)
  int64_view prefix_keys;        ///< with a prefix_key region (§14): the key a snapshot stamps, a read row must hold
  int32_view num_ops;            ///< [1]: live command count
  int32_view errors;             ///< device-written CommandError per command
  int32_view commit_positions;   ///< device-written: a commit's accepted count as read, -1 for other rows (§13)
  /// The allocation the arrays above lie in (allocate()), which owns their
  /// memory; empty for arrays a caller put together.
  Kokkos::View<std::uint8_t*, memory_space> block;
  /// CommandPlacement::mapped: the allocation of the arrays the host writes.
  Kokkos::View<std::uint8_t*, typename CommandBatch<ExecutionSpace>::memory_space> mapped_block;

  /// Allocate and initialise arrays for `capacity` commands; std::invalid_argument
  /// naming `capacity` unless it is a power of two through 4096 (1..64: the
  /// contract; 128..4096: the large-batch extension).
  static StateCommands allocate(std::int64_t capacity, CommandPlacement placement = CommandPlacement::device) {
    if (!is_valid_extended_capacity(capacity)) impl::bad_capacity("StateCommands::allocate", capacity);
    StateCommands c;
    const auto n = static_cast<std::size_t>(capacity);
    const impl::CommandBlockLayout at(n);
    // Allocated and filled on this backend, not the default one (a Serial transfer in an OpenMP build).
    const ExecutionSpace exec;
    c.block = Kokkos::View<std::uint8_t*, memory_space>(Kokkos::view_alloc(exec, "statexfer::commands"), at.total);
    std::uint8_t* in = c.block.data();
    if (placement == CommandPlacement::mapped) {
      c.mapped_block = decltype(c.mapped_block)(Kokkos::view_alloc(exec, "statexfer::commands_mapped"), at.uploaded);
      in = c.mapped_block.data();  // device-accessible (CUDA and HIP pinned memory)
    }
    const auto i64 = [&](std::uint8_t* base, std::size_t offset, std::size_t extent) {
      return int64_view(reinterpret_cast<std::int64_t*>(base + offset), extent);
    };
    const auto i32 = [&](std::uint8_t* base, std::size_t offset, std::size_t extent) {
      return int32_view(reinterpret_cast<std::int32_t*>(base + offset), extent);
    };
    c.num_ops = i32(in, at.num_ops, 1);
    c.request_slots = i64(in, at.request_slots, n);
    c.source_slots = i64(in, at.source_slots, n);
    c.destination_slots = i64(in, at.destination_slots, n);
    c.expected_consumed = i64(in, at.expected_consumed, n);
    c.prefix_keys = i64(in, at.prefix_keys, n);
    c.operation = i32(in, at.operation, n);
    c.errors = i32(c.block.data(), at.errors, n);
    c.commit_positions = i32(c.block.data(), at.commit_positions, n);
    Kokkos::deep_copy(exec, c.request_slots, -1);
    Kokkos::deep_copy(exec, c.source_slots, -1);
    Kokkos::deep_copy(exec, c.destination_slots, -1);
    Kokkos::deep_copy(exec, c.expected_consumed, -1);
    Kokkos::deep_copy(exec, c.commit_positions, -1);
    exec.fence();
    return c;
  }

  std::int64_t capacity() const noexcept { return static_cast<std::int64_t>(source_slots.extent(0)); }

  /// The two arrays validate() writes as one int32 [2 C] array: `errors` in
  /// elements 0..C-1, `commit_positions` in C..2C-1, so that one copy reads
  /// both back. allocate() puts them side by side in `block`; empty when they
  /// are not (arrays a caller put together).
  int32_view outputs() const noexcept {
    const std::size_t c = errors.extent(0);
    const auto* begin = reinterpret_cast<const std::uint8_t*>(errors.data());
    const bool adjacent = block.data() != nullptr && c > 0 && commit_positions.extent(0) == c &&
                          commit_positions.data() == errors.data() + c && begin >= block.data() &&
                          begin + 2 * c * sizeof(std::int32_t) <= block.data() + block.extent(0);
    return adjacent ? int32_view(errors.data(), 2 * c) : int32_view();
  }

  /// `batch` (its rows and num_ops) into these arrays. Device placement: one
  /// copy enqueued on `exec`, no fence (capturable); keep `batch` unchanged
  /// until the copy has run (fence `exec`, or write the next batch into another
  /// one). Mapped placement: the CPU writes the arrays now and nothing is
  /// enqueued; the kernels that read the previous batch must have finished.
  /// std::logic_error for arrays allocate() did not make; std::invalid_argument
  /// for a batch of another capacity.
  void upload(const ExecutionSpace& exec, const CommandBatch<ExecutionSpace>& batch) const {
    if (block.data() == nullptr)
      throw std::logic_error("statexfer::StateCommands::upload: the arrays were not made by allocate()");
    if (batch.capacity() != capacity())
      throw std::invalid_argument("statexfer::StateCommands::upload: batch has capacity " +
                                  std::to_string(batch.capacity()) + ", the commands " + std::to_string(capacity()));
    const std::size_t bytes = impl::CommandBlockLayout(static_cast<std::size_t>(capacity())).uploaded;
    if (mapped_block.data() != nullptr) {
      std::memcpy(mapped_block.data(), batch.block().data(), bytes);
      return;
    }
    const std::pair<std::size_t, std::size_t> uploaded(0, bytes);
    Kokkos::deep_copy(exec, Kokkos::subview(block, uploaded), Kokkos::subview(batch.block(), uploaded));
  }

  CommandPlacement placement() const noexcept {
    return mapped_block.data() != nullptr ? CommandPlacement::mapped : CommandPlacement::device;
  }

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
