#ifndef STATEXFER_IMPL_ARGUMENT_CHECKS_HPP
#define STATEXFER_IMPL_ARGUMENT_CHECKS_HPP

// The constructor's checks of its arguments (docs/CONTRACT.md §3): messages
// that name the argument, extents, memory, and byte ranges that must not overlap.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace statexfer::impl {

[[noreturn]] inline void reject(const std::string& what) {
  throw std::invalid_argument("statexfer::PreparedStateTransfer: " + what);
}

inline std::string shape_string(std::size_t a) { return "[" + std::to_string(a) + "]"; }
inline std::string shape_string(std::size_t a, std::size_t b) {
  return "[" + std::to_string(a) + ", " + std::to_string(b) + "]";
}

// `extent` is the capacity (taken from commands.source_slots) or 1 for num_ops.
template <class View>
void check_vector(const View& v, std::size_t extent, const char* name, const char* type) {
  const std::string want = std::string(name) + " must be " + type + " " + shape_string(extent) +
                           (extent == 1 && std::string(name) == "commands.num_ops"
                                ? ""
                                : " (the capacity, from the extent of commands.source_slots)");
  if (v.data() == nullptr && extent > 0) reject(want + ", got an empty View");
  if (v.extent(0) != extent) reject(want + ", got " + shape_string(v.extent(0)));
}

// A View with extents but no memory (an unmanaged View over a null pointer):
// every kernel access through it would fault.
template <class View>
void check_memory(const View& v, const std::string& name) {
  if (v.span() > 0 && v.data() == nullptr)
    reject(name + " has " + std::to_string(v.span()) + " elements but no memory (a null data pointer)");
}

// The bytes [begin, end) a View's elements lie in. span() is the extent of its
// memory for every layout, strided Views (LayoutStride) included.
struct ByteRange {
  std::uintptr_t begin = 0;
  std::uintptr_t end = 0;
};

template <class View>
ByteRange byte_range(const View& v) {
  const auto begin = reinterpret_cast<std::uintptr_t>(v.data());
  if (v.span() == 0 || v.data() == nullptr) return {begin, begin};
  return {begin, begin + v.span() * sizeof(typename View::value_type)};
}

inline bool ranges_overlap(const ByteRange& a, const ByteRange& b) {
  return a.begin < a.end && b.begin < b.end && a.begin < b.end && b.begin < a.end;
}

// Byte ranges of two Views overlap.
template <class A, class B>
bool views_overlap(const A& a, const B& b) {
  return ranges_overlap(byte_range(a), byte_range(b));
}

}  // namespace statexfer::impl

#endif
