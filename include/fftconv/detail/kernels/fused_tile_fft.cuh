// fftconv/detail/kernels/fused_tile_fft.cuh — overlap-save's transforms for tile
// extents 16, 32 and 64 (fused_tile_extents), each one kernel that reads the image (or filter) and
// writes the spectrum straight into the GEMM's bin-major layout, and back.
//
// Why not cuFFT here: cuFFT needs the real tiles materialised (a gather pass),
// runs a 2D transform as two passes over memory, and writes the bin-major
// layout with a large output stride, which it does slowly. Here every byte
// of image and spectrum crosses device memory once.
//
// Two real tiles a, b ride in one complex transform z = a + i b (Hermitian
// symmetry lets us split the result exactly):
//   A[k] = (Z[k] + conj(Z[-k])) / 2,   B[k] = -i (Z[k] - conj(Z[-k])) / 2,
// and on the way back IFFT(A + i B) = a + i b. Each block holds `pairs`
// complex T x T tiles in shared memory; a thread transforms one row and one
// column in registers. The inverse transforms columns last and writes them
// straight from registers to y (coalesced), so shared memory carries only
// the transpose between its passes. (The forward transform done the same way,
// columns first from memory, is slower on the H200: docs/performance.md.)
//
// Pairing and magnitudes: the split (and an inverse's shared transform)
// rounds both partners to the larger one's magnitude; where the partners are
// slices a user treats as independent, each is balanced by an exact power of
// two around the shared transform (pair_scale.cuh), so that every partner is
// rounded as if it were transformed alone.
//
// Pairing and non-finite values: a NaN or Inf anywhere in a makes all of
// Z = FFT(a + i b) non-finite, and so b's half too. Tiles n and n + 1 are
// paired (n even), so the tile layout gives every image an even number of
// tile slots (workspace_layout.hpp, tile_slots): a pair never spans two images, and a
// non-finite value reaches at most the partner tile of the same image.
#pragma once

#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <type_traits>

#include "fftconv/detail/kernels/async_copy.cuh"
#include "fftconv/detail/kernels/element_access.cuh"
#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/detail/runtime/launch.cuh"
#include "fftconv/detail/kernels/pair_scale.cuh"
#include "fftconv/detail/kernels/register_fft.cuh"
#include "fftconv/detail/tiling/tile_window.hpp"
#include "fftconv/detail/tiling/workspace_layout.hpp"

namespace fftconv::detail {

// Whether a source's pairs need pair_scale: its partners are slices a user
// treats as independent. An image's pairs are two tiles of one image
// (image_tiles), which need none.
template <class Source>
constexpr bool scales_partners = true;

// Where tile slot n = (channel * batch + b) * tile_slots + tile of an image
// or its output sits: the channel, sample b, and the tile's row and column in
// the image's grid of tiles; slots past tiles_per_image hold no tile. Kernels
// find a place once (a few 64-bit divisions: long instruction sequences, 19
// of them per tile pair when every window divided for itself) and step to
// the next slot.
struct tile_place {
    std::int64_t channel, b, tile, row, col;
    bool exists;
};

struct tile_grid {
    std::int64_t batch, tiles_wide, tiles_per_image, tile_slots;

    __device__ tile_place place(std::int64_t n) const {
        const std::int64_t image = n / tile_slots, tile = n - image * tile_slots;
        const std::int64_t channel = image / batch, row = tile / tiles_wide;
        return {channel, image - channel * batch, tile, row, tile - row * tiles_wide, tile < tiles_per_image};
    }
    // Slot n + 1, from slot n's place.
    __device__ tile_place next(tile_place at) const {
        if (++at.tile == tile_slots) {
            at.tile = at.row = at.col = 0;
            if (++at.b == batch) {
                at.b = 0;
                ++at.channel;
            }
        } else if (++at.col == tiles_wide) {
            at.col = 0;
            ++at.row;
        }
        at.exists = at.tile < tiles_per_image;
        return at;
    }
};

// Input tile n: the window of x that the tile's outputs see. The output row 0
// of the pass reads input row first_row (its first output row minus the top
// padding: negative where the window hangs over the zero padding), output
// column 0 input column first_col (minus the left padding). Consecutive tiles
// are `outputs` apart (workspace_layout.hpp, tile_outputs_of). x's elements
// are float, __nv_bfloat16 or __half (read as float: element_access.cuh).
template <class Geometry, class Element = float>
struct image_tiles {
    Geometry geo;
    const Element* x;
    tensor_strides strides;
    std::int64_t height, width;
    tile_outputs outputs;
    tile_grid grid;
    std::int64_t first_row, first_col;
    static constexpr float scale = 1.0f;

    // Tile `at` of the image of channel `channel` (a depthwise output reads
    // another channel's image than its own).
    __device__ tile_window window(std::int64_t channel, const tile_place& at) const {
        if (!at.exists) return tile_window{};
        const std::int64_t y0 = first_row + at.row * outputs.high, x0 = first_col + at.col * outputs.wide;
        const int t = geo.tile_extent();
        return {at.b * strides.batch + channel * strides.channel + y0 * strides.row + x0,
                window_begin(y0, t), window_end(y0, height, t),
                window_begin(x0, t), window_end(x0, width, t), strides.row};
    }
    __device__ tile_window window(std::int64_t n) const {
        const tile_place at = grid.place(n);
        return window(at.channel, at);
    }
    __device__ const Element* data() const { return x; }
};

template <class Geometry, class Element>
constexpr bool scales_partners<image_tiles<Geometry, Element>> = false;

// Whether a source's pairs are loaded by cp.async (copy_pair): float
// images, which need neither a scale nor their largest magnitudes; half
// types widen on the way (load_pair).
template <class Source>
constexpr bool copies_pairs = false;
template <class Geometry>
constexpr bool copies_pairs<image_tiles<Geometry, float>> = true;

// Filter tile n = in_channel * out_channels + out_channel (in_channel within
// the output channel's group): the Kh x Kw filter, scaled by 1/T^2 (the inverse
// transform is unnormalised). out_channels is the pass's (a pass may cover
// some of the output channels); group_in_channels the filter's second extent.
template <class Geometry>
struct filter_tiles {
    Geometry geo;
    const float* w;
    std::int64_t group_in_channels, out_channels;
    float scale;

    __device__ tile_window window(std::int64_t n) const {
        const int kh = geo.kernel_height(), kw = geo.kernel_width();
        const std::int64_t o = n % out_channels, c = n / out_channels;
        return {(o * group_in_channels + c) * kh * kw, 0, kh, 0, kw, kw};
    }
    __device__ const float* data() const { return w; }
};

// Whether every tile of a source is a window at the tile's origin no larger
// than the geometry's kernel (a filter: kernel_height x kernel_width, zero
// padded to T x T). Its forward transform then neither loads nor transforms
// the zeros past the kernel (fft_in_registers_of_prefix).
template <class Source>
constexpr bool origin_windows = false;
template <class Geometry>
constexpr bool origin_windows<filter_tiles<Geometry>> = true;

// Output tile n = (out_channel * batch + b) * tile_slots + tile: its first
// outputs.high x outputs.wide outputs (the ones no circular wrap reached, or
// where the tile covers the padded image all of them: tile_outputs_of),
// clipped to y, plus the output channel's bias (when there is one); slots
// past tiles_per_image write nothing. y's elements are float,
// __nv_bfloat16 or __half (rounded to nearest as they are written).
template <class Geometry, class Element = float>
struct output_tiles {
    Geometry geo;
    Element* y;
    tensor_strides strides;
    std::int64_t out_height, out_width;
    tile_outputs outputs;
    tile_grid grid;
    const float* bias;  // the pass's output channels' (null: none)

    __device__ float bias_of(const tile_place& at) const { return bias == nullptr ? 0.0f : bias[at.channel]; }

    __device__ tile_window window(const tile_place& at) const {
        if (!at.exists) return tile_window{};
        const int rows = outputs.high, cols = outputs.wide;
        const std::int64_t y0 = at.row * rows, x0 = at.col * cols;
        return {at.b * strides.batch + at.channel * strides.channel + y0 * strides.row + x0,
                0, clip(rows, out_height - y0),
                0, clip(cols, out_width - x0), strides.row};
    }
};

// Where the real and imaginary parts of an inverse transformed pair go: two
// output windows (empty: not written) and their bias.
struct output_pair {
    tile_window real, imag;
    float real_bias, imag_bias;
};

// Output tiles n and n + 1 of `sink` (each skipped outside [0, tile_count)).
template <class Geometry, class Element>
__device__ output_pair output_pair_at(const output_tiles<Geometry, Element>& sink, std::int64_t n,
                                      std::int64_t tile_count) {
    const tile_place a = sink.grid.place(n), b = sink.grid.next(a);
    const bool real = n < tile_count, imag = n + 1 < tile_count;
    return {real ? sink.window(a) : tile_window{}, imag ? sink.window(b) : tile_window{},
            real ? sink.bias_of(a) : 0.0f, imag ? sink.bias_of(b) : 0.0f};
}

// The stages the fused kernels share. Each block holds `pairs` T x T complex
// tiles z (pitch T + 1) in shared memory; thread `lane` of a pair works on
// row `lane` or column `lane` of its tile.

// The two tiles a forward transform pair holds: tile `first` (the real
// partner, where has_first) and tile first + second_offset (the imaginary
// one, where has_second); `balanced`: its partners are slices a user treats
// as independent, brought to a common magnitude around the shared transform
// (pair_scale). By default pair p is tiles 2p and 2p + 1 (each skipped from
// tile_count on), balanced where scales_partners says so; a source may pair
// other tiles (filter_gradient_gemm.cu: two positions of one channel, balanced
// only where they are two samples').
struct tile_pair {
    std::int64_t first, second_offset;
    bool has_first, has_second, balanced;
};
template <class Source>
__device__ tile_pair pair_tiles(const Source&, std::int64_t pair, std::int64_t tile_count) {
    const std::int64_t n = 2 * pair;
    return {n, 1, n < tile_count, n + 1 < tile_count, scales_partners<Source>};
}
// How many pairs hold a source's tile_count tiles (host code: the launch).
template <class Source>
std::int64_t pair_count(const Source&, std::int64_t tile_count) {
    return (tile_count + 1) / 2;
}

// The windows of a pair's tiles (each left empty where the pair lacks it):
// for an image, one place found and stepped to the next.
template <class Source>
__device__ void pair_windows(const Source& source, const tile_pair& pair, tile_window& a, tile_window& b) {
    if (pair.has_first) a = source.window(pair.first);
    if (pair.has_second) b = source.window(pair.first + pair.second_offset);
}
template <class Geometry, class Element>
__device__ void pair_windows(const image_tiles<Geometry, Element>& source, const tile_pair& pair, tile_window& a,
                             tile_window& b) {
    const tile_place first = source.grid.place(pair.first), second = source.grid.next(first);
    if (pair.has_first) a = source.window(first.channel, first);
    if (pair.has_second) b = source.window(second.channel, second);
}

// Element (0, column) of a window of a tensor in global memory, stepped a
// row at a time, as a byte address: as a pointer it would point outside the
// tensor for rows over the padding (never read or written there); index
// arithmetic per element (a 64-bit shift and add) was a third of the load
// and store loops' instructions. Reads and writes name the global space (from
// an integer, the compiler would emit generic ones). Elements of type E are
// read and written as float (element_access.cuh).
template <class E>
struct window_cursor {
    std::uintptr_t at;
    std::uintptr_t row_step;

    __device__ window_cursor(const E* data, const tile_window& w, int column)
        : at(reinterpret_cast<std::uintptr_t>(data) + sizeof(E) * std::uintptr_t(w.offset + column)),
          row_step(sizeof(E) * std::uintptr_t(w.row_stride)) {}
    __device__ stored<E> load() const { return load_cached(reinterpret_cast<const E*>(at)); }
    __device__ void store(float value) const { store_write_back(reinterpret_cast<E*>(at), value); }
    __device__ const E* address() const { return reinterpret_cast<const E*>(at); }
    __device__ void next_row() { at += row_step; }
    __device__ void skip_rows(int rows) { at += std::uintptr_t(rows) * row_step; }
};

// The larger of `largest` and |v|, NaN if either is NaN: one instruction
// that both finds a tile's largest magnitude and catches a NaN or Inf in it.
__device__ __forceinline__ float max_magnitude(float largest, float v) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
    float r;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(largest), "f"(fabsf(v)));
    return r;
#else
    return isnan(largest) || isnan(v) ? __int_as_float(0x7fffffff) : fmaxf(largest, fabsf(v));
#endif
}

// z = a + i b for the pair's windows (zero outside them; a's into data_a,
// b's into data_b), times `scale`: thread `lane` loads column `lane` of rows
// [first, first + Rows) (all of them by default; coalesced across the warp;
// only the first `loaded_rows` of them, a multiple of 16, where given),
// `chunk` rows at a time, all of a chunk's loads in flight before the first
// is used (one load per iteration was latency-bound). `largest` gets the
// largest magnitude this thread loaded of each (a: .x, b: .y; before
// `scale`), NaN where one was NaN; returns whether both are finite.
template <int T, int Rows = T, class A, class B>
__device__ __forceinline__ bool load_pair(float2* z, int lane, const A* data_a, const tile_window& wa,
                                          const B* data_b, const tile_window& wb, float scale,
                                          float2& largest, int first = 0, int loaded_rows = Rows) {
    constexpr int pitch = T + 1, chunk = 16;
    static_assert(Rows % chunk == 0, "rows are loaded in chunks");
    largest = float2{0.0f, 0.0f};
    const bool column_a = lane >= wa.col_begin && lane < wa.cols, column_b = lane >= wb.col_begin && lane < wb.cols;
    window_cursor at_a(data_a, wa, lane), at_b(data_b, wb, lane);
    at_a.skip_rows(first);
    at_b.skip_rows(first);
#pragma unroll 1
    for (int base = first; base < first + loaded_rows; base += chunk) {
        stored<A> sa[chunk];
        stored<B> sb[chunk];
#pragma unroll
        for (int u = 0; u < chunk; ++u) {
            const int r = base + u;
            sa[u] = column_a && r >= wa.row_begin && r < wa.rows ? at_a.load() : stored<A>{0};  // 0 bits: +0
            sb[u] = column_b && r >= wb.row_begin && r < wb.rows ? at_b.load() : stored<B>{0};
            at_a.next_row();
            at_b.next_row();
        }
#pragma unroll
        for (int u = 0; u < chunk; ++u) {
            const float va = widen<A>(sa[u]), vb = widen<B>(sb[u]);
            largest.x = max_magnitude(largest.x, va);
            largest.y = max_magnitude(largest.y, vb);
            z[(base + u) * pitch + lane] = float2{scale * va, scale * vb};
        }
    }
    return largest.x <= FLT_MAX && largest.y <= FLT_MAX;  // false for Inf and NaN
}

// z = a + i b for the pair's windows of x (zero outside them), every row's
// copy in flight at once: thread `lane` copies column `lane` of each row
// by cp.async (coalesced across the warp) and waits for its copies; a
// barrier then shows them to the tile's other threads. (load_pair keeps 16
// rows in flight through registers, a memory latency per 16 rows.)
template <int T>
__device__ __forceinline__ void copy_pair(float2* z, int lane, const float* x, const tile_window& wa,
                                          const tile_window& wb) {
    constexpr int pitch = T + 1;
    const bool column_a = lane >= wa.col_begin && lane < wa.cols, column_b = lane >= wb.col_begin && lane < wb.cols;
    window_cursor<float> at_a(x, wa, lane), at_b(x, wb, lane);
#pragma unroll 8
    for (int r = 0; r < T; ++r) {
        const bool a = column_a && r >= wa.row_begin && r < wa.rows, b = column_b && r >= wb.row_begin && r < wb.rows;
        float2* const to = z + r * pitch + lane;
        copy_4(&to->x, a ? at_a.address() : x, a ? 4 : 0);  // 0 bytes: zero filled, nothing read
        copy_4(&to->y, b ? at_b.address() : x, b ? 4 : 0);
        at_a.next_row();
        at_b.next_row();
    }
    commit_copies();
    wait_all_copies();
}

// Both windows of one array.
template <int T, int Rows = T, class E>
__device__ __forceinline__ bool load_pair(float2* z, int lane, const E* data, const tile_window& wa,
                                          const tile_window& wb, float scale, float2& largest, int first = 0,
                                          int loaded_rows = Rows) {
    return load_pair<T, Rows>(z, lane, data, wa, data, wb, scale, largest, first, loaded_rows);
}

// Row `lane` of z, transformed in place, when lane < rows: rows past both
// windows are zero, and so is their transform. (The register FFT takes its
// input in bit-reversed order: read so, at compile-time indices.)
template <int T, bool inverse>
__device__ __forceinline__ void transform_row(float2* z, int lane, int rows = T) {
    constexpr int pitch = T + 1;
    if (lane >= rows) return;
    float2 v[T];
#pragma unroll
    for (int s = 0; s < T; ++s) v[s] = z[lane * pitch + bit_reversed<T>.index[s]];
    fft_in_registers<T, inverse>(v);
#pragma unroll
    for (int k = 0; k < T; ++k) z[lane * pitch + k] = v[k];
}

// Column `lane` of z, transformed into v (v[k] is row k).
template <int T, bool inverse>
__device__ __forceinline__ void transform_column(const float2* z, int lane, float2 (&v)[T]) {
    constexpr int pitch = T + 1;
#pragma unroll
    for (int r = 0; r < T; ++r) v[r] = z[bit_reversed<T>.index[r] * pitch + lane];
    fft_in_registers<T, inverse>(v);
}

// Output column `lane` of a tile pair from v (v[r] is row r) straight to y
// (coalesced across the warp): factor.x times the real part into out.real,
// factor.y times the imaginary part into out.imag, each plus its bias, each
// window's address stepped a row at a time (window_cursor).
template <int T, class E>
__device__ __forceinline__ void store_output_column(const float2 (&v)[T], int lane, E* y, const output_pair& out,
                                                    float2 factor) {
    const bool real = lane < out.real.cols, imag = lane < out.imag.cols;
    if (!(real || imag)) return;
    window_cursor at_real(y, out.real, lane), at_imag(y, out.imag, lane);
#pragma unroll
    for (int r = 0; r < T; ++r) {
        const float2 value = v[r];
        if (real && r < out.real.rows) at_real.store(factor.x * value.x + out.real_bias);
        if (imag && r < out.imag.rows) at_imag.store(factor.y * value.y + out.imag_bias);
        at_real.next_row();
        at_imag.next_row();
    }
}

// A barrier among the threads of one tile (group `group` of the block):
// within a warp up to T = 32, a named barrier for the two warps of a
// 64-point tile (barrier 0 is __syncthreads'), so that one tile's passes
// never wait on another's. Orders shared memory among them like
// __syncthreads.
template <int T>
__device__ __forceinline__ void tile_sync(int group) {
    static_assert(T <= 32 || (T == 64 && tile_family_of(T).pairs == 2), "a tile is part of a warp, or one of two pairs of warps");
    if constexpr (T <= 32) {
        __syncwarp();
    } else if (group == 0) {  // constant barrier ids: a register id makes ptxas reserve all 16
        asm volatile("bar.sync 1, 64;" ::: "memory");
    } else {
        asm volatile("bar.sync 2, 64;" ::: "memory");
    }
}

// Transposing passes, for kernels that run several passes over one FFT body
// in a loop: thread `lane` reads row `lane` of z (read_row, in the FFT's
// bit-reversed input order), transforms it, and writes it back as column
// `lane` (write_column; a tile_sync between, since the column crosses every
// row). Each pass transposes, so every pass reads rows and writes columns at
// compile-time offsets, and two passes are a 2D transform in the tile's own
// orientation. Why one body: fully unrolled, a 64-point FFT is ~1200
// instructions; four inlined in the depthwise kernel are 150 KB of code,
// which overflows the instruction cache and leaves the kernel waiting on
// instruction fetch.
template <int T>
__device__ __forceinline__ void read_row(const float2* z, int lane, float2 (&v)[T]) {
    constexpr int pitch = T + 1;
#pragma unroll
    for (int s = 0; s < T; ++s) v[s] = z[lane * pitch + bit_reversed<T>.index[s]];  // the FFT's input order
}

template <int T>
__device__ __forceinline__ void write_column(float2* z, int lane, const float2 (&v)[T]) {
    constexpr int pitch = T + 1;
#pragma unroll
    for (int k = 0; k < T; ++k) z[k * pitch + lane] = v[k];
}

// The zero stages of a T-point line whose points from `extent` on are zero
// (fft_in_registers_of_prefix): the most, up to 3, with extent <= T >> stages.
__host__ __device__ constexpr int prefix_zero_stages(int tile_extent, int extent) {
    int stages = 0;
    while (stages < 3 && (tile_extent >> (stages + 1)) >= (extent > 2 ? extent : 2)) ++stages;
    return stages;
}

// Row `lane` of z, whose points from T >> ZeroStages on are zero, times
// `factor`, transformed into v (v[k] is column k): only the points below
// T >> ZeroStages are read.
template <int T, int ZeroStages>
__device__ __forceinline__ void transform_row_prefix(const float2* z, int lane, float2 (&v)[T], float2 factor) {
    constexpr int pitch = T + 1;
#pragma unroll
    for (int s = 0; s < T; s += 1 << ZeroStages) v[s] = scaled(z[lane * pitch + bit_reversed<T>.index[s]], factor);
    fft_in_registers_of_prefix<T, false, ZeroStages>(v);
}

// The same for zero stages known at run time (prefix_zero_stages): every
// lane of a launch takes the same case in a pass, so one FFT body runs.
template <int T>
__device__ __forceinline__ void transform_row_prefix(const float2* z, int lane, float2 (&v)[T], int zero_stages,
                                                     float2 factor) {
    switch (zero_stages) {
        case 0: return transform_row_prefix<T, 0>(z, lane, v, factor);
        case 1: return transform_row_prefix<T, 1>(z, lane, v, factor);
        case 2: return transform_row_prefix<T, 2>(z, lane, v, factor);
        default: return transform_row_prefix<T, 3>(z, lane, v, factor);
    }
}

// The unroll factor of forward_tiles' and inverse_tiles' loops of `passes`
// transposing passes (tile_family::unrolled_passes).
__host__ __device__ constexpr int pass_unroll(int tile_extent, int passes) {
    return tile_family_of(tile_extent).unrolled_passes ? passes : 1;
}

// The first row either of a pair's windows holds (an empty window holds none).
__device__ __forceinline__ int first_window_row(const tile_window& wa, const tile_window& wb) {
    return wa.rows == 0 ? wb.row_begin : wb.rows == 0 ? wa.row_begin : min(wa.row_begin, wb.row_begin);
}

// The array tile n of a source reads and the factor it is scaled by: one of
// each per source, except where a source of two tensors overloads these
// (filter_gradient_gemm.cu); a pair of tiles reads one tensor.
template <class Source>
__device__ auto tile_data(const Source& source, std::int64_t) {
    return source.data();
}
template <class Source>
__device__ float tile_scale(const Source& source, std::int64_t) {
    return source.scale;
}
// Whether a source keeps its pairs' largest magnitudes (the filter
// gradient keeps each of x's channels' for its inverse:
// filter_gradient_gemm.cu): record_largest(source, pair, bits) is called by
// one lane of each warp of the pair with the float bits of the largest
// magnitudes (.x: the first partner's, .y: the second's) the warp loaded.
template <class Source>
constexpr bool records_largest = false;

// The scales of an inverse's pairs (n, n + 1), by default none: the tiles of
// one output image need none.
struct no_pair_scales {
    __device__ pair_scale of(std::int64_t) const { return pair_scale{}; }
};

// Real tiles [0, tile_count) of `source` -> spectrum[bin * bin_stride + n],
// bins = T x (T/2 + 1), row-major (the layout cuFFT's R2C would produce).
// bin_stride is a multiple of 4, so a pair (n even) is one 16-byte store.
// This launch covers the pairs from `first_pair` on (a launch has at most
// max_fused_blocks blocks).
template <class Geometry, class Source>
__global__ void __launch_bounds__(tile_family_of(Geometry::static_extents.tile_extent).threads(),
                                  tile_family_of(Geometry::static_extents.tile_extent).dense_min_blocks)
    forward_tiles(Source source, std::int64_t tile_count, std::int64_t first_pair, std::int64_t bin_stride,
                  float2* __restrict__ spectrum) {
    constexpr int T = Geometry::static_extents.tile_extent;
    constexpr int pitch = T + 1, pairs = tile_family_of(T).pairs, threads = tile_family_of(T).threads(), freq_cols = T / 2 + 1;
    constexpr bool may_balance = scales_partners<Source>;
    extern __shared__ float2 shared[];
    __shared__ pair_largest<threads, T> largest_of;
    // The stores below split pair g (not this thread's): its tiles and factors from shared memory.
    __shared__ tile_pair pair_of[pairs];
    __shared__ float2 back_of[pairs];
    const int lane = threadIdx.x, group = threadIdx.y, linear = group * T + lane;
    constexpr int stride = tile_family_of(T).tile_stride();
    float2* z = shared + group * stride;
    const std::int64_t block_pair = first_pair + std::int64_t(blockIdx.x) * pairs;

    // Load the pair's tiles, zero outside their windows.
    const tile_pair pair = pair_tiles(source, block_pair + group, tile_count);
    tile_window wa = tile_window{}, wb = tile_window{};
    pair_windows(source, pair, wa, wb);
    // Where the tiles are windows at the origin (a filter), only the rows
    // that hold the kernel are loaded, and each pass transforms lines whose
    // points past the kernel are zero: rows (pass 0) kernel_width points
    // long, columns (pass 1) kernel_height.
    constexpr bool at_origin = origin_windows<Source>;
    int row_zero_stages = 0, column_zero_stages = 0, loaded_rows = T;
    if constexpr (at_origin) {
        row_zero_stages = prefix_zero_stages(T, source.geo.kernel_width());
        column_zero_stages = prefix_zero_stages(T, source.geo.kernel_height());
        loaded_rows = min(T, (source.geo.kernel_height() + 15) / 16 * 16);
    }
    float2 largest{0.0f, 0.0f};
    if constexpr (copies_pairs<Source>)
        copy_pair<T>(z, lane, source.data(), wa, wb);
    else
        load_pair<T>(z, lane, tile_data(source, pair.first), wa, wb, tile_scale(source, pair.first), largest, 0,
                     loaded_rows);
    if constexpr (records_largest<Source>) {
        const unsigned same = pair_lanes<T>(linear);
        const uint2 bits{__reduce_max_sync(same, __float_as_uint(largest.x)),
                         __reduce_max_sync(same, __float_as_uint(largest.y))};
        if ((same & lanes_below()) == 0u && pair.has_first) record_largest(source, pair, bits);
    }
    if (may_balance && pair.balanced) largest_of.add(linear, largest);
    // Whether any pair of the block is balanced (pair_tiles decides it from
    // indices alone, so blocks of unbalanced pairs skip the factors' reads).
    const bool balancing = may_balance ? __syncthreads_or(pair.balanced) : (__syncthreads(), false);
    const pair_scale factors = may_balance && pair.balanced ? largest_of.scale(group) : pair_scale{};
    if (lane == 0) {
        pair_of[group] = pair;
        if (balancing) back_of[group] = factors.out;
    }
    // Rows, then columns: two transposing passes over one FFT body. Rows
    // outside both windows are zero, and so is their FFT. Windows at the
    // origin: pass 1 reads only the first T >> column_zero_stages rows' columns,
    // so only those rows are written by pass 0 (zero past the windows).
    const int rows = max(wa.rows, wb.rows), first_row = first_window_row(wa, wb);
    if constexpr (at_origin) {
        const int written_rows = T >> column_zero_stages;
#pragma unroll pass_unroll(T, 2)
        for (int pass = 0; pass < 2; ++pass) {
            float2 v[T];
            if (pass == 1 || (lane >= first_row && lane < rows)) {
                transform_row_prefix<T>(z, lane, v, pass == 0 ? row_zero_stages : column_zero_stages,
                                        pass == 0 && factors.active ? factors.in : float2{1.0f, 1.0f});
            } else {
#pragma unroll
                for (int k = 0; k < T; ++k) v[k] = float2{0.0f, 0.0f};
            }
            tile_sync<T>(group);  // every line is in registers before the columns overwrite them
            if (pass == 1 || lane < written_rows) write_column<T>(z, lane, v);
            tile_sync<T>(group);
        }
    } else {
#pragma unroll pass_unroll(T, 2)
        for (int pass = 0; pass < 2; ++pass) {
            float2 v[T];
            read_row<T>(z, lane, v);
            if (may_balance && pass == 0 && factors.active)
#pragma unroll
                for (int k = 0; k < T; ++k) v[k] = scaled(v[k], factors.in);
            tile_sync<T>(group);  // every row is in registers before the columns overwrite them
            if (pass == 1 || (lane >= first_row && lane < rows)) fft_in_registers<T, false>(v);
            write_column<T>(z, lane, v);
            tile_sync<T>(group);
        }
    }
    __syncthreads();  // the stores below read every tile of the block

    // Split the pair and store bin-major; consecutive threads of a bin write
    // consecutive pairs, so each bin's stores from this block are contiguous
    // where pairs are adjacent tiles (one 16-byte store a bin, n even).
    // Thread `linear` splits pair g = linear % pairs (threads is a multiple of
    // pairs) at bins linear / pairs + T j, j < freq_cols: exactly freq_cols
    // bins each, found by stepping (row, column) and the output address,
    // not by dividing the flat index by freq_cols and multiplying it by the
    // bin stride at every step.
    const int g = linear % pairs;
    const float2* zg = shared + g * stride;
    const tile_pair at = pair_of[g];
    const float2 back = balancing ? back_of[g] : float2{1.0f, 1.0f};
    const std::int64_t step = std::int64_t(T) * bin_stride;
    // One loop per way of storing (not a branch per bin), so that the
    // compiler can issue several bins' shared-memory loads before their stores.
    auto split_and_store = [&](auto store) {
        int r = linear / pairs / freq_cols, s = linear / pairs % freq_cols;
        float2* out = spectrum + std::int64_t(linear / pairs) * bin_stride + at.first;
#pragma unroll 4
        for (int j = 0; j < freq_cols; ++j) {
            const float2 zk = zg[r * pitch + s];
            const float2 zm = zg[((T - r) & (T - 1)) * pitch + ((T - s) & (T - 1))];  // Z[-k]: T is a power of two
            const float2 a{0.5f * back.x * (zk.x + zm.x), 0.5f * back.x * (zk.y - zm.y)};
            const float2 b{0.5f * back.y * (zk.y + zm.y), -0.5f * back.y * (zk.x - zm.x)};
            store(out, a, b);
            out += step;
            // The next bin, T on: T = freq_cols + T/2 - 1.
            s += T / 2 - 1;
            r += 1;
            if (s >= freq_cols) {
                s -= freq_cols;
                r += 1;
            }
        }
    };
    if (at.has_first && at.has_second && at.second_offset == 1) {
        split_and_store([](float2* out, float2 a, float2 b) {
            *reinterpret_cast<float4*>(out) = float4{a.x, a.y, b.x, b.y};
        });
    } else {
        split_and_store([&](float2* out, float2 a, float2 b) {
            if (at.has_first) out[0] = a;
            if (at.has_second) out[at.second_offset] = b;
        });
    }
}

// spectrum[bin * bin_stride + n] -> the valid outputs of real tile n
// (sink.outputs.high x sink.outputs.wide, clipped), written into y, for tiles
// n in [first_tile, tile_count) (first_tile even), from pair `first_pair` of
// that range on. Pair (n, n + 1)'s partners are scaled by scales.of(n)
// before the shared transform and back after it (pair_scale): for outputs a
// user treats as independent (a filter gradient's input channels).
template <class Geometry, class PairScales = no_pair_scales, class Element = float>
__global__ void __launch_bounds__(tile_family_of(Geometry::static_extents.tile_extent).threads())
    inverse_tiles(const float2* __restrict__ spectrum, std::int64_t first_tile, std::int64_t tile_count,
                  std::int64_t first_pair, std::int64_t bin_stride, output_tiles<Geometry, Element> sink,
                  PairScales scales) {
    constexpr int T = Geometry::static_extents.tile_extent;
    constexpr int pitch = T + 1, pairs = tile_family_of(T).pairs, threads = tile_family_of(T).threads(), freq_cols = T / 2 + 1;
    constexpr int stride = tile_family_of(T).tile_stride();
    extern __shared__ float2 shared[];
    const int lane = threadIdx.x, group = threadIdx.y;
    const int linear = group * T + lane, g = linear % pairs;
    const std::int64_t block_first = first_tile + 2 * (first_pair + std::int64_t(blockIdx.x) * pairs);

    // Z = A + i B over the full T x T grid; columns past T/2 by Hermitian
    // symmetry. Thread `linear` loads pair g = linear % pairs at bins
    // linear / pairs + T j, j < freq_cols (forward_tiles' stores in
    // reverse), `chunk` loads in flight before any is used: the fewest
    // rounds of at most 12 (each waits out a memory latency), split evenly
    // (33 bins: 3 of 11, not 5 of at most 8).
    constexpr int rounds = (freq_cols + 11) / 12, chunk = (freq_cols + rounds - 1) / rounds;
    const std::int64_t n = block_first + 2 * g;
    const bool both = n + 1 < tile_count, first_only = !both && n < tile_count;
    const float2* in = spectrum + std::int64_t(linear / pairs) * bin_stride + n;
    const std::int64_t step = std::int64_t(T) * bin_stride;
    float2* zg = shared + g * stride;
    const float2 into = scales.of(n).in;  // pair g's: A and B are scaled before they are combined
    int r = linear / pairs / freq_cols, s = linear / pairs % freq_cols;
#pragma unroll 1
    for (int j0 = 0; j0 < freq_cols; j0 += chunk) {
        float4 loaded[chunk];
#pragma unroll
        for (int u = 0; u < chunk; ++u) {
            loaded[u] = float4{0, 0, 0, 0};
            if (j0 + u < freq_cols) {
                if (both) {
                    loaded[u] = *reinterpret_cast<const float4*>(in);
                } else if (first_only) {
                    const float2 a = in[0];
                    loaded[u] = float4{a.x, a.y, 0, 0};
                }
            }
            in += step;
        }
#pragma unroll
        for (int u = 0; u < chunk; ++u) {
            if (j0 + u >= freq_cols) break;
            const float2 a{into.x * loaded[u].x, into.x * loaded[u].y};
            const float2 b{into.y * loaded[u].z, into.y * loaded[u].w};
            // conj(Z), Z = A + i B: the inverse runs as a forward FFT of the
            // conjugate, IFFT(Z) = conj(FFT(conj(Z))).
            zg[r * pitch + s] = float2{a.x - b.y, -a.y - b.x};
            if (s > 0 && s < T / 2) zg[((T - r) & (T - 1)) * pitch + (T - s)] = float2{a.x + b.y, a.y - b.x};
            // The next bin, T on: T = freq_cols + T/2 - 1.
            s += T / 2 - 1;
            r += 1;
            if (s >= freq_cols) {
                s -= freq_cols;
                r += 1;
            }
        }
    }
    __syncthreads();

    // Rows (all of them), then only the first outputs.wide columns, whose
    // first outputs.high rows are the outputs, straight to y: two transposing passes over one
    // FFT body; the result is conj(a + i b), its imaginary part negated on
    // the way out.
    float2* z = shared + group * stride;
    const std::int64_t n0 = block_first + 2 * group;
    const pair_scale factors = scales.of(n0);
#pragma unroll pass_unroll(T, 2)
    for (int pass = 0; pass < 2; ++pass) {
        float2 v[T];
        read_row<T>(z, lane, v);
        tile_sync<T>(group);  // every row is in registers before the columns overwrite them
        if (pass == 0 || lane < sink.outputs.wide) fft_in_registers<T, false>(v);
        if (pass == 1) {
            store_output_column<T>(v, lane, sink.y, output_pair_at(sink, n0, tile_count),
                                   float2{factors.out.x, -factors.out.y});
            break;
        }
        write_column<T>(z, lane, v);
        tile_sync<T>(group);
    }
}

// A grid's x extent stays far below the hardware's 2^31 - 1; larger spectra
// take several launches.
inline constexpr std::int64_t max_fused_blocks = std::int64_t{1} << 30;

template <class Geometry, class Source>
void launch_forward_tiles(const Source& source, std::int64_t tile_count, std::int64_t bin_stride, float2* spectrum,
                          cudaStream_t stream) {
    constexpr tile_family family = tile_family_of(Geometry::static_extents.tile_extent);
    const auto kernel = forward_tiles<Geometry, Source>;
    allow_shared_bytes(kernel, family.shared_bytes());
    const std::int64_t pairs = pair_count(source, tile_count);
    for (std::int64_t first = 0; first < pairs; first += max_fused_blocks * family.pairs) {
        const auto blocks = unsigned(std::min(max_fused_blocks, ceil_div(pairs - first, family.pairs)));
        launch(kernel, blocks, dim3(family.tile_extent, family.pairs), family.shared_bytes(), stream, source,
               tile_count, first, bin_stride, spectrum);
    }
}

template <class Geometry, class PairScales = no_pair_scales, class Element = float>
void launch_inverse_tiles(const float2* spectrum, std::int64_t first_tile, std::int64_t tile_count,
                          std::int64_t bin_stride, const output_tiles<Geometry, Element>& sink, cudaStream_t stream,
                          const PairScales& scales = {}) {
    constexpr tile_family family = tile_family_of(Geometry::static_extents.tile_extent);
    const auto kernel = inverse_tiles<Geometry, PairScales, Element>;
    allow_shared_bytes(kernel, family.shared_bytes());
    const std::int64_t pair_count = (tile_count - first_tile + 1) / 2;
    for (std::int64_t first = 0; first < pair_count; first += max_fused_blocks * family.pairs) {
        const auto blocks = unsigned(std::min(max_fused_blocks, ceil_div(pair_count - first, family.pairs)));
        launch(kernel, blocks, dim3(family.tile_extent, family.pairs), family.shared_bytes(), stream, spectrum,
               first_tile, tile_count, first, bin_stride, sink, scales);
    }
}

}  // namespace fftconv::detail
