// src/dispatch/compiled_table.cu — the compiled configurations as
// specializations. Compiled by nvcc like the entries it points at
// (src/dispatch/compiled_entry.cu.in), so both name them alike.
#include <array>
#include <utility>

#include "dispatch/compiled_table.hpp"
#include "fftconv/compiled_configs.hpp"

namespace fftconv::detail {
namespace {

template <std::size_t... I>
constexpr std::array<specialization, sizeof...(I)> make_table(std::index_sequence<I...>) {
    return {{specialization{compiled_table[I], &run_specialized<compiled_table[I]>,
                            &transform_specialized<compiled_table[I]>,
                            &specialized_kernels<compiled_table[I]>}...}};
}

const auto table = make_table(std::make_index_sequence<compiled_table.size()>{});

}  // namespace

std::span<const specialization> compiled_specializations() noexcept { return table; }

}  // namespace fftconv::detail
