#ifndef STATEXFER_STATEXFER_HPP
#define STATEXFER_STATEXFER_HPP

// Everything public: layout, pool, commands, prepared transfers, error combining.

#include <statexfer/combine.hpp>
#include <statexfer/commands.hpp>
#include <statexfer/layout.hpp>
#include <statexfer/pool.hpp>
#include <statexfer/transfer.hpp>
#include <statexfer/version.hpp>

#endif
