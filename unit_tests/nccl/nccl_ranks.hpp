#ifndef STATEXFER_UNIT_TESTS_NCCL_RANKS_HPP
#define STATEXFER_UNIT_TESTS_NCCL_RANKS_HPP

// What the NCCL checks share: one forked process per GPU of this host, without
// MPI. The parent never initialises CUDA (a forked child could not use it);
// rank 0 makes the ncclUniqueId (its process then hosts NCCL's bootstrap root)
// and writes one copy per other rank into a pipe, whose writes of one id (128
// bytes) are atomic; each rank initialises Kokkos on its own GPU.

#include <Kokkos_Core.hpp>
#include <cuda_runtime.h>
#include <nccl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace statexfer::test {

/// The GPUs this host shows, counted in a child process.
inline int visible_gpus() {
  int fds[2];
  if (pipe(fds) != 0) return 0;
  if (fork() == 0) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
    (void)!write(fds[1], &n, sizeof n);
    _exit(0);
  }
  int n = 0;
  if (read(fds[0], &n, sizeof n) != static_cast<ssize_t>(sizeof n)) n = 0;
  wait(nullptr);
  return n;
}

namespace detail {
template <class Body>
int run_rank(int rank, int ranks, int id_pipe[2], const char* program, const Body& body) {
  ncclUniqueId id;
  if (rank == 0) {
    if (ncclGetUniqueId(&id) != ncclSuccess) {
      std::fprintf(stderr, "rank 0: ncclGetUniqueId failed\n");
      return 1;
    }
    for (int r = 1; r < ranks; ++r)
      if (write(id_pipe[1], &id, sizeof id) != static_cast<ssize_t>(sizeof id)) return 1;
  } else if (read(id_pipe[0], &id, sizeof id) != static_cast<ssize_t>(sizeof id)) {
    std::fprintf(stderr, "rank %d: no NCCL unique id from rank 0\n", rank);
    return 1;
  }
  std::string device = "--kokkos-device-id=" + std::to_string(rank);
  std::vector<char*> args = {const_cast<char*>(program), device.data()};
  int argc = static_cast<int>(args.size());
  Kokkos::initialize(argc, args.data());
  int failures = 0;
  {
    ncclComm_t comm;
    if (ncclCommInitRank(&comm, ranks, id, rank) != ncclSuccess) {
      std::fprintf(stderr, "rank %d: ncclCommInitRank failed\n", rank);
      failures = 1;
    } else {
      failures += body(comm, rank);
      ncclCommDestroy(comm);
    }
  }
  Kokkos::finalize();
  std::fflush(stdout);  // the rank leaves with _exit(), which flushes nothing
  return failures == 0 ? 0 : 1;
}
}  // namespace detail

/// Runs body(comm, rank) -> failures in one forked process per rank, rank r on
/// GPU r, all in one NCCL communicator; returns how many ranks failed (or 1
/// when the pipe cannot be made). When one fails, the others are killed.
template <class Body>
int run_ranks(int ranks, const char* program, const Body& body) {
  int id_pipe[2];
  if (pipe(id_pipe) != 0) return 1;
  std::vector<pid_t> children;
  for (int r = 0; r < ranks; ++r) {
    const pid_t pid = fork();
    if (pid == 0) _exit(detail::run_rank(r, ranks, id_pipe, program, body));
    children.push_back(pid);
  }
  // A rank that fails leaves its peers waiting in NCCL for it: they are killed (and count as failed).
  int failed = 0;
  while (!children.empty()) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) return failed + static_cast<int>(children.size());
    children.erase(std::remove(children.begin(), children.end(), pid), children.end());
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
    ++failed;
    for (pid_t other : children) kill(other, SIGKILL);
  }
  return failed;
}

}  // namespace statexfer::test

#endif
