// The gradients' algebra on the CPU (src/backward/gradient_operands.hpp): each
// gradient, computed as the forward convolution of its rearranged operands
// by the float64 reference, equals its definition — dx[b,c,h,w] = sum of
// dy[b,o,h+Ph-u,w+Pw-v] w[o,c,u,v], dw[o,c,u,v] = sum of dy[b,o,i,j]
// x[b,c,i+u-Ph,j+v-Pw] — to float64 rounding, for every operator variant and
// for filter gradients cut into one block or many. The GPU suite
// (test_gpu_backward) checks the kernels that run these maps.
#include "doctest.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "backward/filter_gradient_gemm.hpp"
#include "backward/gradient_operands.hpp"
#include "backward/gradient_positions.hpp"
#include "make_problem.hpp"
#include "reference.hpp"

using namespace fftconv;

namespace {

std::vector<float> random_vector(std::int64_t n, std::mt19937_64& rng) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> v(static_cast<std::size_t>(n));
    for (float& e : v) e = normal(rng);
    return v;
}

template <class Map>
std::vector<float> rearranged(const std::vector<float>& in, const Map& map, std::int64_t n) {
    std::vector<float> out(static_cast<std::size_t>(n));
    for (std::int64_t t = 0; t < n; ++t) {
        const std::int64_t from = map.source(t);
        REQUIRE(from < std::int64_t(in.size()));  // every map stays inside its source
        out[std::size_t(t)] = from >= 0 ? in[std::size_t(from)] : 0.0f;
    }
    return out;
}

std::vector<double> data_gradient_definition(const problem& p, const std::vector<float>& dy,
                                             const std::vector<float>& w) {
    const std::int64_t ho = p.out_height(), wo = p.out_width(), cg = p.group_in_channels(), og = p.group_out_channels();
    std::vector<double> dx(static_cast<std::size_t>(p.input_elements()));
    for (std::int64_t b = 0; b < p.batch; ++b)
        for (std::int64_t c = 0; c < p.in_channels; ++c)
            for (std::int64_t h = 0; h < p.height; ++h)
                for (std::int64_t x = 0; x < p.width; ++x) {
                    double sum = 0;
                    for (std::int64_t o = c / cg * og; o < (c / cg + 1) * og; ++o)
                        for (std::int64_t u = 0; u < p.kernel.height; ++u)
                            for (std::int64_t v = 0; v < p.kernel.width; ++v) {
                                const std::int64_t i = h + p.padding.height - u, j = x + p.padding.width - v;
                                if (i < 0 || i >= ho || j < 0 || j >= wo) continue;
                                sum += double(dy[std::size_t(((b * p.out_channels + o) * ho + i) * wo + j)]) *
                                       double(w[std::size_t(((o * cg + c % cg) * p.kernel.height + u) *
                                                                p.kernel.width + v)]);
                            }
                    dx[std::size_t(((b * p.in_channels + c) * p.height + h) * p.width + x)] = sum;
                }
    return dx;
}

std::vector<double> filter_gradient_definition(const problem& p, const std::vector<float>& x,
                                               const std::vector<float>& dy) {
    const std::int64_t ho = p.out_height(), wo = p.out_width(), cg = p.group_in_channels(), og = p.group_out_channels();
    std::vector<double> dw(static_cast<std::size_t>(p.filter_elements()));
    for (std::int64_t o = 0; o < p.out_channels; ++o)
        for (std::int64_t c = 0; c < cg; ++c)
            for (std::int64_t u = 0; u < p.kernel.height; ++u)
                for (std::int64_t v = 0; v < p.kernel.width; ++v) {
                    double sum = 0;
                    const std::int64_t channel = o / og * cg + c;
                    for (std::int64_t b = 0; b < p.batch; ++b)
                        for (std::int64_t i = 0; i < ho; ++i)
                            for (std::int64_t j = 0; j < wo; ++j) {
                                const std::int64_t r = i + u - p.padding.height, s = j + v - p.padding.width;
                                if (r < 0 || r >= p.height || s < 0 || s >= p.width) continue;
                                sum += double(dy[std::size_t(((b * p.out_channels + o) * ho + i) * wo + j)]) *
                                       double(x[std::size_t(((b * p.in_channels + channel) * p.height + r) *
                                                                p.width + s)]);
                            }
                    dw[std::size_t(((o * cg + c) * p.kernel.height + u) * p.kernel.width + v)] = sum;
                }
    return dw;
}

double relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
    double difference = 0, norm = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        difference += (a[i] - b[i]) * (a[i] - b[i]);
        norm += b[i] * b[i];
    }
    return std::sqrt(difference / norm);
}

using testing::make;

}  // namespace

TEST_CASE("each gradient is the forward convolution of its rearranged operands") {
    std::mt19937_64 rng(20261130);
    for (const problem& p : {
             make(2, 3, 4, 11, 9, 3, 0, 1),                   // dense, valid
             make(2, 4, 6, 12, 10, {3, 5}, {1, 2}, 2),        // grouped, rectangular, 'same'
             make(1, 4, 8, 9, 9, 5, {7, 6}, 4),               // padding beyond the kernel: dy cropped
             make(2, 3, 3, 40, 37, 31, 15, 3),                // depthwise 31 x 31 'same': 2 x 2 blocks of 34
             make(1, 2, 2, 70, 12, {5, 3}, {2, 1}, 1),        // 2 blocks of 60 rows, one of 12 columns
             make(1, 2, 4, 20, 50, {45, 2}, {22, 0}, 2),      // a 45-row kernel: one block that way
             make(2, 2, 2, 3, 12, {9, 3}, {5, 1}, 1),         // rows 0 and 8 of the filter see only padding
         }) {
        CAPTURE(to_string(p));
        const std::vector<float> x = random_vector(p.input_elements(), rng);
        const std::vector<float> w = random_vector(p.filter_elements(), rng);
        const std::vector<float> dy = random_vector(p.output_elements(), rng);

        const problem qd = detail::data_gradient_problem(p);
        REQUIRE(qd.output_elements() == p.input_elements());
        const detail::flipped_filter flip{p.group_in_channels(), p.group_out_channels(), p.kernel.height,
                                          p.kernel.width};
        const std::vector<float> dy_in = qd.input_elements() == p.output_elements()
                                             ? dy
                                             : rearranged(dy, detail::cropped_gradient(p), qd.input_elements());
        const std::vector<double> dx = reference::direct_conv_cpu(qd, dy_in, rearranged(w, flip, qd.filter_elements()));
        CHECK(relative_difference(dx, data_gradient_definition(p, dy, w)) < 1e-12);

        const problem qf = detail::filter_gradient_problem(p);
        REQUIRE(qf.out_height() == p.kernel.height);
        REQUIRE(qf.out_width() == p.kernel.width);
        const std::vector<double> transposed = reference::direct_conv_cpu(
            qf, rearranged(x, detail::filter_gradient_windows(p), qf.input_elements()),
            rearranged(dy, detail::filter_gradient_blocks(p), qf.filter_elements()));
        std::vector<double> dw(static_cast<std::size_t>(p.filter_elements()));
        const detail::filter_gradient_result back = detail::filter_gradient_transpose(p);
        std::int64_t zeroed = 0;
        for (std::int64_t t = 0; t < p.filter_elements(); ++t) {
            const std::int64_t from = back.source(t);
            zeroed += from < 0;
            dw[std::size_t(t)] = from >= 0 ? transposed[std::size_t(from)] : 0.0;
        }
        const std::vector<double> definition = filter_gradient_definition(p, x, dy);
        CHECK(relative_difference(dw, definition) < 1e-12);
        // Zeroed: exactly the taps whose definition is an empty sum (on random
        // normal inputs no other sum is exactly zero).
        const auto empty = std::count(definition.begin(), definition.end(), 0.0);
        CHECK(zeroed == empty);
    }
}

TEST_CASE("the filter gradient's blocks fit the fused 64-point tile") {
    const problem p = make(8, 64, 64, 256, 256, 31, 15, 64);
    const detail::filter_blocks f = detail::filter_blocks_of(p);
    CHECK(f.block_rows == 34);
    CHECK(f.blocks_high == 8);  // 256 outputs in blocks of 34
    const problem q = detail::filter_gradient_problem(p);
    CHECK(q.height == 64);
    CHECK(q.kernel.height == 34);
    CHECK(q.in_channels == 64 * 8 * 64);
    // On a 32-point grid blocks of at least 17 outputs leave kernels up to 16.
    const problem small = make(4, 64, 64, 128, 128, 8, 0, 1);
    CHECK(detail::filter_blocks_of(small, 32).block_rows == 25);
    CHECK(detail::filter_blocks_of(small, 32).blocks_high == 5);  // 121 outputs in blocks of 25
    const problem k16 = make(4, 64, 64, 128, 128, 16, 0, 1);
    CHECK(detail::filter_blocks_of(k16, 32).block_rows == 17);
    CHECK(detail::filter_blocks_of(k16, 32).blocks_high == 7);  // 113 outputs in blocks of 17
    CHECK(detail::filter_blocks_of(make(1, 1, 1, 50, 50, 17, 0, 1), 32).block_rows == 34);  // K = 17: the whole axis
}

// The GEMM path's grid, the cost model's choice (src/backward/filter_gradient_gemm.cu)
// against the H200 measurements it was built from (docs/performance.md g5,
// g8): 32 points for kernels up to 8; for kernels up to 16 where the
// tensor-core GEMM runs and the smaller grid measured faster; else 64.
TEST_CASE("the filter gradient's GEMM path takes the grid that measured faster") {
    CHECK(detail::filter_gradient_gemm_grid(make(4, 64, 64, 128, 128, 8, 0, 1)) == 32);
    CHECK(detail::filter_gradient_gemm_grid(make(4, 64, 64, 128, 128, 16, 0, 1)) == 32);    // 0.177 against 0.237 ms
    CHECK(detail::filter_gradient_gemm_grid(make(2, 128, 128, 256, 256, 16, 0, 1)) == 64);  // 0.836 against 1.157 ms
    CHECK(detail::filter_gradient_gemm_grid(make(1, 128, 128, 256, 256, 32, 0, 1)) == 64);  // K > 16: no block fits 32 points
    CHECK(detail::filter_gradient_gemm_grid(make(4, 64, 64, 128, 128, 12, 0, 2)) == 64);    // groups: cuBLAS
    CHECK(detail::filter_gradient_gemm_grid(make(4, 8, 8, 128, 128, 12, 0, 1)) == 64);      // few channels: cuBLAS
    CHECK(detail::filter_gradient_gemm_grid(make(4, 8, 8, 128, 128, 8, 0, 2)) == 32);
}

// The fused filter-gradient paths (src/backward/depthwise_filter_gradient.cu,
// src/backward/filter_gradient_gemm.cu): for every position, the T x T window of
// padded x and the dy block that gradient_positions.hpp says, correlated
// circularly on the T-point grid, summed over positions and cropped to
// Kh x Kw, must be the definition; a window or block off by one, a position
// missed or counted twice, or a lag that wraps around the grid fails it.
TEST_CASE("the filter gradient's windows and dy blocks sum to the definition on the 64- and 32-point grids") {
    std::mt19937_64 rng(20261202);
    struct grid_case {
        problem p;
        int tile;
    };
    for (const auto& [p, tile] : {
             grid_case{make(2, 3, 4, 37, 29, 7, 0, 1), 64},            // dense, 1 x 1 block
             grid_case{make(2, 3, 4, 37, 29, 7, 0, 1), 32},            // the same on 32 points: 2 x 1 blocks of 26
             grid_case{make(1, 4, 6, 20, 33, {3, 5}, {1, 2}, 2), 32},  // grouped, rectangular, padded
             grid_case{make(2, 3, 3, 40, 37, 31, 15, 3), 64},          // depthwise 31 x 31 'same': 2 x 2 blocks
             grid_case{make(1, 2, 4, 70, 12, {5, 3}, {2, 1}, 2), 64},  // 2 blocks of 60 rows, one of 12 columns
             grid_case{make(2, 2, 2, 3, 12, {9, 3}, {5, 1}, 1), 64},   // taps that see only padding
             grid_case{make(3, 2, 4, 9, 70, 8, 3, 2), 32},             // 3 column blocks of 25, the last short
             grid_case{make(1, 2, 3, 50, 44, {16, 12}, 0, 1), 32},     // blocks of 17 x 21: 3 x 2, one row short
         }) {
        CAPTURE(to_string(p));
        CAPTURE(tile);
        const std::vector<float> x = random_vector(p.input_elements(), rng);
        const std::vector<float> dy = random_vector(p.output_elements(), rng);
        const detail::gradient_positions at = detail::positions_of(p, tile);
        // Stepping from a place is finding the next position's place.
        detail::gradient_positions::place stepped = at.place_of(0);
        for (std::int64_t q = 0; q < at.count(); ++q, stepped = at.next(stepped)) {
            const detail::gradient_positions::place found = at.place_of(q);
            CHECK((stepped.b == found.b && stepped.row == found.row && stepped.col == found.col));
        }
        const std::int64_t cg = p.group_in_channels(), og = p.group_out_channels();
        const std::int64_t kh = p.kernel.height, kw = p.kernel.width;
        // A tile of the grid from a window: zero outside it.
        const auto tile_of = [tile](const std::vector<float>& data, const detail::tile_window& w) {
            std::vector<double> t(std::size_t(tile * tile), 0.0);
            for (int r = w.row_begin; r < w.rows; ++r)
                for (int c = w.col_begin; c < w.cols; ++c) {
                    const std::int64_t index = w.offset + r * w.row_stride + c;
                    REQUIRE(index >= 0);
                    REQUIRE(index < std::int64_t(data.size()));
                    t[std::size_t(r * tile + c)] = double(data[std::size_t(index)]);
                }
            return t;
        };
        std::vector<double> dw(std::size_t(p.filter_elements()), 0.0);
        for (std::int64_t o = 0; o < p.out_channels; ++o)
            for (std::int64_t c = 0; c < cg; ++c)
                for (std::int64_t q = 0; q < at.count(); ++q) {
                    const std::vector<double> window = tile_of(x, at.x_window(o / og * cg + c, q));
                    const std::vector<double> block = tile_of(dy, at.dy_block(o, q));
                    for (std::int64_t u = 0; u < kh; ++u)
                        for (std::int64_t v = 0; v < kw; ++v) {
                            double sum = 0;
                            for (int n = 0; n < tile; ++n)
                                for (int m = 0; m < tile; ++m)
                                    sum += block[std::size_t(n * tile + m)] *
                                           window[std::size_t((n + u) % tile * tile + (m + v) % tile)];
                            dw[std::size_t(((o * cg + c) * kh + u) * kw + v)] += sum;
                        }
                }
        CHECK(relative_difference(dw, filter_gradient_definition(p, x, dy)) < 1e-12);
    }
}
