// src/tile_heuristic.cpp — the generic path's choice of tile extent, and the
// dispatch decision.
//
// The cost model. Per call the pipeline (a) runs one complex GEMM per
// frequency bin, 8 * bins * M * in * out real flops, and (b) moves the image,
// the filters, the output and three spectra (input, filter, output), each
// written once and read once. Larger tiles mean fewer tiles (M shrinks like
// (To/T)^2: the K-1 overlap is paid once per tile) but more bins and a larger
// filter spectrum (in*out*bins). We estimate
//   seconds = flops / gemm_rate + bytes / bandwidth
// and keep the cheapest extent. Extents 16, 32, 64 run the fused transforms,
// which move each spectrum once at close to copy bandwidth. Any other extent
// runs cuFFT, which also writes and reads real tiles and makes two strided
// passes per 2D transform: on the H200 its transforms reached about a third of
// the fused ones' bandwidth (results/baseline-f2932f4: T=42 transforms took
// 2.3 ms for 1.2 GB of nominal traffic). The rates are H200 measurements of
// the design brief (complex FP32 GEMM 54 TFLOP/s peak, about 40 reached by
// these batched GEMMs; copy 4.2 TB/s). Only extents of the form 2^a 3^b 5^c 7^d
// are tried for cuFFT: it has fast kernels for those radices only.
#include <algorithm>
#include <limits>

#include "dispatch_table.hpp"
#include "fftconv/detail/check.hpp"
#include "fftconv/detail/tiling.hpp"
#include "fftconv/dispatch.hpp"

namespace fftconv {
namespace {

constexpr double gemm_flops_per_second = 40e12;
constexpr double fused_bytes_per_second = 3e12;
constexpr double cufft_bytes_per_second = 1e12;

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
    const double spectrum_bytes = 8.0 * bins * (in * rows + out * rows + in * out);
    const double io_bytes =
        4.0 * double(p.input_elements() + p.filter_elements() + p.output_elements());
    if (t.fused)
        return flops / gemm_flops_per_second + (2.0 * spectrum_bytes + io_bytes) / fused_bytes_per_second;
    const double real_bytes = 4.0 * tile * (in * rows + out * rows + in * out);
    return flops / gemm_flops_per_second +
           (2.0 * (real_bytes + spectrum_bytes) + io_bytes) / cufft_bytes_per_second;
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

const char* to_string(path_kind k) noexcept {
    switch (k) {
        case path_kind::compiled: return "compiled";
        case path_kind::generic: return "generic";
    }
    return "unknown";
}

namespace {
template <tile_config Cfg>
dispatch_decision decision_for(const tile_geometry<Cfg>&) {
    return {path_kind::compiled, Cfg};
}
dispatch_decision decision_for(const runtime_geometry& g) {
    return {path_kind::generic, tile_config{g.kernel_extent, 0, g.tile_extent}};
}
}  // namespace

dispatch_decision choose_dispatch(const problem& p, int forced_tile_extent) {
    dispatch_decision d;
    detail::with_geometry(p, forced_tile_extent, [&](const auto& geo) { d = decision_for(geo); });
    return d;
}

}  // namespace fftconv
