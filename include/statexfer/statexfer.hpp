#ifndef STATEXFER_STATEXFER_HPP
#define STATEXFER_STATEXFER_HPP

// Everything public: layout, pool, host tier, commands, prepared transfers,
// speculative commits, row claims, error combining, sharded layouts and
// prefill/decode moves. docs/api.md is the guide to it.

#include <statexfer/claims.hpp>
#include <statexfer/combine.hpp>
#include <statexfer/commands.hpp>
#include <statexfer/config.hpp>
#include <statexfer/exchange.hpp>
#include <statexfer/host_tier.hpp>
#include <statexfer/launch_plan.hpp>
#include <statexfer/layout.hpp>
#include <statexfer/options.hpp>
#include <statexfer/pool.hpp>
#include <statexfer/sharding.hpp>
#include <statexfer/speculative.hpp>
#include <statexfer/transfer.hpp>
#include <statexfer/transport.hpp>
#include <statexfer/version.hpp>

#endif
