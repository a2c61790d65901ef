#ifndef STATEXFER_TEST_CASE_HPP
#define STATEXFER_TEST_CASE_HPP

// The stx-case/1 exchange format (shared/conformance/README.md): a folder with
// case.json, one .npy per input array and expected/ with the reference answers.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <statexfer/layout.hpp>

namespace statexfer::test {

/// Malformed input: a missing file, a bad .npy header, a wrong shape or dtype,
/// bad JSON. what() names the file and what is wrong with it.
class CaseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A host array read from or written to a .npy file (version 1.0 header,
/// little-endian, C order). Only uint8, int32 and int64 are used by cases.
struct NpyArray {
  DType dtype = DType::uint8;
  std::vector<std::int64_t> shape;
  std::vector<std::uint8_t> bytes;  // size == elements() * dtype_size(dtype)

  std::int64_t elements() const;
  template <class T>
  const T* data() const {
    return reinterpret_cast<const T*>(bytes.data());
  }
  template <class T>
  T* data() {
    return reinterpret_cast<T*>(bytes.data());
  }
};

NpyArray read_npy(const std::filesystem::path& file);                      // throws CaseError
void write_npy(const std::filesystem::path& file, const NpyArray& array);  // throws CaseError

/// case.json
struct CaseSpec {
  std::int64_t capacity = 0;
  std::int64_t page_tokens = 0;
  std::int64_t rows = 0;
  std::int64_t row_bytes = 0;
  std::vector<Region> regions;
  std::vector<std::string> pages;           // page bindings, in binding order
  std::vector<std::string> trailing_pages;  // trailing bindings
  std::vector<std::string> excluded_regions;
  std::int64_t seed = 0;
};

/// The outputs of a run, or a case's expected/ answers.
struct CaseOutputs {
  std::optional<NpyArray> errors;              // int32 [C]
  std::optional<NpyArray> backing;             // uint8 [rows, row_bytes]
  std::map<std::string, NpyArray> caches;      // binding name -> uint8 [P, bytes]
  std::optional<std::string> construct_error;  // expected/error.json's message, or the exception's what()
  std::string launch_summary;                  // a library run's PreparedStateTransfer::launch_summary()
  std::int64_t work_items = 0;                 // its work_items_per_command()
};

struct Case {
  std::filesystem::path dir;
  CaseSpec spec;
  /// Input arrays by file stem: backing, memory_capacity, tables, trailing_tables,
  /// state_rows, request_consumed, request_slots, source_slots,
  /// destination_slots, expected_consumed, operation, num_ops, cache_<name>.
  std::map<std::string, NpyArray> arrays;
  CaseOutputs expected;  // empty when the folder has no expected/
};

/// Load a case folder; checks every array's presence, dtype and shape against
/// case.json (CaseError naming the file otherwise).
Case load_case(const std::filesystem::path& dir);

/// Write outputs as errors.npy, backing.npy, cache_<name>.npy into `dir` (created
/// if needed), or error.json (`{"construct_error": "invalid_argument", "message": ...}`)
/// when outputs.construct_error is set. Throws CaseError when a file cannot be written.
void write_outputs(const std::filesystem::path& dir, const CaseOutputs& outputs);

/// Read answers in the layout write_outputs() produces (a case's expected/):
/// error.json, or errors.npy int32 [C], backing.npy uint8 [rows, row_bytes] and
/// cache_<name>.npy uint8 [P, bytes] for every binding of `spec`.
CaseOutputs read_outputs(const std::filesystem::path& dir, const CaseSpec& spec);

/// The page and trailing binding names of `spec`, each once, in binding order:
/// the caches a case carries (cache_<name>).
std::vector<std::string> binding_names(const CaseSpec& spec);

/// One difference between outputs and expected answers.
struct Difference {
  std::string array;   // "errors", "backing", "cache_<name>", "construct_error"
  std::int64_t index;  // flat element index (-1 for shape or presence mismatches)
  std::int64_t value;
  std::int64_t expected;
  std::string detail;  // set for shape/presence mismatches
};

/// Up to `limit` differences (first ones in array order), and the total count.
struct Comparison {
  std::vector<Difference> first;
  std::int64_t total = 0;
  bool identical() const { return total == 0; }
};
Comparison compare_outputs(const CaseOutputs& actual, const CaseOutputs& expected, std::size_t limit = 10);

/// "errors[3] = 0, expected 4", or "backing: <detail>" for shape/presence mismatches.
std::string to_string(const Difference& difference);

/// Case folders under `root`: `root` itself when it holds case.json, else the
/// folders below it (at any depth, not inside a case) that do, sorted by path.
/// CaseError when `root` is no folder; an empty list when it holds no case.
std::vector<std::filesystem::path> find_cases(const std::filesystem::path& root);

}  // namespace statexfer::test

#endif
