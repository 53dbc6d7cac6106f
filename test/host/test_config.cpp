// Geometry: every compiled configuration's constants, and the tiling of a
// problem (tiles cover the output exactly once, workspace regions disjoint).
#include "doctest.hpp"

#include <boost/hana/for_each.hpp>

#include "dispatch_table.hpp"
#include "fftconv/detail/tiling.hpp"
#include "fftconv/dispatch.hpp"

using namespace fftconv;

TEST_CASE("every table entry's compile-time geometry matches the runtime formulas") {
    int entries = 0;
    boost::hana::for_each(detail::compiled_table, [&](auto c) {
        constexpr tile_config cfg = decltype(c)::value;
        using geo = tile_geometry<cfg>;
        const runtime_geometry rt = runtime_geometry::from(tile_shape{cfg.kernel_extent, cfg.tile_extent});
        CAPTURE(cfg.kernel_extent);
        CAPTURE(cfg.tile_extent);
        CHECK(geo::out_tile == cfg.tile_extent - cfg.kernel_extent + 1);
        CHECK(geo::out_tile == rt.out_tile);
        CHECK(geo::freq_cols == cfg.tile_extent / 2 + 1);
        CHECK(geo::freq_cols == rt.freq_cols);
        CHECK(geo::freq_bins == cfg.tile_extent * (cfg.tile_extent / 2 + 1));
        CHECK(geo::freq_bins == rt.freq_bins);
        CHECK(geo::tile_elements == cfg.tile_extent * cfg.tile_extent);
        CHECK(geo::filter_spectrum_elements ==
              std::int64_t{cfg.channels} * cfg.channels * geo::freq_bins);
        CHECK(geo::tile_extent > geo::kernel_extent);
        ++entries;
    });
    CHECK(entries == int(compiled_configs().size()));
    CHECK(entries >= 4);
}

TEST_CASE("compiled_configs lists the table in order") {
    const auto configs = compiled_configs();
    REQUIRE(configs.size() == detail::compiled_array.size());
    for (std::size_t i = 0; i < configs.size(); ++i) CHECK(configs[i] == detail::compiled_array[i]);
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
                CHECK(tl.gemm_rows == p.batch * tl.tiles_high * tl.tiles_wide);
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
                      std::size_t(8 * tl.input_spectrum_elements));
                CHECK(tl.output_spectrum_offset() - tl.filter_spectrum_offset() >=
                      std::size_t(8 * tl.filter_spectrum_elements));
                CHECK(tl.fft_work_offset() - tl.output_spectrum_offset() >=
                      std::size_t(8 * tl.output_spectrum_elements));
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
