#ifndef STATEXFER_TEST_THREADS_CATEGORY_HPP
#define STATEXFER_TEST_THREADS_CATEGORY_HPP

#include <gtest/gtest.h>

#define TEST_CATEGORY threads
#define TEST_EXECSPACE Kokkos::Threads

#endif
