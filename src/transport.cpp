// The transports' non-template parts: names, and whether MPI is CUDA-aware.
#include <statexfer/transport.hpp>

#ifdef STATEXFER_HAVE_MPI
// Open MPI declares MPIX_Query_cuda_support() in its extensions' header.
#if defined(OPEN_MPI) && defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif
#endif

namespace statexfer {

const char* to_string(TransportBackend backend) noexcept {
  switch (backend) {
    case TransportBackend::mpi: return "mpi";
    case TransportBackend::nccl: return "nccl";
  }
  return "unknown";
}

const char* to_string(TransportPath path) noexcept {
  switch (path) {
    case TransportPath::host_memory: return "host memory";
    case TransportPath::host_staged: return "host-staged";
    case TransportPath::device_direct: return "device-direct";
    case TransportPath::nccl: return "nccl";
  }
  return "unknown";
}

const char* to_string(TransportRole role) noexcept {
  switch (role) {
    case TransportRole::prefill: return "prefill";
    case TransportRole::decode: return "decode";
  }
  return "unknown";
}

#ifdef STATEXFER_HAVE_MPI
bool mpi_cuda_aware() noexcept {
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && defined(MPIX_CUDA_AWARE_SUPPORT)
  // Built with CUDA support (the macro) and running with it (the query).
  return MPIX_CUDA_AWARE_SUPPORT && MPIX_Query_cuda_support() == 1;
#elif defined(MPICH) && defined(MPIX_GPU_SUPPORT_CUDA)
  int supported = 0;
  return MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &supported) == MPI_SUCCESS && supported != 0;
#else
  return false;
#endif
}
#endif

}  // namespace statexfer
