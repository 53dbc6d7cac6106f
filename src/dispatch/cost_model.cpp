// src/dispatch/cost_model.cpp — the generic path's choice of tile extent.
//
// The cost model. Per call the pipeline (a) runs one complex GEMM per
// frequency bin, 8 * bins * M * in * out real flops, and (b) moves the image,
// the filters, the output and three spectra (input, filter, output), each
// written once and read once. Larger tiles mean fewer tiles (M shrinks like
// (To/T)^2: the K-1 overlap is paid once per tile) but more bins and a larger
// filter spectrum (in*out*bins). We estimate
//   seconds = flops / gemm_rate + bytes / bandwidth
// and keep the cheapest extent. The fused extents (tile_family.hpp) move
// each spectrum once at close to copy bandwidth. Any other extent runs
// cuFFT, which also writes and reads real tiles and makes two strided passes
// per 2D transform: its transforms reach about a third of the fused ones'
// bandwidth. The rates below are H200 measurements (docs/performance.md):
// the batched complex FP32 GEMMs reach about 40 of the 54 TFLOP/s peak, copy
// about 4.2 TB/s. Only extents of the form 2^a 3^b 5^c 7^d are tried for
// cuFFT: it has fast kernels for those radices only.
//
// Depthwise problems on a fused extent run one kernel per tile pair
// (fused_depthwise.cuh), bound by its FFT arithmetic and shared-memory
// traffic: a pair costs T^2 log2(T) x the family's
// depthwise_pair_seconds_per_point, fitted to the depthwise suite. The
// dispatch weighs this against the direct depthwise kernel
// (src/direct/direct_depthwise.cu). Each path adds a fixed cost per kernel
// it launches (small problems are all launch): dense_kernel_seconds on the
// dense paths, launch_seconds on the depthwise ones (fitted with their
// per-point figures).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "dispatch/cost_model.hpp"

#include "fftconv/detail/tiling/workspace_layout.hpp"
#include "fftconv/dispatch.hpp"

namespace fftconv {
namespace {

constexpr double gemm_flops_per_second = 40e12;
constexpr double fused_bytes_per_second = 3e12;
constexpr double cufft_bytes_per_second = 1e12;
constexpr double launch_seconds = 3e-6;
// A dense pipeline kernel's fixed cost with a cold L2 (H200, measured: the
// four kernels of a small dense problem take 20 µs where the byte/flop terms
// add up to 1–3; an empty kernel alone takes 2.7 µs between events).
constexpr double dense_kernel_seconds = 5e-6;

// Every extent 2^a 3^b 5^c 7^d in [lo, hi] (unordered): a few hundred below
// 10^6, so the search below costs the same for any image size.
std::vector<std::int64_t> fft_friendly_extents(std::int64_t lo, std::int64_t hi) {
    std::vector<std::int64_t> found;
    for (std::int64_t p2 = 1; p2 <= hi; p2 *= 2)
        for (std::int64_t p3 = p2; p3 <= hi; p3 *= 3)
            for (std::int64_t p5 = p3; p5 <= hi; p5 *= 5)
                for (std::int64_t p7 = p5; p7 <= hi; p7 *= 7)
                    if (p7 >= lo) found.push_back(p7);
    return found;
}

// The smallest friendly extent >= n (there is always one below 2n).
std::int64_t next_friendly(std::int64_t n) {
    const auto all = fft_friendly_extents(n, 2 * n);
    return *std::min_element(all.begin(), all.end());
}

}  // namespace

double detail::estimated_seconds(const problem& p, int tile_extent) {
    const detail::workspace_layout t = detail::make_layout(p, tile_extent);
    if (t.beyond_memory) return std::numeric_limits<double>::infinity();
    const double bins = double(t.geometry.freq_bins());
    const double tile = double(t.geometry.tile_elements());
    const double rows = double(t.gemm_rows);
    const double in = double(p.in_channels);
    const double out = double(p.out_channels);
    const double group_in = double(p.group_in_channels());  // each output channel's contraction depth
    const double flops = 8.0 * bins * rows * group_in * out;
    const double spectrum_bytes = 8.0 * bins * (in * rows + out * rows + group_in * out);
    const double io_bytes =
        4.0 * double(p.input_elements() + p.filter_elements() + p.output_elements());
    if (t.image_to_output) {
        // Filter transform, its channel-major copy, then one kernel per tile pair (see the top).
        const double pairs = double(t.output_transforms) / 2.0;
        return 3.0 * launch_seconds +
               pairs * tile * std::log2(double(tile_extent)) *
                   detail::tile_family_of(tile_extent).depthwise_pair_seconds_per_point;
    }
    if (t.geometry.fused())
        return 4.0 * dense_kernel_seconds + flops / gemm_flops_per_second +
               (2.0 * spectrum_bytes + io_bytes) / fused_bytes_per_second;
    // The cuFFT path works in double (tile_geometry::double_intermediates): twice the bytes, and the
    // complex double GEMM on the FP64 tensor cores at about the same rate.
    const double real_bytes = 4.0 * tile * (in * rows + out * rows + group_in * out);
    return 6.0 * dense_kernel_seconds + flops / gemm_flops_per_second +
           (2.0 * 2.0 * (real_bytes + spectrum_bytes) + io_bytes) / cufft_bytes_per_second;
}

int choose_tile_extent(const problem& p) {
    validate(p);
    const std::int64_t k = std::max(p.kernel.height, p.kernel.width);  // a tile holds the kernel both ways
    // Past the extent where one overlap-save tile holds the whole output
    // (a tile covering the padded image may be smaller: tile_outputs_along),
    // larger tiles only add zeros; and past 8 K (or 512) the K - 1 overlap is
    // already paid back, so the cost model only grows there. Those two bounds
    // keep the search to a few hundred candidates whatever the image size, and
    // keep T * T far from the 2^31 that 32-bit tile arithmetic would wrap at.
    const std::int64_t whole_output = next_friendly(std::max(p.out_height(), p.out_width()) + k - 1);
    const std::int64_t smallest = next_friendly(k);
    const std::int64_t largest = std::max(smallest, std::min(whole_output, std::max<std::int64_t>(8 * k, 512)));
    std::int64_t best = smallest;
    double best_seconds = std::numeric_limits<double>::infinity();
    std::vector<std::int64_t> candidates = fft_friendly_extents(smallest, largest);
    // A depthwise problem on a fused_depthwise_extents extent is one kernel
    // from image to y, so such a tile larger than whole_output can still
    // beat a cuFFT tile that just covers: let the model weigh them.
    if (detail::is_depthwise(p))
        [&]<int... Extents>(extent_list<Extents...>) {
            for (const int t : {Extents...})
                if (t >= k && t > largest) candidates.push_back(t);
        }(fused_depthwise_extents{});
    for (const std::int64_t t : candidates) {
        const double seconds = detail::estimated_seconds(p, int(t));
        if (seconds < best_seconds || (seconds == best_seconds && t < best)) {
            best_seconds = seconds;
            best = t;
        }
    }
    return int(best);
}

}  // namespace fftconv
