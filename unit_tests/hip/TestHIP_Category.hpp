#ifndef STATEXFER_TEST_HIP_CATEGORY_HPP
#define STATEXFER_TEST_HIP_CATEGORY_HPP

#include <gtest/gtest.h>

#define TEST_CATEGORY hip
#define TEST_EXECSPACE Kokkos::HIP

#endif
