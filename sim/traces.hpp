#ifndef STATEXFER_SIM_TRACES_HPP
#define STATEXFER_SIM_TRACES_HPP

// JSON-lines traces, one request per line, in two formats:
//
//   sim       the simulator's own: {"prefix": 5, "prefix_len": 700} or
//             {"parent": 3} or neither; "input" and "output" token counts
//             (>= 1); optional "seed" and "id" (parents may be named by "id" or
//             by 0-based index of a request). No arrival times.
//   mooncake  Mooncake's (FAST'25 release): "timestamp" (ms), "input_length",
//             "output_length" and "hash_ids", the ids of the prompt's blocks of
//             block_tokens tokens (equal ids: an equal prefix up to and with that
//             block; the last block partial). Requests arrive in timestamp
//             order (a stable sort), other fields are ignored.
//
// Blank lines and lines starting with '#' are skipped. The whole file is read
// and checked before anything runs: a bad line is a std::runtime_error naming
// FILE:LINE.

#include <cstdint>
#include <string>

#include "workload.hpp"

namespace statexfer::sim {

enum class TraceFormat { automatic, sim, mooncake };

/// "auto", "sim" or "mooncake"; std::invalid_argument naming --trace-format otherwise.
TraceFormat parse_trace_format(const std::string& text);

/// Reads a trace; `automatic` takes Mooncake's format when the first request
/// line has "hash_ids" or "input_length", else the simulator's.
Workload read_trace(const std::string& path, TraceFormat format = TraceFormat::automatic,
                    std::int64_t block_tokens = 512);

/// Writes a workload as a trace. Mooncake's format from a workload that is not
/// block-hashed numbers the distinct token prefixes at the prompt's block ends
/// (every block_tokens tokens, and the prompt's end for its last, partial
/// block), so that the replay shares the same blocks; timestamps are the
/// arrival times.
void write_trace(const Workload& workload, const std::string& path, TraceFormat format = TraceFormat::sim,
                 std::int64_t block_tokens = 512);

}  // namespace statexfer::sim

#endif
