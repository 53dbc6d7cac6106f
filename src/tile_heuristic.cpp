// src/tile_heuristic.cpp — the generic path's choice of tile extent, and the
// dispatch decision.
//
// The cost model. Per call the pipeline (a) runs one complex GEMM per
// frequency bin, 8 * bins * M * in * out real flops, and (b) writes and then
// reads back six intermediates: real tiles and spectra for the input, the
// filters and the output. Both grow with T in opposite ways: larger tiles
// mean fewer tiles (M falls like (To/T)^2 ... the overlap K-1 is paid once per
// tile) but more bins and a larger filter spectrum (in*out*bins). We estimate
//   seconds = flops / gemm_rate + bytes / bandwidth
// with the H200 ceilings measured for the design brief (complex FP32 GEMM
// 54 TFLOP/s, of which small batched GEMMs reach about 40; copy 4.2 TB/s, of
// which strided FFT passes reach about 3) and keep the cheapest extent. Only
// extents of the form 2^a 3^b 5^c 7^d are tried: cuFFT has fast kernels for
// those radices and falls back to slower Bluestein transforms otherwise.
#include <algorithm>
#include <limits>

#include "dispatch_table.hpp"
#include "fftconv/detail/check.hpp"
#include "fftconv/detail/tiling.hpp"
#include "fftconv/dispatch.hpp"

namespace fftconv {
namespace {

constexpr double gemm_flops_per_second = 40e12;
constexpr double bytes_per_second = 3e12;

constexpr bool fft_friendly(int n) {
    for (int radix : {2, 3, 5, 7})
        while (n % radix == 0) n /= radix;
    return n == 1;
}

double estimated_seconds(const problem& p, tile_shape s) {
    const detail::tiling t = detail::make_tiling(p, s);
    const double bins = s.freq_bins();
    const double tile = s.tile_elements();
    const double rows = double(t.gemm_rows);
    const double in = double(p.in_channels);
    const double out = double(p.out_channels);
    const double flops = 8.0 * bins * rows * in * out;
    const double real_bytes = 4.0 * tile * (in * rows + out * rows + in * out);
    const double spectrum_bytes = 8.0 * bins * (in * rows + out * rows + in * out);
    const double io_bytes =
        4.0 * double(p.input_elements() + p.filter_elements() + p.output_elements());
    return flops / gemm_flops_per_second +
           (2.0 * (real_bytes + spectrum_bytes) + io_bytes) / bytes_per_second;
}

}  // namespace

std::span<const tile_config> compiled_configs() noexcept { return detail::compiled_array; }

int choose_tile_extent(const problem& p) {
    validate(p);
    const auto k = int(p.kernel_extent);
    // Past the extent where one tile covers the whole output, larger tiles only add zeros.
    const std::int64_t covering = std::max(p.out_height(), p.out_width()) + k - 1;
    int best = 0;
    double best_seconds = std::numeric_limits<double>::infinity();
    for (std::int64_t t = k; t <= std::max<std::int64_t>(covering, k); ++t) {
        if (!fft_friendly(int(t))) continue;
        const double seconds = estimated_seconds(p, tile_shape{k, int(t)});
        if (seconds < best_seconds) {
            best_seconds = seconds;
            best = int(t);
        }
    }
    // `covering` itself may not be friendly: then the next friendly extent above it.
    if (best == 0) {
        best = int(std::max<std::int64_t>(covering, k));
        while (!fft_friendly(best)) ++best;
    }
    return best;
}

namespace {
template <tile_config Cfg>
dispatch_decision decision_for(const tile_geometry<Cfg>&) {
    return {true, Cfg};
}
dispatch_decision decision_for(const runtime_geometry& g) {
    return {false, tile_config{g.kernel_extent, 0, g.tile_extent}};
}
}  // namespace

dispatch_decision choose_dispatch(const problem& p, int forced_tile_extent) {
    dispatch_decision d;
    detail::with_geometry(p, forced_tile_extent, [&](const auto& geo) { d = decision_for(geo); });
    return d;
}

}  // namespace fftconv
