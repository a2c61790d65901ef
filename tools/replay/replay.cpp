// statexfer-replay: run stx-case/1 folders on a Kokkos backend and write or
// check the answers.
//
//   statexfer-replay CASE --out DIR         write errors.npy, backing.npy, cache_<name>.npy (or error.json)
//   statexfer-replay --check CASE_OR_FOLDER compare with CASE/expected
//   --fused                                 validate_and_apply() instead of validate() then apply()
//
// Exit status: 0 identical (or written), 1 some case differs, 2 bad input or usage.

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <test_common/case.hpp>
#include <test_common/run_case.hpp>
#include <tools/common/openmp_defaults.hpp>

namespace statexfer::test {
namespace {

namespace fs = std::filesystem;

constexpr const char* prog = "statexfer-replay: ";

using Runner = CaseOutputs (*)(const Case&, Steps, const TransferOptions&);

struct Backend {
  const char* name;
  Runner run;  // nullptr: not compiled in
};

// Every name the tool knows, compiled in or not, so that an unavailable one
// gets a different message from a misspelt one.
std::vector<Backend> backends() {
  return {
#ifdef KOKKOS_ENABLE_SERIAL
      {"serial", &run_case<Kokkos::Serial>},
#else
      {"serial", nullptr},
#endif
#ifdef KOKKOS_ENABLE_OPENMP
      {"openmp", &run_case<Kokkos::OpenMP>},
#else
      {"openmp", nullptr},
#endif
#ifdef KOKKOS_ENABLE_THREADS
      {"threads", &run_case<Kokkos::Threads>},
#else
      {"threads", nullptr},
#endif
#ifdef KOKKOS_ENABLE_CUDA
      {"cuda", &run_case<Kokkos::Cuda>},
#else
      {"cuda", nullptr},
#endif
#ifdef KOKKOS_ENABLE_HIP
      {"hip", &run_case<Kokkos::HIP>},
#else
      {"hip", nullptr},
#endif
  };
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

struct Options {
  std::string case_path;
  std::string out_dir;
  bool check = false;
  std::string backend = "default";
  bool quiet = false;
  bool fused = false;
};

// A difference with the row and byte of a pool or cache element, which is what
// one looks for in a byte pool.
std::string describe(const Difference& d, const Case& c) {
  std::string s = to_string(d);
  if (d.index < 0) return s;
  std::int64_t width = 0;
  if (d.array == "backing") {
    width = c.spec.row_bytes;
  } else if (d.array.rfind("cache_", 0) == 0) {
    const auto it = c.arrays.find(d.array);
    if (it != c.arrays.end() && it->second.shape.size() == 2) width = it->second.shape[1];
  }
  if (width > 0)
    s += " (" + std::string(d.array == "backing" ? "row " : "page ") + std::to_string(d.index / width) + ", byte " +
         std::to_string(d.index % width) + ")";
  return s;
}

std::string relative_name(const fs::path& dir, const fs::path& root) {
  std::error_code ec;
  const fs::path rel = fs::relative(dir, root, ec);
  if (ec || rel.empty() || rel == ".") return dir.filename().empty() ? dir.string() : dir.filename().string();
  return rel.string();
}

int replay(const Options& opt, Runner run, const std::string& backend_name) {
  const fs::path root(opt.case_path);
  const std::vector<fs::path> cases = find_cases(root);  // CaseError: no such folder
  if (cases.empty()) throw CaseError(root.string() + ": no case folders (with case.json) found");
  const bool single = cases.size() == 1 && cases[0] == root;

  std::int64_t identical = 0, differ = 0, bad = 0;
  for (const fs::path& dir : cases) {
    const std::string name = single ? dir.string() : relative_name(dir, root);
    try {
      const Case c = load_case(dir);
      if (opt.check && !c.expected.errors && !c.expected.construct_error)
        throw CaseError(dir.string() + ": no expected/ answers to check against");
      CaseOutputs outputs;
      try {
        outputs = run(c, opt.fused ? Steps::fused : Steps::separate, TransferOptions{});
      } catch (const CaseError&) {
        throw;
      } catch (const std::exception& e) {
        // The library failed in a way a case never asks for: report it as a difference.
        ++differ;
        std::cerr << prog << name << ": run failed: " << e.what() << "\n";
        continue;
      }
      if (!opt.out_dir.empty()) write_outputs(single ? fs::path(opt.out_dir) : fs::path(opt.out_dir) / name, outputs);
      if (!opt.check) continue;
      const Comparison cmp = compare_outputs(outputs, c.expected, single ? 10 : 1);
      if (cmp.identical()) {
        ++identical;
        if (single && !opt.quiet) std::cout << prog << name << ": identical (backend " << backend_name << ")\n";
        continue;
      }
      ++differ;
      if (single) {
        std::cout << prog << name << ": " << cmp.total << " difference" << (cmp.total == 1 ? "" : "s")
                  << " from expected/ (backend " << backend_name << ")\n";
        if (!opt.quiet)
          for (const auto& d : cmp.first) std::cout << "  " << describe(d, c) << "\n";
      } else {
        std::cout << prog << name << ": " << cmp.total << " difference" << (cmp.total == 1 ? "" : "s") << ", first "
                  << describe(cmp.first.front(), c) << "\n";
      }
    } catch (const CaseError& e) {
      ++bad;
      std::cerr << prog << e.what() << "\n";
    }
  }

  const auto total = static_cast<std::int64_t>(cases.size());
  if (opt.check && !opt.quiet && !single) {
    std::cout << prog << total << " cases, " << identical << " identical, " << differ << " differ";
    if (bad) std::cout << ", " << bad << " unreadable";
    std::cout << " (backend " << backend_name << ")\n";
  } else if (!opt.check && !opt.quiet) {
    std::cout << prog << "wrote " << (total - bad - differ) << " of " << total << " case" << (total == 1 ? "" : "s")
              << " into " << opt.out_dir << " (backend " << backend_name << ")\n";
  }
  if (bad) return 2;
  return differ ? 1 : 0;
}

int main_impl(int argc, char* argv[]) {
  // --kokkos-* options go to Kokkos, everything else to CLI11 (so that --help is ours).
  std::vector<char*> kokkos_args{argv[0]}, cli_args{argv[0]};
  for (int i = 1; i < argc; ++i)
    (std::string(argv[i]).rfind("--kokkos-", 0) == 0 ? kokkos_args : cli_args).push_back(argv[i]);

  Options opt;
  CLI::App app{"Run stx-case/1 state-transfer cases on a Kokkos backend; write or check their answers.",
               "statexfer-replay"};
  app.add_option("case", opt.case_path, "A case folder (with case.json), or a folder of cases")->required();
  app.add_option("--out", opt.out_dir, "Write the outputs here (one sub-folder per case for a folder of cases)");
  app.add_flag("--check", opt.check, "Compare with each case's expected/; exit 1 if any differs");
  app.add_option("--backend", opt.backend,
                 "serial, openmp, threads, cuda, hip or default (Kokkos' default execution space)")
      ->capture_default_str();
  app.add_flag("--quiet,-q", opt.quiet, "Print only failures");
  app.add_flag("--fused", opt.fused, "Run each batch with validate_and_apply() instead of validate() then apply()");
  app.footer(
      "Exit status: 0 identical (or written), 1 a case differs, 2 bad input or usage.\n"
      "Options starting with --kokkos- are passed to Kokkos::initialize.");
  try {
    app.parse(static_cast<int>(cli_args.size()), cli_args.data());
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    std::cerr << prog << e.what() << " (see --help)\n";
    return 2;
  }
  if (!opt.check && opt.out_dir.empty()) {
    std::cerr << prog << "nothing to do: give --check, --out DIR, or both (see --help)\n";
    return 2;
  }

  // The backend is chosen before Kokkos starts, so that a bad name costs nothing.
  const std::string wanted = lower(opt.backend);
  Runner run = nullptr;
  std::string backend_name;
  std::string available;
  for (const Backend& b : backends())
    if (b.run) available += (available.empty() ? "" : ", ") + std::string(b.name);
  if (wanted == "default") {
    backend_name = lower(Kokkos::DefaultExecutionSpace::name());
    for (const Backend& b : backends())
      if (b.run && backend_name == b.name) run = b.run;
    if (!run) {
      std::cerr << prog << "the default execution space " << backend_name << " is not supported\n";
      return 2;
    }
  } else {
    bool known = false;
    for (const Backend& b : backends())
      if (wanted == b.name) {
        known = true;
        run = b.run;
        backend_name = b.name;
      }
    if (!known) {
      std::cerr << prog << "unknown backend '" << opt.backend << "' (serial, openmp, threads, cuda, hip or default)\n";
      return 2;
    }
    if (!run) {
      std::cerr << prog << "backend '" << wanted << "' is not compiled into this build (available: " << available
                << ", default)\n";
      return 2;
    }
  }

  statexfer::tools::state_openmp_binding();  // no OMP_PROC_BIND advice from Kokkos
  // Kokkos' start-up advice (oversubscription) goes to stdout; --quiet means quiet.
  std::string no_warnings = "--kokkos-disable-warnings";
  if (opt.quiet) kokkos_args.push_back(no_warnings.data());
  int kargc = static_cast<int>(kokkos_args.size());
  kokkos_args.push_back(nullptr);
  Kokkos::ScopeGuard kokkos(kargc, kokkos_args.data());
  try {
    return replay(opt, run, backend_name);
  } catch (const CaseError& e) {
    std::cerr << prog << e.what() << "\n";
    return 2;
  }
}

}  // namespace
}  // namespace statexfer::test

int main(int argc, char* argv[]) {
  try {
    return statexfer::test::main_impl(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "statexfer-replay: internal error: " << e.what() << "\n";
    return 2;
  }
}
