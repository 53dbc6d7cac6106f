// Geometry: every compiled configuration's constants, static and dynamic
// extents agreeing, and the layout of a problem (tiles cover the output
// exactly once, workspace regions disjoint).
#include "doctest.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "dispatch/compiled_sequence.hpp"
#include "dispatch/cost_model.hpp"
#include "dispatch/compiled_table.hpp"
#include "fftconv/compiled_configs.hpp"
#include "fftconv/detail/tiling/pass_schedule.hpp"
#include "fftconv/detail/tiling/workspace_layout.hpp"
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

// Checks geometry_of<Cfg>'s members, which must be constant expressions,
// against brute-force counts and against the all-dynamic geometry.
template <tile_config Cfg>
void check_compiled_geometry() {
    using geo = geometry_of<Cfg>;
    static_assert(geo::compiled && geo::static_extents == tile_config{Cfg.kernel_extent, Cfg.channels, Cfg.tile_extent});
    constexpr geo g{};
    constexpr int out_tile = g.out_tile_height();     // constant expressions
    static_assert(g.out_tile_width() == out_tile);    // a compiled kernel is square
    constexpr std::int64_t bins = g.freq_bins();
    constexpr std::int64_t in_channels = g.in_channels();
    CAPTURE(Cfg.kernel_extent);
    CAPTURE(Cfg.channels);
    CAPTURE(Cfg.tile_extent);
    CHECK(out_tile == count_unwrapped_outputs(Cfg.tile_extent, Cfg.kernel_extent));
    CHECK(g.freq_cols() == count_hermitian_columns(Cfg.tile_extent));
    CHECK(bins == std::int64_t{Cfg.tile_extent} * count_hermitian_columns(Cfg.tile_extent));
    CHECK(in_channels == Cfg.channels);
    std::int64_t elements = 0;
    for (int r = 0; r < Cfg.tile_extent; ++r) elements += Cfg.tile_extent;
    CHECK(g.tile_elements() == elements);
    CHECK(g.filter_matrix() == std::int64_t{Cfg.channels} * Cfg.channels);
    // The same extents at run time give the same everything.
    const tile_geometry<> d(Cfg.kernel_extent, Cfg.kernel_extent, Cfg.channels, Cfg.channels, Cfg.tile_extent);
    CHECK(g.erased() == d);
    CHECK(d.out_tile_height() == out_tile);
    CHECK(d.out_tile_width() == out_tile);
    CHECK(d.freq_bins() == bins);
    CHECK(d.fused() == g.fused());
    // The generic path's fused geometry: only the tile extent static.
    if constexpr (has_fused_fft(Cfg.tile_extent)) {
        constexpr auto promoted = tile_geometry<>{}.with_static_tile<Cfg.tile_extent>();
        static_assert(!decltype(promoted)::static_kernel && decltype(promoted)::static_tile);
        const auto mixed = d.with_static_tile<Cfg.tile_extent>();
        CHECK(mixed.out_tile_height() == out_tile);
        CHECK(mixed.erased() == d);
    }
}

template <std::size_t... I>
int check_every_compiled_geometry(std::index_sequence<I...>) {
    (check_compiled_geometry<detail::compiled_table[I]>(), ...);
    return int(sizeof...(I));
}

}  // namespace

TEST_CASE("every table entry's compile-time geometry matches a brute-force count and its runtime twin") {
    const int entries =
        check_every_compiled_geometry(std::make_index_sequence<detail::compiled_table.size()>{});
    CHECK(entries == int(compiled_configs().size()));  // an empty table (-Dconfigs=) checks nothing here
}

TEST_CASE("every listed configuration is reachable: a problem of its shape dispatches to it") {
    const auto configs = compiled_configs();
    for (std::size_t i = 0; i < configs.size(); ++i) {
        const tile_config c = configs[i];
        CAPTURE(i);
        const problem p{.batch = 1, .in_channels = c.channels, .out_channels = c.channels,
                        .height = c.kernel_extent + 7, .width = c.kernel_extent + 9, .kernel = c.kernel_extent,
                        .groups = c.depthwise ? c.channels : 1};
        const dispatch_decision d = choose_dispatch(p);
        CHECK(d.path == path_kind::compiled);
        CHECK(d.geometry == tile_geometry<>(c.kernel_extent, c.kernel_extent, c.channels, c.channels, c.tile_extent));
        // No earlier entry shadows it.
        for (std::size_t j = 0; j < i; ++j)
            CHECK_FALSE((configs[j].kernel_extent == c.kernel_extent && configs[j].channels == c.channels &&
                         configs[j].depthwise == c.depthwise));
    }
}

// The rules of a table (src/dispatch/compiled_sequence.hpp), on tables that
// keep and break them: the build checks its own with the same rules as
// static_asserts, at configure time and in compiled_table.cpp.
namespace table_rules_examples {
using namespace fftconv::detail;
static_assert(follows_table_rules(compiled_sequence));
static_assert(follows_table_rules(hana::tuple_t<>));
static_assert(follows_table_rules(hana::tuple_t<config<8, 64, 32>, config<8, 64, 48, true>, config<16, 64, 32>>));
static_assert(!follows_table_rules(hana::tuple_t<config<8, 64, 32>, config<16, 64, 32>, config<8, 64, 48>>),
              "the third is shadowed by the first");
static_assert(!follows_table_rules(hana::tuple_t<config<8, 64, 7>>), "tile smaller than the kernel");
static_assert(!follows_table_rules(hana::tuple_t<config<8, 64, 8>>), "tile as large as the kernel");
static_assert(!follows_table_rules(hana::tuple_t<config<8, 64, 33>>), "odd tile");
static_assert(!follows_table_rules(hana::tuple_t<config<0, 64, 32>>), "no kernel");
static_assert(!follows_table_rules(hana::tuple_t<config<8, 0, 32>>), "no channels");
// The transform each kind runs at an extent (pipeline.cuh): fused where
// tile_family.hpp has a row the kind uses, cuFFT elsewhere.
static_assert(table_rules::pipeline_lines({8, 64, 32}) == line_transform::registers);
static_assert(table_rules::pipeline_lines({8, 64, 32, true}) == line_transform::registers);
static_assert(table_rules::pipeline_lines({31, 128, 96}) == line_transform::cufft);
static_assert(table_rules::pipeline_lines({31, 128, 96, true}) == line_transform::radix3);
static_assert(table_rules::pipeline_lines({8, 64, 40, true}) == line_transform::cufft);
}  // namespace table_rules_examples

TEST_CASE("every even tile extent has a family for either kind: a fused row, or cuFFT") {
    for (int t = 2; t <= 1024; t += 2)
        for (bool depthwise : {false, true}) {
            const tile_config c{1, 1, t, depthwise};
            CAPTURE(t);
            CAPTURE(depthwise);
            CHECK(detail::table_rules::has_family(c));
            CHECK((detail::table_rules::pipeline_lines(c) != detail::line_transform::cufft) ==
                  (has_fused_fft(t) || (depthwise && has_fused_depthwise(t))));
        }
}

TEST_CASE("the runtime table is the list: the specializations and compiled_configs() in compiled_config_list's order") {
    const auto specializations = detail::compiled_specializations();
    const auto configs = compiled_configs();
    REQUIRE(configs.size() == detail::compiled_table.size());
    REQUIRE(specializations.size() == configs.size());
    for (std::size_t i = 0; i < configs.size(); ++i) {
        CAPTURE(i);
        CHECK(configs[i] == detail::compiled_table[i]);
        CHECK(specializations[i].config == configs[i]);
        CHECK((specializations[i].run != nullptr && specializations[i].transform_filter != nullptr &&
               specializations[i].kernels != nullptr));
    }
}

TEST_CASE("tile geometry is 64-bit: extents past 46341 do not wrap") {
    constexpr tile_geometry<> wide(512, 512, 1, 1, 65536);
    static_assert(wide.tile_elements() == std::int64_t{65536} * 65536);
    static_assert(wide.freq_bins() == std::int64_t{65536} * 32769);
    const problem p{1, 1, 1, 512, 46729, 512};
    const detail::workspace_layout t = detail::make_layout(p, 46875);
    CHECK(t.real_elements > 0);
    CHECK(t.input_spectrum_elements == std::int64_t{46875} * (46875 / 2 + 1) * t.input_bin_stride);
    CHECK(t.fft_work_offset() > std::size_t{1} << 34);
}

TEST_CASE("a valid problem's layout never wraps: counts past any memory stop at a bound and say so") {
    // 2^31 - 1 input channels of a 1 x 1 image padded to 2^18 + 1 rows and
    // columns: every tensor below 2^40 elements, so valid; but at small tile
    // extents its input spectrum would count ~2^67 elements.
    const problem huge{.batch = 1, .in_channels = max_extent, .out_channels = 1, .height = 1, .width = 1,
                       .kernel = 1, .padding = {1 << 17, 1 << 17}};
    CHECK_NOTHROW(validate(huge));
    for (const int t : {1, 2, 3, 4, 16, 32, 48, 64, 96, 128, 1024}) {
        CAPTURE(t);
        const detail::workspace_layout l = detail::make_layout(huge, t);
        CHECK(l.beyond_memory);
        for (const std::int64_t n : {l.tiles_per_image, l.gemm_rows, l.input_transforms, l.output_transforms,
                                     l.real_elements, l.input_spectrum_elements, l.filter_spectrum_elements,
                                     l.output_spectrum_elements}) {
            CHECK(n >= 0);
            CHECK(n <= detail::max_layout_count);
        }
        CHECK(l.fft_work_offset() < std::size_t{1} << 62);  // byte offsets made of bounded counts
        CHECK(std::isinf(detail::estimated_seconds(huge, t)));
    }
    // The router still answers (the pass schedule then refuses it as out of memory).
    CHECK(choose_tile_extent(huge) >= 1);

    // A problem within memory keeps its exact counts: 256^2 K16 C128 B2 at
    // T = 64 is 25 tiles an image (49 outputs a side), 26 slots (paired),
    // 52 GEMM rows.
    const problem large{.batch = 2, .in_channels = 128, .out_channels = 128, .height = 256, .width = 256,
                        .kernel = 16};
    const detail::workspace_layout l = detail::make_layout(large, 64);
    CHECK_FALSE(l.beyond_memory);
    CHECK(l.tiles_per_image == 25);
    CHECK(l.gemm_rows == 52);
    CHECK(l.input_transforms == 128 * 52);
    CHECK(l.filter_spectrum_elements == 64 * 33 * 128 * 128);
}

TEST_CASE("tiles cover every output exactly once, for many problems and tile extents") {
    for (std::int64_t h : {1, 2, 7, 31, 64, 129}) {
        for (std::int64_t k : {1, 2, 3, 8}) {
            for (std::int64_t pad : {0, 1, 4}) {
                if (k > h + 2 * pad) continue;
                for (int t : {8, 9, 16, 17, 32, 48, 64}) {
                    if (t < k) continue;
                    const problem p{.batch = 2, .in_channels = 3, .out_channels = 5, .height = h, .width = h + 3,
                                    .kernel = k, .padding = pad};
                    const detail::workspace_layout tl = detail::make_layout(p, t);
                    CAPTURE(h);
                    CAPTURE(k);
                    CAPTURE(pad);
                    CAPTURE(t);
                    // T - K + 1 outputs per tile, or all of them where one tile covers the padded image.
                    const int to = t - int(k) + 1;
                    CHECK(tl.outputs.high == (t >= h + pad && t >= p.out_height() ? p.out_height() : to));
                    CHECK(tl.outputs.wide == (t >= h + 3 + pad && t >= p.out_width() ? p.out_width() : to));
                    CHECK(tl.outputs.high >= std::min<std::int64_t>(to, p.out_height()));
                    CHECK(tl.tiles_high * tl.outputs.high >= p.out_height());
                    CHECK((tl.tiles_high - 1) * tl.outputs.high < p.out_height());
                    CHECK(tl.tiles_wide * tl.outputs.wide >= p.out_width());
                    CHECK((tl.tiles_wide - 1) * tl.outputs.wide < p.out_width());
                    CHECK(tl.tiles_per_image == tl.tiles_high * tl.tiles_wide);
                    // Fused tiles pair (n, n + 1): every image has an even number of slots.
                    CHECK(tl.tile_slots == (tl.geometry.fused() && tl.tiles_per_image % 2 == 1 ? tl.tiles_per_image + 1
                                                                                     : tl.tiles_per_image));
                    CHECK(tl.gemm_rows == p.batch * tl.tile_slots);
                    // Fused transforms need no real tiles; otherwise every real
                    // stage fits the shared real buffer.
                    CHECK(tl.geometry.fused() == (t == 16 || t == 32 || t == 64));
                    CHECK(tl.input_transforms == p.in_channels * tl.gemm_rows);
                    CHECK(tl.output_transforms == p.out_channels * tl.gemm_rows);
                    CHECK(tl.filter_transforms == p.in_channels * p.out_channels);
                    if (tl.geometry.fused()) {
                        CHECK(tl.real_elements == 0);
                    } else {
                        CHECK(tl.real_elements >= p.in_channels * tl.gemm_rows * t * t);
                        CHECK(tl.real_elements >= p.out_channels * tl.gemm_rows * t * t);
                        CHECK(tl.real_elements >= p.in_channels * p.out_channels * t * t);
                    }
                    // Regions are aligned, ordered and large enough.
                    CHECK(tl.input_spectrum_offset() % detail::workspace_alignment == 0);
                    CHECK(tl.filter_spectrum_offset() - tl.input_spectrum_offset() >=
                          tl.geometry.complex_bytes() * std::size_t(tl.input_spectrum_elements));
                    CHECK(tl.output_spectrum_offset() - tl.filter_spectrum_offset() >=
                          tl.geometry.complex_bytes() * std::size_t(tl.filter_spectrum_elements));
                    CHECK(tl.fft_work_offset() - tl.output_spectrum_offset() >=
                          tl.geometry.complex_bytes() * std::size_t(tl.output_spectrum_elements));
                }
            }
        }
    }
}

// The covering rule of tile_outputs_along, checked by exact integer
// arithmetic along one axis: a tile's circular correlation of extent T (its
// window starting at -padding, zero outside the image) against the linear
// correlation of the padded image, for every output the rule says the tile
// yields. And the rule claims no more than holds: where it gives fewer
// than all outputs and the tile could hold them all, some output past them
// is wrong.
// At T = 96 overlap-save tiles yield a multiple of 32 outputs where that
// keeps the tile count (the depthwise kernel's line groups): never more than
// T - K + 1, never more tiles, and every output covered.
TEST_CASE("96-point tiles yield a multiple of 32 outputs where the tile count allows") {
    int rounded = 0;
    for (std::int64_t kernel = 1; kernel <= 96; kernel += 5)
        for (std::int64_t out = 1; out <= 600; out += 7) {
            CAPTURE(kernel);
            CAPTURE(out);
            const std::int64_t extent = out + kernel - 1;  // unpadded: no tile covers past T
            const std::int64_t most = 96 - kernel + 1, yields = detail::tile_outputs_along(extent, 0, out, kernel, 96);
            if (extent <= 96) {
                CHECK(yields == out);  // one tile covers
                continue;
            }
            CHECK(yields <= most);
            CHECK(detail::ceil_div(out, yields) == detail::ceil_div(out, most));
            if (yields < most) {
                CHECK(yields % 32 == 0);
                ++rounded;
            }
        }
    CHECK(rounded > 100);
    // 256 x 256 'same' at K = 31: four tiles of 64 rows, not of 66.
    const problem p{.batch = 8, .in_channels = 64, .out_channels = 64, .height = 256, .width = 256, .kernel = 31,
                    .padding = 15, .groups = 64};
    CHECK(detail::tile_outputs_of(p, 96).high == 64);
    CHECK(detail::tile_outputs_of(p, 96).wide == 64);
    CHECK(detail::tile_outputs_of(p, 64).high == 34);
}

TEST_CASE("a tile covering the padded image yields every output: circular against linear correlation") {
    auto circular_matches = [](std::int64_t extent, std::int64_t padding, std::int64_t kernel, int tile,
                               std::int64_t outputs, const std::vector<long>& image, const std::vector<long>& w) {
        auto padded = [&](std::int64_t c) { return c >= 0 && c < extent ? image[std::size_t(c)] : 0L; };
        for (std::int64_t n = 0; n < outputs; ++n) {
            long linear = 0, circular = 0;
            for (std::int64_t u = 0; u < kernel; ++u) {
                linear += w[std::size_t(u)] * padded(n - padding + u);
                const std::int64_t position = (n + u) % tile;  // the window's column -padding + position
                circular += w[std::size_t(u)] * padded(position - padding);
            }
            if (linear != circular) return false;
        }
        return true;
    };
    int covering = 0;
    for (std::int64_t extent = 1; extent <= 20; ++extent)
        for (std::int64_t kernel = 1; kernel <= 12; ++kernel)
            for (std::int64_t padding = 0; padding <= 13; ++padding) {
                const std::int64_t out = extent + 2 * padding - kernel + 1;
                if (out < 1) continue;
                for (int tile = int(kernel); tile <= 40; ++tile) {
                    CAPTURE(extent);
                    CAPTURE(kernel);
                    CAPTURE(padding);
                    CAPTURE(tile);
                    std::vector<long> image(static_cast<std::size_t>(extent)), w(static_cast<std::size_t>(kernel));
                    for (std::size_t i = 0; i < image.size(); ++i) image[i] = long(3 * i * i + 7 * i + 1) % 97 + 1;
                    for (std::size_t u = 0; u < w.size(); ++u) w[u] = long(5 * u * u + 3 * u + 2) % 89 + 1;
                    const std::int64_t yields = detail::tile_outputs_along(extent, padding, out, kernel, tile);
                    CHECK(circular_matches(extent, padding, kernel, tile, std::min(yields, out), image, w));
                    if (yields == out && out > tile - kernel + 1) ++covering;
                    if (yields < out && out <= tile)  // (a tile holds at most T outputs)
                        CHECK_FALSE(circular_matches(extent, padding, kernel, tile, out, image, w));
                }
            }
    CHECK(covering > 1000);  // the rule's second case is exercised, not just overlap-save's
}

TEST_CASE("a tile as large as the kernel yields one output per side") {
    constexpr tile_geometry<> s(5, 5, 1, 1, 5);
    static_assert(s.out_tile_height() == 1 && s.out_tile_width() == 1 && s.valid());
    static_assert(!tile_geometry<>(6, 6, 1, 1, 5).valid());
    static_assert(!tile_geometry<>(1, 6, 1, 1, 5).valid());
    // A 3 x 5 kernel: the tile's outputs are 6 rows by 4 columns.
    constexpr tile_geometry<> rectangular(3, 5, 1, 1, 8);
    static_assert(rectangular.out_tile_height() == 6 && rectangular.out_tile_width() == 4);
    CHECK(s.freq_cols() == 3);
    CHECK(s.freq_bins() == 15);
}

TEST_CASE("passes cover every output exactly once, on the tiles of the whole problem") {
    const problem covered{.batch = 3, .in_channels = 2, .out_channels = 3, .height = 9, .width = 11, .kernel = 9,
                          .padding = 4};  // at T = 16 one tile covers the padded image
    for (const problem& p : {problem{5, 3, 7, 40, 33, 6}, problem{1, 2, 9, 100, 17, 1}, problem{3, 1, 1, 9, 9, 9},
                             covered}) {
        for (int t : {9, 16, 24}) {
            if (t < p.kernel.height) continue;
            const tile_geometry<> s(int(p.kernel.height), int(p.kernel.width), p.in_channels, p.out_channels, t);
            const std::int64_t tiles_high = detail::tile_rows_of(p, t);
            const std::int64_t out_tile = detail::tile_outputs_of(p, t).high;
            CHECK(tiles_high == detail::ceil_div(p.out_height(), out_tile));
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
                detail::for_each_pass(p, t, shape, [&](const problem& q, std::int64_t b0, std::int64_t r0,
                                                       std::int64_t o0, bool first) {
                    first_passes += first;
                    CHECK(q.width == p.width);
                    CHECK(q.in_channels == p.in_channels);
                    CHECK(q.out_width() == p.out_width());
                    const std::int64_t row0 = r0 * out_tile;  // a pass starts on a tile boundary
                    // A pass's tiles are the whole problem's: the same outputs per tile across
                    // the width (kept padded), and along the height unless the pass is one band.
                    const detail::workspace_layout l = detail::make_layout(q, t);
                    CHECK(l.outputs.wide == detail::tile_outputs_of(p, t).wide);
                    CHECK((l.tiles_high == 1 || l.outputs.high == out_tile));
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

TEST_CASE("a depthwise problem on a fused tile extent needs no input or output spectrum, only its filter (twice off 48 and 96)") {
    const problem depthwise{.batch = 8, .in_channels = 64, .out_channels = 128, .height = 56, .width = 56,
                            .kernel = 31, .padding = same_padding(31), .groups = 64};
    for (const int t : {32, 48, 64, 96}) {
        CAPTURE(t);
        const detail::workspace_layout fused = detail::make_layout(depthwise, t);
        CHECK(fused.image_to_output);
        CHECK(fused.input_spectrum_elements == 0);
        // The output spectrum's place holds the filter spectrum channel-major.
        CHECK(fused.output_spectrum_elements == fused.geometry.freq_bins() * 128);
        CHECK(fused.filter_transforms == 128);  // one 1-channel filter per output channel
        // 48 and 96 transform the filters directly into the channel-major place (filter_dft.cuh).
        const bool direct = t == 48 || t == 96;
        CHECK(fused.filter_spectrum_elements == (direct ? 0 : fused.geometry.freq_bins() * fused.filter_bin_stride));
        CHECK(fused.real_elements == 0);
    }
    const detail::workspace_layout cufft = detail::make_layout(depthwise, 54);
    CHECK(!cufft.image_to_output);
    CHECK(cufft.input_spectrum_elements > 0);  // the cuFFT path multiplies spectra in memory
    problem grouped = depthwise;
    grouped.groups = 32;  // two input channels per group: a GEMM per group, spectra in memory
    CHECK(detail::make_layout(grouped, 64).input_spectrum_elements > 0);
}
