#ifndef STATEXFER_TEST_OPENMP_CATEGORY_HPP
#define STATEXFER_TEST_OPENMP_CATEGORY_HPP

#include <gtest/gtest.h>

#define TEST_CATEGORY openmp
#define TEST_EXECSPACE Kokkos::OpenMP

#endif
