#ifndef STATEXFER_SIM_COMM_HPP
#define STATEXFER_SIM_COMM_HPP

// The tensor-parallel group of the simulator: MPI_COMM_WORLD when built with
// MPI and run with --tp N > 1, else one rank.

#include <cstdint>

#include <statexfer/config.hpp>

#ifdef STATEXFER_HAVE_MPI
#include <mpi.h>
#endif

namespace statexfer::sim {

struct Comm {
  int rank = 0;
  int size = 1;
#ifdef STATEXFER_HAVE_MPI
  MPI_Comm comm = MPI_COMM_NULL;
#endif

  bool distributed() const { return size > 1; }

  std::int64_t min(std::int64_t v) const { return reduce(v, Reduce::min); }
  std::int64_t max(std::int64_t v) const { return reduce(v, Reduce::max); }
  std::int64_t sum(std::int64_t v) const { return reduce(v, Reduce::sum); }
  double max(double v) const {
#ifdef STATEXFER_HAVE_MPI
    if (distributed()) MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, comm);
#endif
    return v;
  }
  void barrier() const {
#ifdef STATEXFER_HAVE_MPI
    if (distributed()) MPI_Barrier(comm);
#endif
  }

 private:
  enum class Reduce { min, max, sum };
  std::int64_t reduce(std::int64_t v, Reduce op) const {
#ifdef STATEXFER_HAVE_MPI
    if (distributed()) {
      long long x = v;
      const MPI_Op mpi_op = op == Reduce::min ? MPI_MIN : op == Reduce::max ? MPI_MAX : MPI_SUM;
      MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_LONG_LONG, mpi_op, comm);
      return x;
    }
#endif
    (void)op;
    return v;
  }
};

}  // namespace statexfer::sim

#endif
