// fftconv/detail/pipeline/pipeline.cuh — the overlap-save pipeline, written once for
// every tile_geometry: a compiled configuration's (every extent a constant),
// the generic path's (runtime extents; its fused transforms run with the tile
// extent promoted to a constant).
//
// Depthwise problems on tile extents 16, 32, 48, 64, 96 run one kernel per
// tile pair after the filter transform (fused_depthwise.cuh). Otherwise:
// Tile extents 16, 32, 64 (fused transforms, fused_tile_fft.cuh):
//   filters  --forward_tiles-->  filter spectrum  (skipped with a filter_spectrum)
//   x        --forward_tiles-->  input spectrum
//   input spectrum x conj(filter spectrum)  --spectral product-->  output spectrum
//   output spectrum  --inverse_tiles-->  y
// Any other extent (cuFFT, cufft_tiles.cuh):
//   filters  --pad_filters-->  real  --R2C-->  filter spectrum
//   x        --gather_tiles--> real  --R2C-->  input spectrum
//   (spectral product)
//   output spectrum  --C2R-->  real  --scatter_tiles-->  y
// A compiled geometry instantiates only the path its tile extent takes.
//
// A problem whose intermediates exceed the usable workspace runs in passes
// (tiling/pass_schedule.hpp). Everything is ordered on the engine's stream; large fused
// problems fork part of the work to the engine's side stream and join it back
// before returning. Nothing synchronizes. Every check that can refuse a call
// (validation, pointers, workspace, cuFFT plans) runs before the first launch, so a
// refused call has written nothing.
#pragma once

#include <algorithm>
#include <cstdint>

#include "fftconv/config.hpp"
#include "fftconv/element_type.hpp"
#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/detail/runtime/launch.cuh"
#include "fftconv/detail/kernels/cufft_tiles.cuh"
#include "fftconv/detail/runtime/engine.hpp"
#include "fftconv/detail/kernels/filter_dft.cuh"
#include "fftconv/detail/kernels/fused_depthwise.cuh"
#include "fftconv/detail/kernels/fused_tile_fft.cuh"
#include "fftconv/detail/pipeline/padding_only_outputs.hpp"
#include "fftconv/detail/tiling/pass_schedule.hpp"
#include "fftconv/detail/kernels/spectral_gemm.cuh"
#include "fftconv/detail/pipeline/spectral_product.hpp"
#include "fftconv/detail/tiling/workspace_layout.hpp"
#include "fftconv/problem.hpp"

namespace fftconv::detail {

inline constexpr int block_threads = 256;

// Overlap on a side stream pays from this GEMM size up (on the H200 it hides
// more than it costs at 13.8 GFLOP, not at 4.6: docs/performance.md).
inline constexpr double overlap_min_gemm_flops = 8e9;

inline unsigned grid_blocks(std::int64_t total) { return grid_stride_blocks(total, block_threads); }

// Calls f(geo with its tile extent a constant) when the runtime tile extent
// is one of `Extents`, and returns whether it did.
template <class Geometry, class F, int... Extents>
bool with_static_fused_tile(const Geometry& geo, F&& f, extent_list<Extents...>) {
    return ((geo.tile_extent() == Extents && (f(geo.template with_static_tile<Extents>()), true)) || ...);
}

// Calls fused(g) with a geometry whose tile extent is a constant when the
// tile extent has a fused transform, else cufft(geo). A geometry with a
// static tile extent instantiates only one of the two.
template <class Geometry, class Fused, class Cufft>
void on_transform_path(const Geometry& geo, Fused&& fused, Cufft&& cufft) {
    if constexpr (Geometry::static_tile) {
        if constexpr (has_fused_fft(Geometry::static_extents.tile_extent)) fused(geo);
        else cufft(geo);
    } else {
        if (!with_static_fused_tile(geo, fused, fused_tile_extents{})) cufft(geo);
    }
}

// The spectral GEMM a geometry runs: instantiated for its channel count when
// that is a constant (the contraction depth folds), else the library's.
template <class Geometry>
constexpr spectral_gemm_launcher spectral_gemm_for() {
    if constexpr (Geometry::static_channels) return &spectral_gemm_static<Geometry::static_extents.channels>;
    else return &spectral_gemm;
}

// Where one pass reads and writes. The pass problem (tiling/pass_schedule.hpp) has the
// pass's extents (a band of tile rows: the unpadded problem whose output is
// the band's); the image view says where its input comes from: input row
// first_row + i and column first_col + j feed the pass's output (i, j)
// window (negative, or past height / width: zero padding). x and y are of
// one element type E: float, __nv_bfloat16 or __half.
template <class E>
struct pass_io {
    const E* x;                  // the pass's first sample, channel 0, row 0
    tensor_strides x_strides;
    std::int64_t height, width;  // of the image
    std::int64_t first_row, first_col;
    const float* w;              // the filters of the pass's output channels to transform first, or null
    filter_operand filter;       // the spectrum to multiply by
    bool filter_in_order;        // a depthwise pass: an earlier pass left `filter` in its kernel's order
    const float* bias;           // the pass's output channels' bias, or null
    E* y;                        // the pass's first output
    tensor_strides y_strides;
    channel_groups groups;
};

// The filters of output channels [0, t's out_channels) of `w` (dense
// [out][in / groups][K][K]), scaled by 1/T^2 (the inverse transform is
// unnormalised), into `spectrum` ([bin][in_channel of the group][out_channel],
// bin stride t.filter_bin_stride; float2 on the fused path, double2 on the
// cuFFT path).
template <class Geometry>
void transform_filters(engine& e, const Geometry& geo, const workspace_layout& t, const pipeline_buffers& b,
                       const float* w, std::int64_t group_in_channels, void* spectrum, cudaStream_t stream) {
    const std::int64_t out_channels = t.geometry.out_channels();
    on_transform_path(
        geo,
        [&](const auto& g) {
            using G = std::decay_t<decltype(g)>;
            const float scale = 1.0f / float(g.tile_elements());
            launch_forward_tiles<G>(filter_tiles<G>{g, w, group_in_channels, out_channels, scale},
                                    t.filter_transforms, t.filter_bin_stride, static_cast<float2*>(spectrum),
                                    stream);
        },
        [&](const auto& g) {
            if (t.image_to_output) {  // the radix-3 depthwise extents
                const half_spectrum_sink sink{static_cast<double2*>(spectrum), t.filter_bin_stride,
                                              g.tile_extent() / 2 + 1};
                launch_filter_dft(g, w, t.filter_transforms, sink, stream);
                return;
            }
            const double scale = 1.0 / double(g.tile_elements());
            const std::int64_t total = t.filter_transforms * g.tile_elements();
            const auto kernel = pad_filters<std::decay_t<decltype(g)>, double>;
            launch(kernel, grid_blocks(total), block_threads, 0, stream, g, group_in_channels, out_channels, w,
                                                                     static_cast<double*>(b.real), total, scale);
            e.execute(e.transform_for(filter_transform_key(t)), fft_direction::forward, b.real, spectrum, b.fft_work);
        });
}

// One fused pass (see run_pass).
template <class Geometry, class E>
void run_fused_pass(engine& e, const problem& p, const Geometry& geo, const workspace_layout& t,
                    const pipeline_buffers& b, const pass_io<E>& io) {
    const tile_grid grid{p.batch, t.tiles_wide, t.tiles_per_image, t.tile_slots};
    const output_tiles<Geometry, E> sink{geo,         io.y, io.y_strides, p.out_height(), p.out_width(),
                                         t.outputs,   grid, io.bias};
    const image_tiles<Geometry, E> source{geo,       io.x, io.x_strides, io.height, io.width,
                                          t.outputs, grid, io.first_row, io.first_col};
    // Large problems overlap independent work on a side stream: the filter
    // transform runs beside the image transform, and the inverse of the first
    // half of the output channels beside the GEMM of the second half. On
    // small problems the extra launches and events cost more than they hide,
    // so all runs in order.
    const double gemm_flops = 8.0 * double(geo.freq_bins()) * double(t.gemm_rows) *
                              double(p.group_in_channels()) * double(p.out_channels);
    side_branch side(e, gemm_flops >= overlap_min_gemm_flops);
    const bool overlap = side.stream() != e.stream();
    const cudaStream_t main = e.stream();
    if (io.w != nullptr)
        transform_filters(e, geo, t, b, io.w, p.group_in_channels(), b.filter_spectrum, side.stream());
    launch_forward_tiles<Geometry>(source, t.input_transforms, t.input_bin_stride,
                                   static_cast<float2*>(b.input_spectrum), main);
    if (overlap) e.order(side.stream(), main, side_event::join);

    const std::int64_t split = overlap ? p.out_channels / 2 : p.out_channels;  // gemm_rows is even: halves meet between pairs
    constexpr spectral_gemm_launcher gemm = spectral_gemm_for<Geometry>();
    multiply_spectra(e, t, io.filter, b, 0, split, io.groups, gemm);
    if (overlap) e.order(main, side.stream(), side_event::hand_off);
    const auto* product = static_cast<const float2*>(b.output_spectrum);
    launch_inverse_tiles<Geometry>(product, 0, split * t.gemm_rows, t.output_bin_stride, sink, side.stream());
    multiply_spectra(e, t, io.filter, b, split, p.out_channels, io.groups, gemm);
    launch_inverse_tiles<Geometry>(product, split * t.gemm_rows, t.output_transforms, t.output_bin_stride, sink,
                                   main);
    side.join();
}

// One cuFFT pass (see run_pass).
template <class Geometry, class E>
void run_cufft_pass(engine& e, const problem& p, const Geometry& geo, const workspace_layout& t,
                    const pipeline_buffers& b, const pass_io<E>& io) {
    if (io.w != nullptr) transform_filters(e, geo, t, b, io.w, p.group_in_channels(), b.filter_spectrum, e.stream());
    launch_extents in{p.batch, io.height, io.width, p.out_height(), p.out_width(),
                      p.in_channels, t.outputs, t.tiles_wide, t.tiles_per_image, io.x_strides, io.first_row, io.first_col};
    const std::int64_t input_total = t.input_transforms * geo.tile_elements();
    const auto gather = gather_tiles<Geometry, double, E>;
    launch(gather, grid_blocks(input_total), block_threads, 0, e.stream(), geo, in, io.x,
           static_cast<double*>(b.real), input_total);
    e.execute(e.transform_for(input_transform_key(t)), fft_direction::forward, b.real, b.input_spectrum, b.fft_work);

    multiply_spectra(e, t, io.filter, b, 0, p.out_channels, io.groups);

    e.execute(e.transform_for(output_transform_key(t)), fft_direction::inverse, b.output_spectrum, b.real, b.fft_work);
    launch_extents out = in;
    out.channels = p.out_channels;
    out.strides = io.y_strides;
    out.bias = io.bias;
    const std::int64_t output_total = p.output_elements();
    const auto scatter = scatter_tiles<Geometry, double, E>;
    launch(scatter, grid_blocks(output_total), block_threads, 0, e.stream(), geo, out,
           static_cast<const double*>(b.real), io.y, output_total);
}

// One depthwise pass on a fused_depthwise_extents extent (see run_pass): no
// channel sum, so no spectra in between (fused_depthwise.cuh). The kernel
// reads the filter spectrum channel-major from the output spectrum's place,
// which no kernel of the pass writes: later passes over the same output
// channels find it there. On the radix-3 extents the filter DFT writes it in
// that order itself; otherwise a copy orders the filter spectrum.
template <class Geometry, class E>
void run_depthwise_pass(engine& e, const problem& p, const Geometry& geo, const workspace_layout& t,
                        const pipeline_buffers& b, const pass_io<E>& io) {
    if (io.w != nullptr && t.slot_ordered_filter) {
        const slot_order_sink sink{static_cast<float2*>(b.output_spectrum), t.geometry.tile_extent()};
        launch_filter_dft(geo, io.w, t.filter_transforms, sink, e.stream());
    } else {
        if (io.w != nullptr) transform_filters(e, geo, t, b, io.w, 1, b.filter_spectrum, e.stream());
        if (!io.filter_in_order) channel_major_filter(e, t, io.filter, b.output_spectrum);
    }
    const auto run_on = [&](const auto& g) {
        using G = std::decay_t<decltype(g)>;
        const tile_grid grid{p.batch, t.tiles_wide, t.tiles_per_image, t.tile_slots};
        const output_tiles<G, E> sink{g, io.y, io.y_strides, p.out_height(), p.out_width(), t.outputs, grid, io.bias};
        const image_tiles<G, E> source{g,         io.x, io.x_strides, io.height, io.width,
                                       t.outputs, grid, io.first_row, io.first_col};
        launch_depthwise_tiles<G>(source, static_cast<const float2*>(b.output_spectrum),
                                  io.groups.first_out, io.groups.out_per_group, sink, t.output_transforms, e.stream());
    };
    if constexpr (Geometry::static_tile) {
        if constexpr (has_fused_depthwise(Geometry::static_extents.tile_extent)) run_on(geo);
    } else {
        with_static_fused_tile(geo, run_on, fused_depthwise_extents{});
    }
}

// One pass: `p` holds its extents (pass_problem), `io` where it reads and
// writes. With io.w non-null the pass first transforms the filters of its
// output channels into the workspace.
// A depthwise configuration (depthwise_only: every problem it runs is
// depthwise) on a fused_depthwise_extents extent compiles that pass alone.
template <bool depthwise_only, class Geometry, class E>
void run_pass(engine& e, const problem& p, const Geometry& geo, const workspace_layout& t,
              const pipeline_buffers& b, const pass_io<E>& io) {
    if (t.image_to_output) return run_depthwise_pass(e, p, geo, t, b, io);
    if constexpr (!(depthwise_only && Geometry::static_tile &&
                    has_fused_depthwise(Geometry::static_extents.tile_extent)))
        on_transform_path(
            geo, [&](const auto& g) { run_fused_pass(e, p, g, t, b, io); },
            [&](const auto& g) { run_cufft_pass(e, p, g, t, b, io); });
}

// y = conv2d(x, w) + bias for x and y of element type E (run_pipeline).
template <bool depthwise_only, class Geometry, class E>
void run_passes(engine& e, const problem& p, const Geometry& geo, const E* x, const filter_input& filter,
                const float* bias, E* y) {
    const int tile_extent = geo.tile_extent();
    const bool holds_filter = filter.w != nullptr;
    const pass_schedule schedule = prepare(e, p, tile_extent, holds_filter);
    const pipeline_buffers b = buffers_in(schedule.layout, e.workspace(schedule.workspace));

    const tensor_strides xs = dense_strides(p.in_channels, p.height, p.width);
    const tensor_strides ys = dense_strides(p.out_channels, p.out_height(), p.out_width());
    const std::int64_t filter_size = p.group_in_channels() * p.kernel.height * p.kernel.width;
    const std::int64_t out_tile = tile_outputs_of(p, tile_extent).high;  // bands of tile rows
    for_each_pass(p, tile_extent, schedule.shape, [&](const problem& q, std::int64_t b0, std::int64_t r0,
                                                  std::int64_t o0, bool first_of_channels) {
        const workspace_layout t = make_layout(q, tile_extent, holds_filter);
        const std::int64_t row0 = r0 * out_tile;
        pass_io<E> io{};
        io.x = x + b0 * xs.batch;
        io.x_strides = xs;
        io.height = p.height;
        io.width = p.width;
        io.first_row = row0 - p.padding.height;
        io.first_col = -p.padding.width;
        // The filters of these output channels are transformed by their first pass.
        io.w = holds_filter && first_of_channels ? filter.w + o0 * filter_size : nullptr;
        io.filter = holds_filter ? filter_operand{b.filter_spectrum, 0, q.out_channels, t.filter_bin_stride}
                                 : filter_operand{filter.given.data, o0, filter.given.ld, filter.given.bin_stride};
        io.filter_in_order = holds_filter && !first_of_channels;
        io.bias = bias == nullptr ? nullptr : bias + o0;
        io.y = y + b0 * ys.batch + o0 * ys.channel + row0 * ys.row;
        io.y_strides = ys;
        io.groups = {p.groups, p.group_in_channels(), p.group_out_channels(), o0};
        run_pass<depthwise_only>(e, q, geo, t, b, io);
    });
    write_padding_only_outputs(p, bias, y, e.stream());
}

// y = conv2d(x, w) + bias: schedules the passes, makes the workspace, runs
// them. io holds x and y, of any element type. Exactly one of filter.w and
// filter.given.data is non-null; bias may be null. `geo` has the problem's
// kernel extent and input channels; depthwise_only, that `p` is depthwise (a
// depthwise configuration's).
template <bool depthwise_only = false, class Geometry>
void run_pipeline(engine& e, const problem& p, const Geometry& geo, const activations& io, const filter_input& filter,
                  const float* bias) {
    with_element(io.type, [&](auto element) {
        using E = typename decltype(element)::type;
        run_passes<depthwise_only>(e, p, geo, static_cast<const E*>(io.in), filter, bias, static_cast<E*>(io.out));
    });
}

// The filter spectrum of `w` for problems like `p` (all output channels),
// into `spectrum` (filter_spectrum::bytes() of device memory).
template <class Geometry>
void transform_filter_spectrum(engine& e, const problem& p, const Geometry& geo, const float* w, void* spectrum) {
    // Only the filter: one image tile per pass is all the layout needs.
    problem filter_only = p;
    filter_only.batch = 1;
    filter_only.height = p.kernel.height;
    filter_only.width = p.kernel.width;
    filter_only.padding = {0, 0};
    workspace_layout layout = make_layout(filter_only, geo.tile_extent());
    // The spectrum goes to `spectrum`: of the workspace, transform_filters
    // uses only the cuFFT path's padded filters and work area (none on the
    // fused extents), not the layout's spectra.
    layout.input_spectrum_elements = layout.filter_spectrum_elements = layout.output_spectrum_elements = 0;
    if (layout.beyond_memory)
        throw error(status::out_of_memory, "fftconv: transform_filter for problem " + to_string(p) +
                                               " needs more memory than any device has");
    // The padded filters are transformed in one pass: under a smaller
    // workspace limit the call is refused, not run past the limit.
    const std::size_t bytes = workspace_bytes(e, layout);
    if (bytes > e.workspace_limit && bytes > e.workspace_capacity())
        throw error(status::out_of_memory,
                    "fftconv: transform_filter for problem " + to_string(p) + " needs " + std::to_string(bytes) +
                        " bytes of workspace (the filters padded to tile extent " +
                        std::to_string(geo.tile_extent()) + "), more than the context's workspace limit of " +
                        std::to_string(e.workspace_limit) + " bytes");
    const pipeline_buffers b = buffers_in(layout, e.workspace(bytes));
    transform_filters(e, geo, layout, b, w, p.group_in_channels(), spectrum, e.stream());
}

}  // namespace fftconv::detail
