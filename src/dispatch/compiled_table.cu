// src/dispatch/compiled_table.cu — the compiled configurations as specializations the
// dispatch can run, and the lookup. Compiled by nvcc like the entries it
// points at (src/dispatch/compiled_entry.cu.in), so both name them alike.
#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "dispatch/compiled_table.hpp"
#include "direct/direct_depthwise.hpp"
#include "fftconv/compiled_configs.hpp"
#include "fftconv/detail/runtime/check.hpp"
#include "dispatch/cost_model.hpp"

namespace fftconv::detail {
namespace {

template <std::size_t... I>
constexpr std::array<specialization, sizeof...(I)> make_table(std::index_sequence<I...>) {
    return {{specialization{compiled_table[I], &run_specialized<compiled_table[I]>,
                            &transform_specialized<compiled_table[I]>,
                            &specialized_kernels<compiled_table[I]>}...}};
}

const auto table = make_table(std::make_index_sequence<compiled_table.size()>{});

dispatch_decision decision(path_kind path, const problem& p, int tile_extent) {
    return {path, tile_geometry<>(int(p.kernel.height), int(p.kernel.width), p.in_channels, p.out_channels,
                                  tile_extent)};
}

}  // namespace

std::span<const specialization> compiled_specializations() noexcept { return table; }

route find_route(std::span<const specialization> registered, const problem& p, int forced_tile_extent) {
    validate(p);
    const std::int64_t kernel = std::max(p.kernel.height, p.kernel.width);
    if (forced_tile_extent < 0 ||
        (forced_tile_extent > 0 && (forced_tile_extent < kernel || forced_tile_extent > max_forced_tile_extent)))
        throw_invalid("fftconv: forced tile extent " + std::to_string(forced_tile_extent) +
                      " must be 0 (automatic) or from the kernel's larger extent " + std::to_string(kernel) +
                      " to " + std::to_string(max_forced_tile_extent));
    if (forced_tile_extent > 0) return {nullptr, decision(path_kind::generic, p, forced_tile_extent)};
    for (auto it = registered.rbegin(); it != registered.rend(); ++it)
        if (matches(it->config, p)) return {&*it, decision(path_kind::registered, p, it->config.tile_extent)};
    for (const specialization& s : table)
        if (matches(s.config, p)) return {&s, decision(path_kind::compiled, p, s.config.tile_extent)};
    const int tile_extent = choose_tile_extent(p);
    if (fits_direct_depthwise(p) && direct_depthwise_seconds(p) < estimated_seconds(p, tile_extent))
        return {nullptr, decision(path_kind::direct, p, tile_extent)};
    return {nullptr, decision(path_kind::generic, p, tile_extent)};
}

}  // namespace fftconv::detail
