#ifndef STATEXFER_TEST_CUDA_CATEGORY_HPP
#define STATEXFER_TEST_CUDA_CATEGORY_HPP

#include <gtest/gtest.h>

#define TEST_CATEGORY cuda
#define TEST_EXECSPACE Kokkos::Cuda

#endif
