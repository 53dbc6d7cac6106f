// src/api/dispatch.cpp — the public dispatch API (fftconv/dispatch.hpp).
#include "dispatch/router.hpp"
#include "fftconv/compiled_configs.hpp"
#include "fftconv/dispatch.hpp"

namespace fftconv {

std::span<const tile_config> compiled_configs() noexcept { return detail::compiled_table; }

const char* to_string(path_kind k) noexcept {
    switch (k) {
        case path_kind::compiled: return "compiled";
        case path_kind::registered: return "registered";
        case path_kind::generic: return "generic";
        case path_kind::direct: return "direct";
    }
    return "unknown";
}

dispatch_decision choose_dispatch(const problem& p, int forced_tile_extent) {
    return detail::find_route({}, p, forced_tile_extent).decision;
}

}  // namespace fftconv
