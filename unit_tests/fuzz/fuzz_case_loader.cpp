// libFuzzer target: malformed stx-case/1 folders and .npy files.
//
// 1. The whole input, written as one file, goes through test::read_npy.
// 2. The input is split into a case folder: the bytes before the first
//    separator "\n%%%" are case.json; every later part is "NAME\nBYTES", written
//    as NAME (".npy" appended when NAME has no dot; NAME may start with
//    "expected/"; other names are skipped). test::load_case must then either
//    succeed or throw CaseError (std::invalid_argument is tolerated as the
//    library's own refusal); when it loads, test::run_case<Kokkos::Serial> runs it
//    (construction errors come back as construct_error, not thrown).
// Any other exception aborts, so that libFuzzer reports it; ASan and UBSan catch
// the rest.

#include <Kokkos_Core.hpp>

#include <stdlib.h>  // mkdtemp

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <typeinfo>

#include <test_common/case.hpp>
#include <test_common/run_case.hpp>

namespace {

namespace fs = std::filesystem;
using statexfer::test::CaseError;

constexpr std::string_view separator = "\n%%%";

fs::path& work_dir() {
  static fs::path dir;
  return dir;
}

void write_file(const fs::path& file, std::string_view bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// "expected/errors" -> "expected/errors.npy"; empty for names that would leave the folder.
std::string file_name(std::string_view name) {
  std::string prefix;
  if (name.substr(0, 9) == "expected/") {
    prefix = "expected/";
    name.remove_prefix(9);
  }
  if (name.empty() || name.size() > 64 || name == "." || name == "..") return {};
  for (const char ch : name)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' || ch == '-')) return {};
  std::string out = prefix + std::string(name);
  if (name.find('.') == std::string_view::npos) out += ".npy";
  return out;
}

[[noreturn]] void crash(const char* where, const std::exception& e) {
  std::fprintf(stderr, "fuzz_case_loader: %s threw something other than CaseError: %s: %s\n", where, typeid(e).name(),
               e.what());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  Kokkos::initialize();
  std::atexit([] { Kokkos::finalize(); });
  // Memory-backed when possible: every input writes a dozen small files.
  std::error_code shm_ec;
  const fs::path base = fs::is_directory("/dev/shm", shm_ec) ? fs::path("/dev/shm") : fs::temp_directory_path();
  std::string templ = (base / "statexfer-fuzz-XXXXXX").string();
  if (!mkdtemp(templ.data())) {
    std::perror("fuzz_case_loader: mkdtemp");
    std::abort();
  }
  work_dir() = templ;
  std::atexit([] {
    std::error_code ec;
    fs::remove_all(work_dir(), ec);
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const fs::path& dir = work_dir();

  // 1. Raw bytes as a .npy file.
  {
    const fs::path file = dir / "raw.npy";
    write_file(file, input);
    try {
      const auto a = statexfer::test::read_npy(file);
      if (a.elements() * static_cast<std::int64_t>(statexfer::dtype_size(a.dtype)) !=
          static_cast<std::int64_t>(a.bytes.size()))
        std::abort();  // read_npy promises bytes.size() == elements() * dtype size
    } catch (const CaseError&) {
    } catch (const std::exception& e) {
      crash("read_npy", e);
    }
  }

  // 2. A case folder.
  const fs::path case_dir = dir / "case";
  std::error_code ec;
  fs::remove_all(case_dir, ec);
  fs::create_directories(case_dir, ec);
  std::size_t pos = input.find(separator);
  write_file(case_dir / "case.json", input.substr(0, pos));
  while (pos != std::string_view::npos) {
    const std::size_t begin = pos + separator.size();
    pos = input.find(separator, begin);
    const std::string_view part = input.substr(begin, pos == std::string_view::npos ? pos : pos - begin);
    const std::size_t newline = part.find('\n');
    if (newline == std::string_view::npos) continue;
    const std::string name = file_name(part.substr(0, newline));
    if (name.empty()) continue;
    if (name.rfind("expected/", 0) == 0) fs::create_directories(case_dir / "expected", ec);
    write_file(case_dir / name, part.substr(newline + 1));
  }

  try {
    const statexfer::test::Case c = statexfer::test::load_case(case_dir);
    const auto outputs = statexfer::test::run_case<Kokkos::Serial>(c);
    (void)statexfer::test::compare_outputs(outputs, c.expected);
  } catch (const CaseError&) {
  } catch (const std::invalid_argument&) {
  } catch (const std::exception& e) {
    crash("load_case/run_case", e);
  }
  return 0;
}
