// src/dispatch/compiled_table.hpp — the configurations compiled into this
// build (Meson option `configs`), as specializations the router can run.
#pragma once

#include <span>

#include "fftconv/dispatch.hpp"

namespace fftconv::detail {

// The library's compiled configurations, in table order (compiled_table.cpp:
// made from the Boost.Hana sequence of fftconv/compiled_configs.hpp's list).
std::span<const specialization> compiled_specializations() noexcept;

}  // namespace fftconv::detail
