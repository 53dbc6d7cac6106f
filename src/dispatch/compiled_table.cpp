// src/dispatch/compiled_table.cpp — the compiled configurations as
// specializations the router can run, made from the Boost.Hana sequence of
// the build's table (compiled_sequence.hpp), which is checked here first.
//
// Host code, compiled by the C++ compiler: it only takes the addresses of the
// entry points, which the generated compiled_entry_*.cu translation units
// instantiate explicitly. nvcc hands host code to the same compiler, and the
// names agree (a class-type template argument mangles alike: this file's
// references resolve to those entries' definitions when the library links).
#include <array>
#include <span>

#include "dispatch/compiled_sequence.hpp"
#include "dispatch/compiled_table.hpp"

namespace fftconv::detail {

// The table's rules (compiled_sequence.hpp, table_rules): a failure names
// the entry. meson.build also compiles this file at configure time, so a bad
// `configs` stops `meson setup` before any nvcc translation unit starts.
static_assert(check_table(compiled_sequence));
static_assert(values_of(compiled_sequence) == compiled_table);

namespace {

template <tile_config Cfg>
constexpr specialization compiled_entry() {
    return {Cfg, &run_specialized<Cfg>, &transform_specialized<Cfg>, &specialized_kernels<Cfg>};
}

constexpr auto table = hana::unpack(compiled_sequence, [](auto... c) {
    return std::array<specialization, sizeof...(c)>{{compiled_entry<config_of<decltype(c)>::value>()...}};
});

}  // namespace

std::span<const specialization> compiled_specializations() noexcept { return table; }

}  // namespace fftconv::detail
