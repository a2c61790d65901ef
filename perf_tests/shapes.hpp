#ifndef STATEXFER_PERF_TESTS_SHAPES_HPP
#define STATEXFER_PERF_TESTS_SHAPES_HPP

// The benchmark shapes: the built-in sets (`facts`: shared/docs/FACTS.md's shapes
// and the sweeps; `models`: the per-request state of public hybrid models, see
// MODELS.md) and a user's own shapes from the command line or a file:
//
//   NAME:C:ROW_BYTES:PAGE_REGIONS:PAGE_BYTES[:TRAILING[:COUNT]]
//
// C is the command capacity (a power of two, 1..4096), COUNT the live commands
// (num_ops, 1..C; C when left out), TRAILING the trailing bindings (each a
// region of 2 × PAGE_BYTES). Sizes are bytes, or a number with KiB, MiB or GiB
// (50MiB, 1.5MiB when that is a whole number of bytes). The same format is what
// `statexfer-bench --list-shapes` prints and what perf_tests/reference_shapes.py
// reads, so both sides run the same shapes. No Kokkos here: this part is plain C++.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace statexfer::bench {

struct Shape {
  std::int64_t capacity, row_bytes, page_regions, page_bytes, trailing;
  std::int64_t page_tokens = 16, width = 16;
  std::int64_t gap = 0;    // extra rows between the live and the snapshot rows
  std::int64_t count = 0;  // live commands (num_ops); 0 means capacity
  std::int64_t live() const { return count > 0 ? count : capacity; }
};

// Which benchmark times a shape: BenchTransfer.cpp (every step beside the copy
// kernel) or BenchPartial.cpp (a partly filled batch: one and two calls beside
// the copy kernel of the live commands' bytes, with issue 29's bound).
enum class Runner { transfer, partial };

struct NamedShape {
  std::string name;
  Shape shape;
  bool all_steps = true;  // also time validate and apply alone
  Runner runner = Runner::transfer;
};

// The workload's row bytes (the shape's, or more when its regions need it:
// 64 bytes of scalars, the page regions, the trailing regions of 2 pages),
// which hold the page regions, and the bytes one snapshot command writes, each
// byte once: the row, its page regions from the caches (docs/CONTRACT.md §5;
// apply() skips the row's bytes that a page overwrites). The reference's
// benchmark counts the regions twice (its row copy writes them, then its page
// copies), so its GB/s and memcpy yardstick are of the row and its pages.
std::int64_t layout_row_bytes(const Shape& s);
std::int64_t command_bytes(const Shape& s);

// A shape spec or size that does not parse; what() names the field.
struct SpecError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// "4096", "64KiB", "50MiB", "1GiB", "1.5MiB" (a whole number of bytes); throws SpecError.
std::int64_t parse_bytes(const std::string& text, const std::string& field);
// Bytes as the spec writes them: "50MiB" when whole, else "51511296".
std::string format_bytes(std::int64_t bytes);

NamedShape parse_spec(const std::string& spec);
// One spec per line; blank lines and # comments skipped. Throws SpecError
// with "FILE:LINE: " in front, or when the file cannot be read.
std::vector<NamedShape> read_spec_file(const std::string& path);
std::string format_spec(const NamedShape& s);
// Whether the shape can be written as a spec (the reference can run it).
bool expressible(const NamedShape& s);

// The built-in sets: "facts" (host_backend shortens the row sweep), "models",
// "partial" (only the shapes whose workload fits memory_budget_bytes).
// device_memory: the GPU's memory in bytes, 0 where unknown (before Kokkos starts).
const std::vector<std::string>& set_names();
std::vector<NamedShape> builtin_set(const std::string& name, bool host_backend, std::int64_t device_memory = 0);

// What one benchmark of the partial and exchange sets may allocate: on GPUs the
// device's memory less 12 GiB for the context and the graphs, at most 128 GiB
// (the H200's 140 GiB; an H100's 80 leave 67), 128 GiB where the memory is not
// known; 1 GiB on hosts. A partial shape is in the set when its workload (pool of
// 1 + C + live + 1 rows, the caches of C requests) and, apart, its copy kernel's
// two buffers of the live bytes each fit.
std::int64_t memory_budget_bytes(bool host_backend, std::int64_t device_memory);
std::int64_t partial_workload_bytes(const Shape& s);
// The partial shapes left out for memory, as "ROW/cC (live L..M): N GiB" lines.
std::vector<std::string> partial_skipped(bool host_backend, std::int64_t device_memory);

}  // namespace statexfer::bench

#endif
