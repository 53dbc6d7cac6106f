// src/dispatch_table.hpp — the configurations compiled into the library, and
// the one lookup that maps a problem to its geometry.
//
// Each entry is a tile_config; src/context.cu instantiates the pipeline for
// every entry, and a runtime problem is matched against them in table order.
// The tile extents are the ones the bench run cited next to each entry chose.
#pragma once

#include <array>
#include <string>

#include <boost/hana/tuple.hpp>
#include <boost/hana/unpack.hpp>

#include "fftconv/config.hpp"
#include "fftconv/dispatch.hpp"
#include "fftconv/problem.hpp"
#include "fftconv/status.hpp"

namespace fftconv::detail {

// A tile_config as a type, so the table can carry it into templates.
template <tile_config Cfg>
struct config_constant {
    static constexpr tile_config value = Cfg;
};

// Tile extents chosen by the H200 sweep in results/fused-4929379/sweep.log
// (fftconv-bench --tiles 16,...,64, 30 calls each, mean ms at the chosen T
// and the runner-up):
inline constexpr auto compiled_table = boost::hana::make_tuple(
    config_constant<tile_config{8, 64, 32}>{},     // 128 K8 C64 B4:    T=32 0.145, T=16 0.189
    config_constant<tile_config{16, 64, 32}>{},    // 128 K16 C64 B4:   T=32 0.212, T=64 0.323
    config_constant<tile_config{16, 128, 64}>{},   // 256 K16 C128 B2:  T=64 0.933, T=32 1.133
    config_constant<tile_config{32, 128, 64}>{});  // 256 K32 C128 B1:  T=64 0.913, T=56 3.911

inline constexpr auto compiled_array = boost::hana::unpack(
    compiled_table, [](auto... c) { return std::array<tile_config, sizeof...(c)>{decltype(c)::value...}; });

// A problem runs a compiled configuration when the kernel extent matches and
// both channel counts equal the configuration's channels.
constexpr bool matches(const tile_config& c, const problem& p) {
    return p.kernel_extent == c.kernel_extent && p.in_channels == c.channels &&
           p.out_channels == c.channels;
}

// Calls f(tile_geometry<Cfg>{}) for the first entry that matches `p` and
// returns true, or returns false when none does (a short-circuit || fold:
// the first hit stops the search).
template <class F>
bool with_compiled_geometry(const problem& p, F&& f) {
    return boost::hana::unpack(compiled_table, [&](auto... c) {
        return ((matches(decltype(c)::value, p) && (f(tile_geometry<decltype(c)::value>{}), true)) ||
                ...);
    });
}

// The single dispatch mechanism: calls f with the geometry `p` runs with — a
// compiled tile_geometry<Cfg> when the table has a match (and no tile extent
// is forced), else runtime_geometry with the forced or heuristic extent.
// Validates `p` and `forced_tile_extent` first.
// Forced tile extents above this are refused: a tuning aid needs no more, and
// 65536^2-point tiles are already 16 GiB each.
inline constexpr int max_forced_tile_extent = 1 << 16;

template <class F>
void with_geometry(const problem& p, int forced_tile_extent, F&& f) {
    validate(p);
    if (forced_tile_extent < 0 ||
        (forced_tile_extent > 0 && (forced_tile_extent < p.kernel_extent || forced_tile_extent > max_forced_tile_extent)))
        throw error(status::invalid_argument,
                    "fftconv: forced tile extent " + std::to_string(forced_tile_extent) +
                        " must be 0 (automatic) or from problem.kernel_extent = " +
                        std::to_string(p.kernel_extent) + " to " + std::to_string(max_forced_tile_extent));
    if (forced_tile_extent == 0 && with_compiled_geometry(p, f)) return;
    const int extent = forced_tile_extent > 0 ? forced_tile_extent : choose_tile_extent(p);
    f(runtime_geometry::from(tile_shape{int(p.kernel_extent), extent}));
}

}  // namespace fftconv::detail
