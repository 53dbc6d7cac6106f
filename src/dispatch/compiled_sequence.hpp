// src/dispatch/compiled_sequence.hpp — the compiled configurations as a
// Boost.Hana sequence, and the rules a table of them must keep, checked at
// compile time (src/dispatch/compiled_table.cpp; meson configures with them).
//
// Host code only, and the library's own: Hana is not part of the installed
// headers, so users who include fftconv/specialize.cuh need no Boost. nvcc
// compiles Hana in host code (nvcc 13 with Boost 1.74 does), but not in
// device code: hana::for_each in a __global__ function is "undefined in
// device code" (its function objects are host constexpr variables), so the
// kernels and the entry translation units see the list as plain C++
// (config_list, compiled_table in fftconv/compiled_configs.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <type_traits>

#include <boost/hana.hpp>

#include "fftconv/compiled_configs.hpp"
#include "fftconv/config.hpp"
#include "fftconv/detail/tiling/tile_family.hpp"

namespace fftconv::detail {

namespace hana = boost::hana;

// hana::tuple_t<config<...>...>: a sequence of types, one per configuration.
template <class... Configs>
constexpr auto as_sequence(config_list<Configs...>) {
    return hana::tuple_t<Configs...>;
}

// The build's table (Meson option `configs`), in dispatch order.
inline constexpr auto compiled_sequence = as_sequence(compiled_config_list{});

// The config<...> class an element of such a sequence holds.
template <class Element>
using config_of = typename std::remove_cvref_t<Element>::type;

// A sequence's configurations as values, in order.
template <class Sequence>
constexpr auto values_of(Sequence sequence) {
    return hana::unpack(sequence, [](auto... c) {
        return std::array<tile_config, sizeof...(c)>{{config_of<decltype(c)>::value...}};
    });
}

namespace table_rules {

// Extents of one: a 1 x 1 kernel, one channel.
constexpr bool positive(const tile_config& c) { return c.kernel_extent >= 1 && c.channels >= 1; }

// A tile larger than the kernel (else one output per side), and even (the
// real FFT's T/2 + 1 columns then hold no redundant bin): tile_geometry's
// rules for a compiled geometry.
constexpr bool tile_fits(const tile_config& c) { return c.tile_extent > c.kernel_extent && c.tile_extent % 2 == 0; }

// How the pipeline transforms the entry's tiles (pipeline.cuh: run_pass and
// on_transform_path; workspace_layout: image_to_output): a depthwise entry on a
// fused-depthwise extent runs one kernel per tile pair, with that extent's
// line transform; other entries on a fused-dense extent, the fused register
// FFTs; everything else cuFFT.
constexpr line_transform pipeline_lines(const tile_config& c) {
    if (c.depthwise && has_fused_depthwise(c.tile_extent)) return tile_family_of(c.tile_extent).lines;
    if (has_fused_fft(c.tile_extent)) return line_transform::registers;
    return line_transform::cufft;
}

// The tile extent has a family for the entry's kind: a fused path needs its
// extent's row in tile_family.hpp (the kernels are instantiated from it);
// cuFFT runs any extent. Every extent passes today, since an extent without a
// row falls back to cuFFT for either kind; the rule is what a row that some
// kind could not run would have to meet.
constexpr bool has_family(const tile_config& c) {
    const line_transform lines = pipeline_lines(c);
    return lines == line_transform::cufft ||
           (family_extents::contains(c.tile_extent) && tile_family_of(c.tile_extent).tile_extent == c.tile_extent &&
            (lines == line_transform::registers ? tile_family_of(c.tile_extent).fused_dense()
                                                : c.depthwise && tile_family_of(c.tile_extent).fused_depthwise()));
}

// The dispatch takes the first entry that fits a problem (dispatch.hpp,
// matches: kernel extent, channels, kind): a later one with the same three
// could never run.
constexpr bool shadows(const tile_config& earlier, const tile_config& later) {
    return earlier.kernel_extent == later.kernel_extent && earlier.channels == later.channels &&
           earlier.depthwise == later.depthwise;
}

constexpr bool entry_ok(const tile_config& c) { return positive(c) && tile_fits(c) && has_family(c); }

}  // namespace table_rules

// Whether a sequence keeps every rule, as a value (for tests of the rules).
template <class Sequence>
constexpr bool follows_table_rules(Sequence sequence) {
    const auto configs = values_of(sequence);
    for (std::size_t i = 0; i < configs.size(); ++i) {
        if (!table_rules::entry_ok(configs[i])) return false;
        for (std::size_t j = 0; j < i; ++j)
            if (table_rules::shadows(configs[j], configs[i])) return false;
    }
    return true;
}

// The same rules as static_asserts, each in a class whose template arguments
// name the entry, so a failure reads "in instantiation of
// checked_entry<1, config<8, 64, 7, false>>: static assertion failed: ...".
template <bool Checked, tile_config C>
consteval bool geometry_instantiates() {
    // geometry_of<C>'s own static_asserts (config.hpp: e.g. the filter
    // spectrum indexable with 32-bit cuBLAS strides), here rather than
    // minutes into the entry's nvcc translation unit; only once the rules
    // above hold, so a failure is reported once.
    if constexpr (Checked) return sizeof(geometry_of<C>) > 0;
    else return true;  // the failed rule stopped compilation already
}

template <std::size_t Index, class Config>
struct checked_entry {
    static constexpr tile_config c = Config::value;
    static_assert(table_rules::positive(c), "configs: an entry's kernel extent and channels must be at least 1");
    static_assert(table_rules::tile_fits(c),
                  "configs: an entry's tile extent must be even and larger than its kernel extent");
    static_assert(table_rules::has_family(c),
                  "configs: the pipeline has no transform for this entry's tile extent and kind "
                  "(detail/tiling/tile_family.hpp)");
    static constexpr bool value = geometry_instantiates<table_rules::entry_ok(c), c>();
};

template <std::size_t EarlierIndex, class Earlier, std::size_t Index, class Config>
struct unshadowed_entry {
    static_assert(!table_rules::shadows(Earlier::value, Config::value),
                  "configs: an entry has the kernel extent, channels and kind of an earlier one, so the dispatch "
                  "(the first entry that fits) could never run it");
    static constexpr bool value = true;
};

// Instantiates the checks of every entry, and of every pair of an entry and
// one before it: compiles (and is true) only when every rule holds.
template <class Sequence>
constexpr bool check_table(Sequence sequence) {
    return hana::unpack(hana::make_range(hana::size_c<0>, hana::length(sequence)), [](auto... index) {
        [[maybe_unused]] const auto entry = [](auto i) {  // unused for an empty table
            using later = config_of<decltype(hana::at(Sequence{}, i))>;
            const bool unshadowed = hana::unpack(hana::make_range(hana::size_c<0>, i), [](auto... earlier) {
                return (unshadowed_entry<decltype(earlier)::value, config_of<decltype(hana::at(Sequence{}, earlier))>,
                                         decltype(i)::value, later>::value &&
                        ... && true);
            });
            return checked_entry<decltype(i)::value, later>::value && unshadowed;
        };
        return (entry(index) && ... && true);
    });
}

}  // namespace fftconv::detail
