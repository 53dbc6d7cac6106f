// Geometry: every compiled configuration's constants, and the tiling of a
// problem (tiles cover the output exactly once, workspace regions disjoint).
#include "doctest.hpp"

#include <algorithm>
#include <vector>

#include <boost/hana/for_each.hpp>

#include "dispatch_table.hpp"
#include "fftconv/detail/tiling.hpp"
#include "fftconv/dispatch.hpp"

using namespace fftconv;

namespace {

// Independent of config.hpp's formulas: counted by brute force.
// Outputs of a circular correlation of T samples with K taps that no
// wrap-around reached: i with i + K - 1 < T.
int count_unwrapped_outputs(int t, int k) {
    int n = 0;
    for (int i = 0; i < t; ++i) n += i + k - 1 < t;
    return n;
}

// Columns a real T-point FFT keeps: one of each Hermitian pair {j, T - j}.
int count_hermitian_columns(int t) {
    int n = 0;
    for (int j = 0; j < t; ++j) n += j <= (t - j) % t || j == 0;
    return n;
}

}  // namespace

TEST_CASE("every table entry's compile-time geometry matches a brute-force count") {
    int entries = 0;
    boost::hana::for_each(detail::compiled_table, [&](auto c) {
        constexpr tile_config cfg = decltype(c)::value;
        using geo = tile_geometry<cfg>;
        CAPTURE(cfg.kernel_extent);
        CAPTURE(cfg.tile_extent);
        CHECK(geo::out_tile == count_unwrapped_outputs(cfg.tile_extent, cfg.kernel_extent));
        CHECK(geo::freq_cols == count_hermitian_columns(cfg.tile_extent));
        CHECK(geo::freq_bins == std::int64_t{cfg.tile_extent} * count_hermitian_columns(cfg.tile_extent));
        std::int64_t elements = 0;
        for (int r = 0; r < cfg.tile_extent; ++r) elements += cfg.tile_extent;
        CHECK(geo::tile_elements == elements);
        CHECK(geo::filter_spectrum_elements == std::int64_t{cfg.channels} * cfg.channels * geo::freq_bins);
        CHECK(geo::tile_extent > geo::kernel_extent);
        ++entries;
    });
    CHECK(entries == int(compiled_configs().size()));
    CHECK(entries >= 4);
}

TEST_CASE("every listed configuration is reachable: a problem of its shape dispatches to it") {
    const auto configs = compiled_configs();
    REQUIRE(!configs.empty());
    for (std::size_t i = 0; i < configs.size(); ++i) {
        const tile_config c = configs[i];
        CAPTURE(i);
        const problem p{1, c.channels, c.channels, c.kernel_extent + 7, c.kernel_extent + 9, c.kernel_extent};
        const dispatch_decision d = choose_dispatch(p);
        CHECK(d.path == path_kind::compiled);
        CHECK(d.config == c);
        // No earlier entry shadows it.
        for (std::size_t j = 0; j < i; ++j)
            CHECK_FALSE((configs[j].kernel_extent == c.kernel_extent && configs[j].channels == c.channels));
    }
}

TEST_CASE("tile geometry is 64-bit: extents past 46341 do not wrap") {
    constexpr tile_shape wide{512, 65536};
    static_assert(wide.tile_elements() == std::int64_t{65536} * 65536);
    static_assert(wide.freq_bins() == std::int64_t{65536} * 32769);
    const problem p{1, 1, 1, 512, 46729, 512};
    const detail::tiling t = detail::make_tiling(p, tile_shape{512, 46875});
    CHECK(t.real_elements > 0);
    CHECK(t.input_spectrum_elements == std::int64_t{46875} * (46875 / 2 + 1) * t.input_bin_stride);
    CHECK(t.fft_work_offset() > std::size_t{1} << 34);
}

TEST_CASE("tiles cover every output exactly once, for many problems and tile extents") {
    for (std::int64_t h : {1, 2, 7, 31, 64, 129}) {
        for (std::int64_t k : {1, 2, 3, 8}) {
            if (k > h) continue;
            for (int t : {8, 9, 16, 17, 32, 48, 64}) {
                if (t < k) continue;
                const problem p{2, 3, 5, h, h + 3, k};
                const detail::tiling tl = detail::make_tiling(p, tile_shape{int(k), t});
                CAPTURE(h);
                CAPTURE(k);
                CAPTURE(t);
                const int to = t - int(k) + 1;
                CHECK(tl.tiles_high * to >= p.out_height());
                CHECK((tl.tiles_high - 1) * to < p.out_height());
                CHECK(tl.tiles_wide * to >= p.out_width());
                CHECK((tl.tiles_wide - 1) * to < p.out_width());
                CHECK(tl.tiles_per_image == tl.tiles_high * tl.tiles_wide);
                // Fused tiles pair (n, n + 1): every image has an even number of slots.
                CHECK(tl.tile_slots == (tl.fused && tl.tiles_per_image % 2 == 1 ? tl.tiles_per_image + 1
                                                                                 : tl.tiles_per_image));
                CHECK(tl.gemm_rows == p.batch * tl.tile_slots);
                // Fused transforms need no real tiles; otherwise every real
                // stage fits the shared real buffer.
                CHECK(tl.fused == detail::has_fused_fft(t));
                if (tl.fused) {
                    CHECK(tl.real_elements == 0);
                } else {
                    CHECK(tl.real_elements >= p.in_channels * tl.gemm_rows * t * t);
                    CHECK(tl.real_elements >= p.out_channels * tl.gemm_rows * t * t);
                    CHECK(tl.real_elements >= p.in_channels * p.out_channels * t * t);
                }
                // Regions are aligned, ordered and large enough.
                CHECK(tl.input_spectrum_offset() % detail::workspace_alignment == 0);
                CHECK(tl.filter_spectrum_offset() - tl.input_spectrum_offset() >=
                      detail::complex_bytes(tl.shape) * std::size_t(tl.input_spectrum_elements));
                CHECK(tl.output_spectrum_offset() - tl.filter_spectrum_offset() >=
                      detail::complex_bytes(tl.shape) * std::size_t(tl.filter_spectrum_elements));
                CHECK(tl.fft_work_offset() - tl.output_spectrum_offset() >=
                      detail::complex_bytes(tl.shape) * std::size_t(tl.output_spectrum_elements));
            }
        }
    }
}

TEST_CASE("a tile as large as the kernel yields one output per side") {
    constexpr tile_shape s{5, 5};
    static_assert(s.out_tile() == 1 && s.valid());
    static_assert(!tile_shape{6, 5}.valid());
    CHECK(s.freq_cols() == 3);
    CHECK(s.freq_bins() == 15);
}

TEST_CASE("passes cover every output exactly once, on the tiles of the whole problem") {
    for (const problem& p : {problem{5, 3, 7, 40, 33, 6}, problem{1, 2, 9, 100, 17, 1}, problem{3, 1, 1, 9, 9, 9}}) {
        for (int t : {9, 16, 24}) {
            if (t < p.kernel_extent) continue;
            const tile_shape s{int(p.kernel_extent), t};
            const std::int64_t tiles_high = detail::ceil_div(p.out_height(), s.out_tile());
            for (const detail::pass_shape shape : {detail::pass_shape{p.batch, tiles_high, p.out_channels},
                                                   detail::pass_shape{2, tiles_high, p.out_channels},
                                                   detail::pass_shape{1, 1, p.out_channels},
                                                   detail::pass_shape{1, 2, 2}, detail::pass_shape{1, 1, 1}}) {
                CAPTURE(to_string(p));
                CAPTURE(t);
                CAPTURE(shape.batch);
                CAPTURE(shape.tile_rows);
                CAPTURE(shape.out_channels);
                std::vector<int> covered(std::size_t(p.output_elements()), 0);
                int first_passes = 0;
                detail::for_each_pass(p, s, shape, [&](const problem& q, std::int64_t b0, std::int64_t r0,
                                                       std::int64_t o0, bool first) {
                    first_passes += first;
                    CHECK(q.width == p.width);
                    CHECK(q.in_channels == p.in_channels);
                    CHECK(q.out_width() == p.out_width());
                    const std::int64_t row0 = r0 * s.out_tile();  // a pass starts on a tile boundary
                    for (std::int64_t b = 0; b < q.batch; ++b)
                        for (std::int64_t o = 0; o < q.out_channels; ++o)
                            for (std::int64_t i = 0; i < q.out_height(); ++i)
                                for (std::int64_t j = 0; j < q.out_width(); ++j)
                                    ++covered[std::size_t((((b0 + b) * p.out_channels + o0 + o) * p.out_height() +
                                                           row0 + i) * p.out_width() + j)];
                });
                CHECK(first_passes == int(detail::ceil_div(p.out_channels, shape.out_channels)));
                CHECK(std::count(covered.begin(), covered.end(), 1) == std::int64_t(covered.size()));
            }
        }
    }
}
