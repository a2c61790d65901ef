#ifndef STATEXFER_TEST_SERIAL_CATEGORY_HPP
#define STATEXFER_TEST_SERIAL_CATEGORY_HPP

#include <gtest/gtest.h>

#define TEST_CATEGORY serial
#define TEST_EXECSPACE Kokkos::Serial

#endif
