// .npy read/write for the three dtypes cases use. The reader is written for
// untrusted input: every length is checked against the bytes actually present
// before it is used, so a malformed file gives a CaseError, never a crash.

#include <test_common/case.hpp>

#include <cctype>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string_view>
#include <system_error>

namespace statexfer::test {

namespace {

constexpr char npy_magic[] = "\x93NUMPY";
constexpr std::size_t npy_magic_size = 6;
// numpy pads headers so that the data starts on a 64-byte boundary.
constexpr std::size_t npy_align = 64;

[[noreturn]] void fail(const std::filesystem::path& file, const std::string& what) {
  throw CaseError(file.string() + ": " + what);
}

bool host_is_little_endian() {
  const std::uint16_t one = 1;
  std::uint8_t first = 0;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

const char* descr_of(DType t) {
  switch (t) {
    case DType::uint8: return "|u1";
    case DType::int32: return "<i4";
    case DType::int64: return "<i8";
    default: return nullptr;
  }
}

// The header is a Python dict literal such as
//   {'descr': '<i8', 'fortran_order': False, 'shape': (3, 4), }
// This parser accepts exactly that grammar (either quote, any whitespace,
// optional trailing commas) and reports the first thing it does not expect.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::filesystem::path& file) : s_(text), file_(file) {}

  struct Header {
    std::string descr;
    bool fortran_order = false;
    std::vector<std::int64_t> shape;
  };

  Header parse() {
    Header h;
    bool have_descr = false, have_order = false, have_shape = false;
    skip_ws();
    expect('{');
    while (true) {
      skip_ws();
      if (peek() == '}') {
        ++i_;
        break;
      }
      const std::string key = parse_string();
      skip_ws();
      expect(':');
      skip_ws();
      if (key == "descr") {
        if (have_descr) error("key 'descr' appears twice");
        if (peek() != '\'' && peek() != '"') error("unsupported dtype (descr is not a simple type string)");
        h.descr = parse_string();
        have_descr = true;
      } else if (key == "fortran_order") {
        if (have_order) error("key 'fortran_order' appears twice");
        h.fortran_order = parse_bool();
        have_order = true;
      } else if (key == "shape") {
        if (have_shape) error("key 'shape' appears twice");
        h.shape = parse_shape();
        have_shape = true;
      } else {
        error("unexpected header key '" + key + "'");
      }
      skip_ws();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      skip_ws();
      if (peek() != '}') error("expected ',' or '}' in the header dict");
    }
    skip_ws();
    if (i_ != s_.size()) error("unexpected text after the header dict");
    if (!have_descr) error("header lacks 'descr'");
    if (!have_order) error("header lacks 'fortran_order'");
    if (!have_shape) error("header lacks 'shape'");
    return h;
  }

 private:
  [[noreturn]] void error(const std::string& what) const { fail(file_, "bad header: " + what); }

  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  void expect(char c) {
    if (peek() != c || i_ >= s_.size()) error(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string parse_string() {
    const char q = peek();
    if (q != '\'' && q != '"') error("expected a quoted string");
    ++i_;
    const std::size_t begin = i_;
    while (i_ < s_.size() && s_[i_] != q) {
      if (s_[i_] == '\\') error("escapes in header strings are not supported");
      ++i_;
    }
    if (i_ >= s_.size()) error("unterminated string");
    std::string out(s_.substr(begin, i_ - begin));
    ++i_;
    return out;
  }
  bool parse_bool() {
    if (s_.substr(i_, 4) == "True") {
      i_ += 4;
      return true;
    }
    if (s_.substr(i_, 5) == "False") {
      i_ += 5;
      return false;
    }
    error("fortran_order must be True or False");
  }
  std::int64_t parse_dim() {
    if (!std::isdigit(static_cast<unsigned char>(peek()))) error("shape entries must be non-negative integers");
    std::int64_t v = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      const int d = peek() - '0';
      if (v > (std::numeric_limits<std::int64_t>::max() - d) / 10) error("shape entry too large");
      v = v * 10 + d;
      ++i_;
    }
    if (peek() == 'L') ++i_;  // Python 2 long suffix, still written by old numpy
    return v;
  }
  std::vector<std::int64_t> parse_shape() {
    std::vector<std::int64_t> shape;
    expect('(');
    skip_ws();
    if (peek() == ')') {
      ++i_;
      return shape;
    }
    while (true) {
      skip_ws();
      shape.push_back(parse_dim());
      if (shape.size() > 32) error("shape has too many dimensions");
      skip_ws();
      if (peek() == ',') {
        ++i_;
        skip_ws();
        if (peek() == ')') {
          ++i_;
          return shape;
        }
        continue;
      }
      if (peek() == ')') {
        ++i_;
        // "(5)" is an int in Python, not a tuple; numpy never writes it.
        if (shape.size() == 1) error("shape (n) must be written (n,)");
        return shape;
      }
      error("expected ',' or ')' in shape");
    }
  }

  std::string_view s_;
  std::size_t i_ = 0;
  const std::filesystem::path& file_;
};

std::uint32_t read_le(const std::uint8_t* p, int bytes) {
  std::uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

std::int64_t NpyArray::elements() const {
  std::int64_t n = 1;
  for (const std::int64_t d : shape) n *= d;
  return n;
}

NpyArray read_npy(const std::filesystem::path& file) {
  if (!host_is_little_endian()) fail(file, "reading .npy files needs a little-endian host");
  std::error_code ec;
  const auto status = std::filesystem::status(file, ec);
  if (ec || !std::filesystem::exists(status)) fail(file, "no such file");
  if (!std::filesystem::is_regular_file(status)) fail(file, "not a regular file");
  const auto size = std::filesystem::file_size(file, ec);
  if (ec) fail(file, "cannot read its size: " + ec.message());

  std::ifstream in(file, std::ios::binary);
  if (!in) fail(file, "cannot open");
  std::vector<std::uint8_t> raw(static_cast<std::size_t>(size));
  if (size > 0 && !in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(size)))
    fail(file, "read error");

  if (raw.size() < npy_magic_size + 2 || std::memcmp(raw.data(), npy_magic, npy_magic_size) != 0)
    fail(file, "not a .npy file (bad magic)");
  const int major = raw[6], minor = raw[7];
  int len_bytes = 0;
  if (major == 1)
    len_bytes = 2;
  else if (major == 2 || major == 3)
    len_bytes = 4;
  else
    fail(file, "unsupported .npy version " + std::to_string(major) + "." + std::to_string(minor));
  const std::size_t preamble = npy_magic_size + 2 + static_cast<std::size_t>(len_bytes);
  if (raw.size() < preamble) fail(file, "truncated header (file ends in the header length)");
  const std::size_t header_len = read_le(raw.data() + npy_magic_size + 2, len_bytes);
  if (header_len > raw.size() - preamble)
    fail(file, "truncated header (header length " + std::to_string(header_len) + ", " +
                   std::to_string(raw.size() - preamble) + " bytes left in the file)");
  const std::string_view header_text(reinterpret_cast<const char*>(raw.data() + preamble), header_len);
  for (const char ch : header_text)
    if (static_cast<unsigned char>(ch) >= 0x80 || ch == '\0') fail(file, "bad header: non-ASCII byte");
  const auto header = HeaderParser(header_text, file).parse();

  NpyArray a;
  if (header.descr == "|u1" || header.descr == "<u1" || header.descr == "u1" || header.descr == "=u1" ||
      header.descr == ">u1")  // byte order is meaningless for one byte
    a.dtype = DType::uint8;
  else if (header.descr == "<i4")
    a.dtype = DType::int32;
  else if (header.descr == "<i8")
    a.dtype = DType::int64;
  else
    fail(file, "unsupported dtype '" + header.descr + "' (supported: '|u1', '<i4', '<i8')");
  if (header.fortran_order) fail(file, "fortran_order True is not supported (C order only)");

  // Element count without overflow: a zero extent makes the array empty, else
  // each factor must keep the byte count within what the file holds.
  const std::size_t data_bytes = raw.size() - preamble - header_len;
  const auto item = static_cast<std::uint64_t>(dtype_size(a.dtype));
  std::uint64_t count = 1;
  bool empty = false;
  for (const std::int64_t d : header.shape)
    if (d == 0) empty = true;
  if (!empty)
    for (const std::int64_t d : header.shape) {
      const auto ud = static_cast<std::uint64_t>(d);
      if (count > std::numeric_limits<std::uint64_t>::max() / item / ud || count * ud * item > data_bytes)
        fail(file, "data size does not match shape " + shape_text(header.shape) + " of " + header.descr + " (" +
                       std::to_string(data_bytes) + " data bytes)");
      count *= ud;
    }
  else
    count = 0;
  if (count * item != data_bytes)
    fail(file, "data size does not match shape " + shape_text(header.shape) + " of " + header.descr + ": expected " +
                   std::to_string(count * item) + " bytes, the file has " + std::to_string(data_bytes));
  a.shape = header.shape;
  a.bytes.assign(raw.begin() + static_cast<std::ptrdiff_t>(preamble + header_len), raw.end());
  return a;
}

void write_npy(const std::filesystem::path& file, const NpyArray& array) {
  if (!host_is_little_endian()) fail(file, "writing .npy files needs a little-endian host");
  const char* descr = descr_of(array.dtype);
  if (!descr) fail(file, std::string("cannot write dtype ") + to_string(array.dtype) + " (uint8, int32, int64 only)");
  std::uint64_t count = 1;
  for (const std::int64_t d : array.shape) {
    if (d < 0) fail(file, "cannot write a negative extent in shape " + shape_text(array.shape));
    count *= static_cast<std::uint64_t>(d);
  }
  if (count * dtype_size(array.dtype) != array.bytes.size())
    fail(file, "array of shape " + shape_text(array.shape) + " holds " + std::to_string(array.bytes.size()) +
                   " bytes instead of " + std::to_string(count * dtype_size(array.dtype)));

  std::string header =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape_text(array.shape) + ", }";
  // Version 1.0 holds a 16-bit header length; larger headers (never for
  // these dtypes and ranks) would need 2.0.
  const std::size_t preamble = npy_magic_size + 2 + 2;
  const std::size_t total = (preamble + header.size() + 1 + npy_align - 1) / npy_align * npy_align;
  header.append(total - preamble - header.size() - 1, ' ');
  header.push_back('\n');
  if (header.size() > 0xffff) fail(file, "header too long for .npy version 1.0");

  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  if (!out) fail(file, "cannot open for writing");
  const std::uint8_t version[2] = {1, 0};
  const std::uint8_t len[2] = {static_cast<std::uint8_t>(header.size() & 0xff),
                               static_cast<std::uint8_t>(header.size() >> 8)};
  out.write(npy_magic, npy_magic_size);
  out.write(reinterpret_cast<const char*>(version), 2);
  out.write(reinterpret_cast<const char*>(len), 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  if (!array.bytes.empty())
    out.write(reinterpret_cast<const char*>(array.bytes.data()), static_cast<std::streamsize>(array.bytes.size()));
  out.close();
  if (!out) fail(file, "write error");
}

}  // namespace statexfer::test
