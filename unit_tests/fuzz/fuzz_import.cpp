// libFuzzer target: the import's decoder of prefill/decode records
// (docs/CONTRACT.md §17) on Kokkos::Serial. Each rig holds the wire buffers
// one decode rank reads (a small Mamba-2-like model, prefill TP p, decode TP
// d), filled once by real exports of C known rows. Every input starts from
// those records and edits them: bytes flipped anywhere in a record (header,
// slice table, payload, padding), header fields and slice entries set to raw
// or nearby values, records copied from another slot or another prefill
// rank, records overwritten with raw bytes, and checksums recomputed over
// edited headers (never over an edited payload, so that a record that passes
// every check carries the payload of the row it names: an export's payload,
// not always its slot's, when an edited header was checksummed and the record
// then copied to another slot). Then a batch of
// imports (well-formed, with stale keys or endpoints, or raw values), the
// pool's usable-row count and num_ops.
//
// Both landings (ImportLanding) run each input, from the same commands into
// two pools of the same bytes. The oracle is §17's text, over the records'
// bytes: each live command's code (5, 1, 2, then per record in source-rank
// order 9 magic/version, 8 fingerprint, 9 fields, 11 slices, 10 checksum, 9
// the payload's endpoint and key against the header's, then 4; landing, the
// last two after 4). The pool must then be what it
// was, except each command of code 0, whose row must be the oracle's shard
// (test_common/reshard.hpp) of the row each record's payload carries (the
// bytes each prefill rank's record supplies, from its slices), in every
// byte a region holds (the alignment gaps between regions keep their bytes),
// and, landing, each row refused only by its last two checks, whose endpoint must
// be -1 (its regions' other bytes are the payload's); the wires must be
// unchanged. Any difference aborts; ASan, UBSan
// and the Kokkos bounds checks catch any access outside the Views.

#include <fuzzer/FuzzedDataProvider.h>

#include <Kokkos_Core.hpp>

#include <statexfer/statexfer.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <test_common/reshard.hpp>

namespace {

namespace ft = statexfer::test;
using Exec = Kokkos::Serial;
using statexfer::DType;
using statexfer::ModelLayout;
using statexfer::Split;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_import: %s\n", what.c_str());
  std::abort();
}

// Serial Views live in host memory: copies through flat unmanaged Views.
template <class View, class T>
void put(const View& v, const std::vector<T>& h) {
  if (h.size() * sizeof(T) != v.span() * sizeof(typename View::value_type)) fail("put: sizes differ");
  if (!h.empty()) std::memcpy(reinterpret_cast<void*>(v.data()), h.data(), h.size() * sizeof(T));
}
template <class T, class View>
std::vector<T> get(const View& v) {
  std::vector<T> h(v.span() * sizeof(typename View::value_type) / sizeof(T));
  if (!h.empty()) std::memcpy(h.data(), reinterpret_cast<const void*>(v.data()), h.size() * sizeof(T));
  return h;
}

template <class T>
T load(const std::vector<std::uint8_t>& b, std::int64_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof(T));
  return v;
}
template <class T>
void store(std::vector<std::uint8_t>& b, std::int64_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof(T));
}

// One prefill rank that sends the rig's decode rank something.
struct Peer {
  int rank;
  std::int64_t record_bytes, payload_bytes;
  std::int64_t endpoint_at = -1, key_at = -1;  // the record's bytes of the row's endpoint and key, where it has them
  std::vector<statexfer::SliceRange> slices;
  std::vector<std::uint8_t> pristine;  // C records as the exports wrote them
  std::vector<std::uint8_t> supplies;  // 0xff where decode rank j's row takes its byte from this peer's record
};

// 0xff over the bytes of the whole row (a group of one, as oracle_shard() lays it out) that hold the units
// of `slices`, in every block of their regions; 0 elsewhere.
std::vector<std::uint8_t> whole_mask(const std::vector<statexfer::ModelRegion>& regions,
                                     const std::vector<statexfer::SliceRange>& slices, std::int64_t whole_bytes) {
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(whole_bytes), 0);
  std::int64_t from = 0;
  int g = 0;
  for (const auto& region : regions) {
    from = (from + 15) / 16 * 16;
    std::int64_t block = 0;
    for (const auto& seg : region.segments) block += seg.units * seg.unit_bytes;
    std::int64_t in_block = 0;
    for (const auto& seg : region.segments) {
      const auto& range = slices[static_cast<std::size_t>(g++)];
      for (std::int64_t b = 0; b < region.blocks && range.end > range.begin; ++b)
        std::memset(mask.data() + from + b * block + in_block + range.begin * seg.unit_bytes, 0xff,
                    static_cast<std::size_t>((range.end - range.begin) * seg.unit_bytes));
      in_block += seg.units * seg.unit_bytes;
    }
    from += region.blocks * block;
  }
  return mask;
}

struct Rig {
  ModelLayout model;
  int p, d, j;
  std::int64_t C, rows, header, consumed_offset;
  statexfer::SharedWires<Exec> wires;
  statexfer::StatePool<Exec> pool, landing_pool;
  statexfer::StateCommands<Exec> commands;
  // check_before_write into `pool`; publish_after_check into `landing_pool`, from the same commands.
  std::unique_ptr<statexfer::PreparedImport<Exec>> import, landing;
  std::vector<Peer> peers;
  std::vector<std::int64_t> keys, endpoints;      // of each slot's row
  std::vector<std::vector<std::uint8_t>> shards;  // each slot's row on decode rank j
  std::vector<std::uint8_t> held;                 // 0xff where decode rank j's row holds a region's byte, 0 in gaps

  Rig(const ModelLayout& m, int p_, int d_, int j_, std::int64_t c)
      : model(m),
        p(p_),
        d(d_),
        j(j_),
        C(c),
        rows(c + 3),
        header(statexfer::record_header_bytes(m)),
        consumed_offset(m.local(d_, j_).region("consumed_tokens").offset),
        wires(m, p_, d_, c) {
    // Every prefill rank exports C rows into slots 0..C-1 (their shards of random whole rows).
    std::mt19937_64 rng(static_cast<std::uint64_t>(p * 100 + d * 10 + j));
    const statexfer::StateLayout whole = model.whole();
    std::vector<std::vector<std::uint8_t>> wholes;
    for (std::int64_t k = 0; k < C; ++k) {
      std::vector<std::uint8_t> row(static_cast<std::size_t>(whole.row_bytes()));
      for (auto& b : row) b = static_cast<std::uint8_t>(rng());
      keys.push_back(1000 + k);
      endpoints.push_back(40 + k);
      store(row, whole.region("consumed_tokens").offset, endpoints.back());
      store(row, whole.region("prefix_key").offset, keys.back());
      shards.push_back(ft::oracle_shard(model.regions(), row, d, j));
      wholes.push_back(std::move(row));
    }
    // The alignment gaps between regions (§16) belong to no region: an import writes none of them.
    held = ft::oracle_shard(model.regions(), std::vector<std::uint8_t>(wholes.front().size(), 0xff), d, j);
    for (int i = 0; i < p; ++i) {
      statexfer::StatePool<Exec> source(model.local(p, i), C + 1, 1);
      auto image = get<std::uint8_t>(source.backing());
      for (std::int64_t k = 0; k < C; ++k) {
        const auto shard = ft::oracle_shard(model.regions(), wholes[static_cast<std::size_t>(k)], p, i);
        if (!shard.empty()) std::memcpy(image.data() + (k + 1) * source.row_bytes(), shard.data(), shard.size());
      }
      put(source.backing(), image);
      auto ec = statexfer::StateCommands<Exec>::allocate(C);
      statexfer::PreparedExport<Exec> exporter(source, ec, model, {p, i}, d, wires.exporter(i));
      exporter.prepare();
      statexfer::CommandBatch<Exec> batch(C);
      for (std::int64_t k = 0; k < C; ++k)
        batch.push_back(statexfer::Command::export_row(k + 1, k, endpoints[static_cast<std::size_t>(k)],
                                                       keys[static_cast<std::size_t>(k)]));
      ec.upload(Exec(), batch);
      exporter.validate(Exec());
      exporter.apply(Exec());
      Kokkos::fence();
      for (const std::int32_t code : get<std::int32_t>(ec.errors))
        if (code != 0) fail("a rig's export was refused");
      const std::int64_t rb = statexfer::record_bytes(model, {p, i}, {d, j});
      if (rb == 0) continue;
      Peer peer{i, rb, 0, -1, -1, model.slices(p, i, d, j), get<std::uint8_t>(wires.wire(i, j)), {}};
      peer.supplies =
          ft::oracle_shard(model.regions(), whole_mask(model.regions(), peer.slices, whole.row_bytes()), d, j);
      // The payload: every nonempty run of every block, padded to 8 bytes (§17).
      int g = 0;
      for (const auto& region : model.regions()) {
        for (std::int64_t b = 0; b < region.blocks; ++b)
          for (std::size_t s = 0; s < region.segments.size(); ++s) {
            const auto& range = peer.slices[static_cast<std::size_t>(g) + s];
            if (range.end > range.begin && region.name == "consumed_tokens")
              peer.endpoint_at = header + peer.payload_bytes;
            if (range.end > range.begin && region.name == "prefix_key") peer.key_at = header + peer.payload_bytes;
            peer.payload_bytes += ((range.end - range.begin) * region.segments[s].unit_bytes + 7) / 8 * 8;
          }
        g += static_cast<int>(region.segments.size());
      }
      if ((header + peer.payload_bytes + 15) / 16 * 16 != rb) fail("record_bytes is not header + payload, rounded");
      peers.push_back(std::move(peer));
    }
    // Each byte decode rank j's row holds comes from exactly one peer's record (ModelLayout::slices()).
    for (std::size_t b = 0; b < held.size(); ++b) {
      int suppliers = 0;
      for (const Peer& peer : peers) suppliers += peer.supplies[b] != 0 ? 1 : 0;
      if (suppliers != (held[b] != 0 ? 1 : 0)) fail("a held byte without exactly one supplying record");
    }
    pool = statexfer::StatePool<Exec>(model.local(d, j), rows, 1);
    landing_pool = statexfer::StatePool<Exec>(model.local(d, j), rows, 1);
    commands = statexfer::StateCommands<Exec>::allocate(C);
    import = std::make_unique<statexfer::PreparedImport<Exec>>(pool, commands, model, p, statexfer::GroupRank{d, j},
                                                               wires.importer(j),
                                                               statexfer::ImportLanding::check_before_write);
    import->prepare();
    landing = std::make_unique<statexfer::PreparedImport<Exec>>(landing_pool, commands, model, p,
                                                                statexfer::GroupRank{d, j}, wires.importer(j),
                                                                statexfer::ImportLanding::publish_after_check);
    landing->prepare();
    for (const Peer& peer : peers)
      for (std::int64_t k = 0; k < C; ++k)
        if (code(peer, peer.pristine, k, keys[static_cast<std::size_t>(k)], endpoints[static_cast<std::size_t>(k)]) !=
            0)
          fail("the oracle refuses a record as exported");
  }

  /// The row an import of `slot` that passes every check lands: each peer's bytes from the row whose export
  /// payload its record carries. A header edited (key, endpoint, slot) over an export's payload, its checksum
  /// recomputed and the record copied to another slot, passes for the row it names, whose payload it holds.
  std::vector<std::uint8_t> landed_row(const std::vector<std::vector<std::uint8_t>>& images, std::int64_t slot) const {
    std::vector<std::uint8_t> row(shards.front().size(), 0);
    for (std::size_t q = 0; q < peers.size(); ++q) {
      const Peer& peer = peers[q];
      const auto payload = [&](const std::vector<std::uint8_t>& b, std::int64_t k) {
        return b.data() + k * peer.record_bytes + header;
      };
      std::int64_t origin = -1;
      for (std::int64_t k = 0; k < C && origin < 0; ++k)
        if (std::memcmp(payload(images[q], slot), payload(peer.pristine, k),
                        static_cast<std::size_t>(peer.payload_bytes)) == 0)
          origin = k;
      if (origin < 0) fail("a record that passes every check carries no export's payload");
      const auto& shard = shards[static_cast<std::size_t>(origin)];
      for (std::size_t b = 0; b < row.size(); ++b)
        if (peer.supplies[b] != 0) row[b] = shard[b];
    }
    return row;
  }

  /// §17's code for the record at `slot` of `bytes` (a peer's wire image), for an import of (key, endpoint);
  /// without `checksum`, every check but the last two (the checksum, the payload's endpoint and key).
  std::int32_t code(const Peer& peer, const std::vector<std::uint8_t>& bytes, std::int64_t slot, std::int64_t key,
                    std::int64_t endpoint, bool checksum = true) const {
    const std::int64_t at = slot * peer.record_bytes;
    if (load<std::uint32_t>(bytes, at) != 0x52585453u || load<std::uint32_t>(bytes, at + 4) != 1) return 9;
    if (load<std::uint64_t>(bytes, at + 8) != model.fingerprint()) return 8;
    const std::int32_t want[6] = {p, peer.rank, d, j, 0, model.segment_count()};
    for (int f = 0; f < 6; ++f)
      if (load<std::int32_t>(bytes, at + 32 + 4 * f) != want[f]) return 9;
    if (load<std::int64_t>(bytes, at + 16) != key || load<std::int64_t>(bytes, at + 24) != endpoint ||
        load<std::int64_t>(bytes, at + 56) != peer.payload_bytes || load<std::int64_t>(bytes, at + 72) != slot)
      return 9;
    for (std::size_t g = 0; g < peer.slices.size(); ++g) {
      const std::int64_t e = at + 80 + 16 * static_cast<std::int64_t>(g);
      if (load<std::int32_t>(bytes, e) != peer.slices[g].segment ||
          load<std::int32_t>(bytes, e + 4) != peer.slices[g].begin ||
          load<std::int32_t>(bytes, e + 8) != peer.slices[g].end || load<std::int32_t>(bytes, e + 12) != 0)
        return 11;
    }
    if (!checksum) return 0;
    if (ft::oracle_checksum(bytes.data() + at, header, peer.payload_bytes) != load<std::uint64_t>(bytes, at + 64))
      return 10;
    // Whole, the endpoint and key its payload carries (the replicated regions, from one prefill rank) are its header's.
    if ((peer.endpoint_at >= 0 &&
         load<std::int64_t>(bytes, at + peer.endpoint_at) != load<std::int64_t>(bytes, at + 24)) ||
        (peer.key_at >= 0 && load<std::int64_t>(bytes, at + peer.key_at) != load<std::int64_t>(bytes, at + 16)))
      return 9;
    return 0;
  }
};

std::vector<std::unique_ptr<Rig>>& rigs() {
  static std::vector<std::unique_ptr<Rig>> all;
  return all;
}

// 8 heads, 2 groups of B and C (replicated above TP 2), 4 KV heads; a key.
ModelLayout mini_model() {
  return ModelLayout(
      {{"consumed_tokens", DType::int64, 1, {{"endpoint", 1, 8, Split::replicated}}},
       {"prefix_key", DType::int64, 1, {{"key", 1, 8, Split::replicated}}},
       {"ssm", DType::float32, 2, {{"heads", 8, 16, Split::units}}},
       {"conv", DType::bfloat16, 2, {{"x", 8, 12, Split::units}, {"B", 2, 6, Split::units}, {"C", 2, 6, Split::units}}},
       {"kv", DType::uint8, 3, {{"kv_heads", 4, 8, Split::units}}}},
      2);
}

std::int64_t nearby(FuzzedDataProvider& in, std::int64_t v) {
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0:  // wrapping, as a field's bytes would: v may be any value
      return static_cast<std::int64_t>(static_cast<std::uint64_t>(v) +
                                       static_cast<std::uint64_t>(in.ConsumeIntegralInRange<std::int64_t>(-2, 2)));
    case 1: return 0;
    case 2: return -1;
    default: return in.ConsumeIntegral<std::int64_t>();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  Kokkos::initialize();
  rigs();  // constructed before the handler is registered, so destroyed after it runs
  std::atexit([] {
    rigs().clear();
    Kokkos::finalize();
  });
  rigs().push_back(std::make_unique<Rig>(mini_model(), 4, 2, 0, 4));  // two peers, B and C from one of two holders
  rigs().push_back(std::make_unique<Rig>(mini_model(), 1, 2, 1, 8));  // one peer
  rigs().push_back(std::make_unique<Rig>(mini_model(), 2, 4, 3, 2));  // one peer of two; B and C replicated here
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  Rig& rig = *rigs()[in.ConsumeIntegralInRange<std::size_t>(0, rigs().size() - 1)];
  const std::int64_t C = rig.C, R = rig.rows, H = rig.header;
  const int P = static_cast<int>(rig.peers.size());

  // Records: the exports', edited.
  std::vector<std::vector<std::uint8_t>> images;
  for (const Peer& peer : rig.peers) images.push_back(peer.pristine);
  const int edits = in.ConsumeIntegralInRange<int>(0, 10);
  for (int e = 0; e < edits; ++e) {
    const int q = in.ConsumeIntegralInRange<int>(0, P - 1);
    const Peer& peer = rig.peers[static_cast<std::size_t>(q)];
    auto& image = images[static_cast<std::size_t>(q)];
    const std::int64_t slot = in.ConsumeIntegralInRange<std::int64_t>(0, C - 1), at = slot * peer.record_bytes;
    const std::int64_t rb = peer.record_bytes;
    switch (in.ConsumeIntegralInRange<int>(0, 7)) {
      case 0: {  // a byte of the header or slice table
        image[static_cast<std::size_t>(at + in.ConsumeIntegralInRange<std::int64_t>(0, H - 1))] ^=
            in.ConsumeIntegralInRange<std::uint8_t>(1, 255);
        break;
      }
      case 1: {  // a byte anywhere in the record: payload, padding
        image[static_cast<std::size_t>(at + in.ConsumeIntegralInRange<std::int64_t>(0, rb - 1))] ^=
            in.ConsumeIntegralInRange<std::uint8_t>(1, 255);
        break;
      }
      case 2: {  // an 8-byte field of the header: fingerprint, key, endpoint, payload bytes, checksum, slot
        static constexpr std::int64_t fields[] = {8, 16, 24, 56, 64, 72};
        const std::int64_t f = fields[in.ConsumeIntegralInRange<int>(0, 5)];
        store(image, at + f, nearby(in, load<std::int64_t>(image, at + f)));
        break;
      }
      case 3: {  // a 4-byte field: magic, version, p, i, d, j, status, segments, or a slice entry's
        const std::int64_t f = in.ConsumeBool() ? 4 * in.ConsumeIntegralInRange<std::int64_t>(0, 13)
                                                : 80 + 4 * in.ConsumeIntegralInRange<std::int64_t>(0, (H - 80) / 4 - 1);
        if (f >= 8 && f < 32) break;  // the 8-byte fields: case 2
        store(image, at + f, static_cast<std::int32_t>(nearby(in, load<std::int32_t>(image, at + f))));
        break;
      }
      case 4: {  // another slot's record here
        const std::int64_t from = in.ConsumeIntegralInRange<std::int64_t>(0, C - 1) * rb;
        std::vector<std::uint8_t> record(image.begin() + from, image.begin() + from + rb);
        std::memcpy(image.data() + at, record.data(), static_cast<std::size_t>(rb));
        break;
      }
      case 5: {  // another prefill rank's record of this slot (as much of it as fits)
        const int r = in.ConsumeIntegralInRange<int>(0, P - 1);
        const Peer& other = rig.peers[static_cast<std::size_t>(r)];
        const std::int64_t n = std::min(rb, other.record_bytes);
        std::vector<std::uint8_t> record(images[static_cast<std::size_t>(r)].begin() + slot * other.record_bytes,
                                         images[static_cast<std::size_t>(r)].begin() + slot * other.record_bytes + n);
        if (n > 0) std::memcpy(image.data() + at, record.data(), static_cast<std::size_t>(n));
        break;
      }
      case 6: {  // raw bytes over a stretch of the record
        const std::int64_t from = in.ConsumeIntegralInRange<std::int64_t>(0, rb - 1);
        const std::int64_t n = in.ConsumeIntegralInRange<std::int64_t>(1, rb - from);
        const auto raw = in.ConsumeBytes<std::uint8_t>(static_cast<std::size_t>(n));
        if (!raw.empty()) std::memcpy(image.data() + at + from, raw.data(), raw.size());  // input may run out
        break;
      }
      default: {  // the checksum recomputed, where the payload is still the export's
        const auto* now = image.data() + at + H;
        const auto* was = peer.pristine.data() + at + H;
        if (std::memcmp(now, was, static_cast<std::size_t>(peer.payload_bytes)) == 0)
          store(image, at + 64, ft::oracle_checksum(image.data() + at, H, peer.payload_bytes));
      }
    }
  }

  // Imports: well-formed (the slot's key and endpoint, or one of them stale), or raw values.
  std::vector<std::int64_t> src(static_cast<std::size_t>(C), -1), dst(src), end(src), keys(src), slots(src);
  std::vector<std::int32_t> op(static_cast<std::size_t>(C), 0);
  const std::int64_t written = in.ConsumeIntegralInRange<std::int64_t>(0, C);
  for (std::int64_t r = 0; r < written; ++r) {
    const auto at = static_cast<std::size_t>(r);
    const std::int64_t slot = in.ConsumeIntegralInRange<std::int64_t>(0, C - 1);
    src[at] = slot, dst[at] = in.ConsumeIntegralInRange<std::int64_t>(1, R - 1), op[at] = statexfer::op_import;
    end[at] = rig.endpoints[static_cast<std::size_t>(slot)], keys[at] = rig.keys[static_cast<std::size_t>(slot)];
    switch (in.ConsumeIntegralInRange<int>(0, 7)) {
      case 0: end[at] = nearby(in, end[at]); break;
      case 1: keys[at] = nearby(in, keys[at]); break;
      case 2: src[at] = in.ConsumeIntegralInRange<std::int64_t>(-2, C + 1); break;
      case 3: dst[at] = in.ConsumeIntegralInRange<std::int64_t>(-2, R + 1); break;
      case 4: op[at] = in.ConsumeIntegralInRange<std::int32_t>(-1, 8); break;
      case 5:
        src[at] = in.ConsumeIntegral<std::int64_t>(), dst[at] = in.ConsumeIntegral<std::int64_t>();
        op[at] = in.ConsumeIntegral<std::int32_t>(), end[at] = in.ConsumeIntegral<std::int64_t>();
        keys[at] = in.ConsumeIntegral<std::int64_t>();
        break;
      default: break;
    }
  }
  std::int32_t count = static_cast<std::int32_t>(written);
  if (in.ConsumeIntegralInRange<int>(0, 7) == 7) count = in.ConsumeIntegral<std::int32_t>();
  std::int64_t usable = R;
  if (in.ConsumeIntegralInRange<int>(0, 3) == 3) usable = in.ConsumeIntegralInRange<std::int64_t>(-1, R + 2);
  std::vector<std::uint8_t> pool(static_cast<std::size_t>(R * rig.pool.row_bytes()));
  std::uint32_t x = in.ConsumeIntegral<std::uint32_t>() | 1;
  for (auto& b : pool) b = static_cast<std::uint8_t>((x = x * 1664525u + 1013904223u) >> 24);

  for (int q = 0; q < P; ++q)
    put(rig.wires.wire(rig.peers[static_cast<std::size_t>(q)].rank, rig.j), images[static_cast<std::size_t>(q)]);
  put(rig.pool.backing(), pool);
  put(rig.pool.memory_capacity(), std::vector<std::int64_t>{usable, 1});
  put(rig.landing_pool.backing(), pool);
  put(rig.landing_pool.memory_capacity(), std::vector<std::int64_t>{usable, 1});
  put(rig.commands.request_slots, slots);
  put(rig.commands.source_slots, src);
  put(rig.commands.destination_slots, dst);
  put(rig.commands.operation, op);
  put(rig.commands.expected_consumed, end);
  put(rig.commands.prefix_keys, keys);
  put(rig.commands.num_ops, std::vector<std::int32_t>{count});
  rig.import->validate(Exec());
  rig.import->apply(Exec());
  Kokkos::fence();
  const auto codes = get<std::int32_t>(rig.commands.errors);
  rig.landing->validate(Exec());
  rig.landing->apply(Exec());
  Kokkos::fence();
  const auto landing_codes = get<std::int32_t>(rig.commands.errors);

  // The oracle.
  std::vector<std::int32_t> want(static_cast<std::size_t>(C), 0), want_landing(want);
  std::vector<std::uint8_t> landed = pool;  // the landing import's pool
  const bool bad = count < 0 || count > C;
  const std::int64_t live = bad ? 0 : count, slots_usable = std::min(usable, R);
  std::vector<int> row_users(static_cast<std::size_t>(R), 0), slot_users(static_cast<std::size_t>(C), 0);
  for (std::int64_t r = 0; r < live; ++r) {
    const auto at = static_cast<std::size_t>(r);
    if (op[at] != statexfer::op_import) continue;
    if (dst[at] > 0 && dst[at] < slots_usable) ++row_users[static_cast<std::size_t>(dst[at])];
    if (src[at] >= 0 && src[at] < C) ++slot_users[static_cast<std::size_t>(src[at])];
  }
  for (std::int64_t r = 0; r < C; ++r) {
    const auto at = static_cast<std::size_t>(r);
    std::int32_t& code = want[at];
    std::int32_t& landing_code = want_landing[at];
    if (bad) {
      code = landing_code = 5;
    } else if (r >= live) {
      code = landing_code = 0;
    } else if (op[at] != statexfer::op_import) {
      code = landing_code = 1;
    } else if (src[at] < 0 || src[at] >= C || dst[at] <= 0 || dst[at] >= slots_usable) {
      code = landing_code = 2;
    } else {
      // Checking first: each record's codes in turn, all of them, then 4. Landing: each record's codes
      // but the last two, then 4, then those (10, or 9 for the payload's endpoint or key) of each record.
      const bool aliased =
          row_users[static_cast<std::size_t>(dst[at])] > 1 || slot_users[static_cast<std::size_t>(src[at])] > 1;
      for (int q = 0; q < P && code == 0; ++q)
        code = rig.code(rig.peers[static_cast<std::size_t>(q)], images[static_cast<std::size_t>(q)], src[at], keys[at],
                        end[at]);
      if (code == 0 && aliased) code = 4;
      for (int q = 0; q < P && landing_code == 0; ++q)
        landing_code = rig.code(rig.peers[static_cast<std::size_t>(q)], images[static_cast<std::size_t>(q)], src[at],
                                keys[at], end[at], false);
      if (landing_code == 0 && aliased) landing_code = 4;
      if (landing_code == 0) {
        for (int q = 0; q < P && landing_code == 0; ++q)
          landing_code = rig.code(rig.peers[static_cast<std::size_t>(q)], images[static_cast<std::size_t>(q)], src[at],
                                  keys[at], end[at]);
        // Landed: a refused row's region bytes are the payload's, as read (not checked here), and its endpoint
        // -1; a passing one's the shard, published.
        const std::size_t row = static_cast<std::size_t>(dst[at] * rig.pool.row_bytes());
        const auto got = get<std::uint8_t>(rig.landing_pool.backing());
        const auto shard = landing_code == 0 ? rig.landed_row(images, src[at]) : std::vector<std::uint8_t>{};
        for (std::size_t b = 0; b < rig.held.size(); ++b)
          if (rig.held[b] != 0) landed[row + b] = landing_code == 0 ? shard[b] : got[row + b];
        if (landing_code != 0) store(landed, static_cast<std::int64_t>(row) + rig.consumed_offset, std::int64_t{-1});
      }
    }
    if (code == 0 && r < live) {
      const auto shard = rig.landed_row(images, src[at]);
      for (std::size_t b = 0; b < shard.size(); ++b)
        if (rig.held[b] != 0) pool[static_cast<std::size_t>(dst[at] * rig.pool.row_bytes()) + b] = shard[b];
    }
  }

  if (landing_codes != want_landing) {
    std::string got, expected;
    for (std::int64_t r = 0; r < C; ++r)
      got += std::to_string(landing_codes[static_cast<std::size_t>(r)]) + " ",
          expected += std::to_string(want_landing[static_cast<std::size_t>(r)]) + " ";
    fail("landing: codes " + got + "differ from the oracle's " + expected);
  }
  if (get<std::uint8_t>(rig.landing_pool.backing()) != landed) fail("landing: pool bytes differ from the oracle's");
  if (codes != want) {
    std::string got, expected;
    for (std::int64_t r = 0; r < C; ++r)
      got += std::to_string(codes[static_cast<std::size_t>(r)]) + " ",
          expected += std::to_string(want[static_cast<std::size_t>(r)]) + " ";
    fail("codes " + got + "differ from the oracle's " + expected);
  }
  if (get<std::uint8_t>(rig.pool.backing()) != pool) fail("pool bytes differ from the oracle's");
  for (int q = 0; q < P; ++q)
    if (get<std::uint8_t>(rig.wires.wire(rig.peers[static_cast<std::size_t>(q)].rank, rig.j)) !=
        images[static_cast<std::size_t>(q)])
      fail("the import wrote into a wire buffer");
  return 0;
}
