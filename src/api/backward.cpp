// src/api/backward.cpp — the gradients of conv2d (context::conv2d_backward_data,
// context::conv2d_backward_filter). The data gradient is the forward FFT
// pipeline on dy with the flipped filter, so every path, table entry and
// accuracy property of the forward serves it too; the filter gradient sums
// products of spectra of x's windows and dy's blocks on fused tiles (or, for
// kernels over 40, runs the forward pipeline on rearranged operands).
//
// Data gradient. y[i] = sum_u xpad[i + u] w[u] (xpad: x with P zeros each
// side) gives dx[j] = sum_u' dypad[j + u'] w[K - 1 - u'], dypad being dy with
// K - 1 - P zeros each side: a forward convolution of dy (Cout channels in,
// Cin out, same groups) with the flipped filter, transposed within each
// group. Where P > K - 1 the "padding" is negative: dy is cropped by
// P - K + 1 each side (those outputs saw only padding and feed no input).
//
// Filter gradient. dw[o][c][u] = sum_b sum_i dy[b][o][i] xpad[b][c][i + u]:
// cut the outputs i into blocks; then it is a forward convolution whose
// samples are the group's input channels c, whose channels are (group,
// sample b, block), each the block's window of xpad, and whose filters are
// dy's blocks (one kernel per output channel, sample and block), with the
// problem's groups; its K x K outputs are dw, transposed. That general form
// serves kernels over 40; up to 40 the blocks fit the fused 64-point tile and
// two faster paths take it without rearranged copies:
// depthwise_filter_gradient.hpp (one input channel per group: a plain sum,
// no GEMM) and filter_gradient_gemm.hpp (a GEMM per bin over the blocks).
// The bias gradient is dy summed over samples and positions (in double).
#include <algorithm>
#include <limits>
#include <string>

#include "backward/depthwise_filter_gradient.hpp"
#include "backward/filter_gradient_gemm.hpp"
#include "backward/gradient_operands.hpp"
#include "backward/gradient_passes.hpp"
#include "dispatch/forward.hpp"
#include "dispatch/router.hpp"
#include "fftconv/context.hpp"
#include "fftconv/detail/pipeline/spectral_product.hpp"
#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/detail/runtime/engine.hpp"
#include "fftconv/detail/runtime/pointer_check.hpp"
#include "fftconv/detail/tiling/workspace_layout.hpp"

namespace fftconv {

namespace {

using detail::filter_path;

// Byte offsets of consecutive float arrays of the given lengths in one buffer.
struct scratch_layout {
    std::size_t offsets[3] = {};
    std::size_t bytes = 0;
    explicit scratch_layout(std::initializer_list<std::int64_t> lengths) {
        int i = 0;
        for (const std::int64_t n : lengths) {
            offsets[i++] = bytes;
            bytes += detail::align_up(sizeof(float) * std::size_t(n));
        }
    }
    float* at(void* base, int i) const { return reinterpret_cast<float*>(static_cast<char*>(base) + offsets[i]); }
};

bool crops(const problem& p) {
    return detail::gradient_crop(p.padding.height, p.kernel.height) > 0 ||
           detail::gradient_crop(p.padding.width, p.kernel.width) > 0;
}

// The flipped filter, and the cropped dy where there is one (counted as
// floats whatever dy's element type: a half one takes half its room).
scratch_layout data_scratch(const problem& p) {
    const problem q = detail::data_gradient_problem(p);
    return scratch_layout{q.filter_elements(), crops(p) ? q.input_elements() : 0};
}

scratch_layout filter_scratch(const problem& p) {
    const problem q = detail::filter_gradient_problem(p);
    return scratch_layout{q.input_elements(), q.filter_elements(), q.output_elements()};
}

// The bytes the fused gradient paths may give one intermediate: a GiB, or
// half the context's workspace limit where that is less (the rest is the
// workspace's).
std::int64_t gradient_budget(const detail::engine& e) {
    return std::int64_t(std::min<std::size_t>(detail::default_gradient_budget, e.workspace_limit / 2));
}

std::size_t filter_scratch_bytes(filter_path path, const problem& p, std::int64_t budget) {
    switch (path) {
        case filter_path::depthwise: return detail::depthwise_filter_gradient_scratch(p, budget);
        case filter_path::gemm: return detail::filter_gradient_gemm_scratch(p, budget);
        case filter_path::general: break;
    }
    return filter_scratch(p).bytes;
}

// The gradient buffer counts against the workspace limit: refused before
// anything is enqueued when it alone passes the limit.
void require_scratch_within_limit(const detail::engine& e, std::size_t bytes, const char* call, const problem& p) {
    if (bytes > e.workspace_limit)
        throw error(status::out_of_memory,
                    std::string("fftconv: ") + call + " of problem " + to_string(p) + " needs " +
                        std::to_string(bytes) + " bytes of gradient buffer beside the workspace, more than the "
                        "context's workspace limit of " + std::to_string(e.workspace_limit) + " bytes");
}

// While a gradient's inner convolution runs: the workspace limit less the
// gradient buffer, so that the two together stay within the caller's limit.
class limit_beside_scratch {
public:
    limit_beside_scratch(detail::engine& e, std::size_t scratch) : e_(e), saved_(e.workspace_limit) {
        if (saved_ != std::numeric_limits<std::size_t>::max()) e_.workspace_limit = saved_ - std::min(saved_, scratch);
    }
    ~limit_beside_scratch() { e_.workspace_limit = saved_; }
    limit_beside_scratch(const limit_beside_scratch&) = delete;
    limit_beside_scratch& operator=(const limit_beside_scratch&) = delete;

private:
    detail::engine& e_;
    std::size_t saved_;
};

// The route of a gradient's inner convolution q (`find` asks the router),
// validated and its passes scheduled before anything is enqueued; a refusal
// names the caller's problem and call, and how the gradient runs (as q),
// keeping the inner refusal's status and words.
template <class FindRoute>
detail::route inner_route(detail::engine& e, FindRoute&& find, const char* call, const problem& p, const problem& q) {
    try {
        const detail::route r = find();
        (void)detail::forward_workspace(e, r, q, detail::filter_calls::given);
        return r;
    } catch (const error& inner) {
        throw error(inner.code(), std::string("fftconv: ") + call + " of problem " + to_string(p) +
                                      " cannot run: it is computed as the convolution " + to_string(q) +
                                      ", which is refused: " + inner.what());
    }
}

void require_gradient_operand(const void* pointer, std::size_t element_bytes, std::int64_t elements, int device,
                              const char* name) {
    if (pointer == nullptr) detail::throw_invalid(std::string("fftconv: ") + name + " is a null pointer");
    detail::require_device_memory(pointer, element_bytes * std::size_t(elements), element_bytes, device, name);
}
void require_gradient_operand(const float* pointer, std::int64_t elements, int device, const char* name) {
    require_gradient_operand(pointer, sizeof(float), elements, device, name);
}

}  // namespace

void context::conv2d_backward_data(const problem& p, detail::activations io, const float* w) {
    detail::engine& e = *engine_;
    e.begin_call();
    validate(p);
    const void* dy = io.in;
    void* dx = io.out;
    const std::size_t element = element_bytes(io.type);
    require_gradient_operand(dy, element, p.output_elements(), e.device(), "dy");
    require_gradient_operand(w, p.filter_elements(), e.device(), "w");
    require_gradient_operand(dx, element, p.input_elements(), e.device(), "dx");
    const std::size_t dx_bytes = element * std::size_t(p.input_elements());
    detail::require_disjoint(dx, dx_bytes, "dx", dy, element * std::size_t(p.output_elements()), "dy");
    detail::require_disjoint(dx, dx_bytes, "dx", w, sizeof(float) * std::size_t(p.filter_elements()), "w");
    const problem q = detail::data_gradient_problem(p);
    const scratch_layout layout = data_scratch(p);
    require_scratch_within_limit(e, layout.bytes, "conv2d_backward_data", p);
    const limit_beside_scratch limit(e, layout.bytes);
    const detail::route route =
        inner_route(e, [&] { return router_->data_gradient(p); }, "conv2d_backward_data", p, q);
    void* scratch = e.scratch(layout.bytes);
    float* flipped = layout.at(scratch, 0);
    const detail::flipped_filter flip{p.group_in_channels(), p.group_out_channels(), p.kernel.height, p.kernel.width};
    detail::rearrange(w, flipped, flip, q.filter_elements(), e.stream());
    detail::activations inner = io;
    if (crops(p)) {
        void* cropped = layout.at(scratch, 1);
        detail::with_element(io.type, [&](auto element_tag) {
            using E = typename decltype(element_tag)::type;
            detail::rearrange(static_cast<const E*>(dy), static_cast<E*>(cropped), detail::cropped_gradient(p),
                              q.input_elements(), e.stream());
        });
        inner.in = cropped;
    }
    detail::run_forward(e, route, q, inner, detail::filter_input{flipped, {}}, nullptr);
}

void context::conv2d_backward_filter(const problem& p, const float* x, const float* dy, float* dw, float* dbias) {
    detail::engine& e = *engine_;
    e.begin_call();
    validate(p);
    require_gradient_operand(x, p.input_elements(), e.device(), "x");
    require_gradient_operand(dy, p.output_elements(), e.device(), "dy");
    require_gradient_operand(dw, p.filter_elements(), e.device(), "dw");
    if (dbias != nullptr)
        detail::require_device_memory(dbias, sizeof(float) * std::size_t(p.out_channels), sizeof(float), e.device(),
                                      "dbias");
    const std::size_t x_bytes = sizeof(float) * std::size_t(p.input_elements()),
                      dy_bytes = sizeof(float) * std::size_t(p.output_elements()),
                      dw_bytes = sizeof(float) * std::size_t(p.filter_elements()),
                      dbias_bytes = sizeof(float) * std::size_t(p.out_channels);
    detail::require_disjoint(dw, dw_bytes, "dw", x, x_bytes, "x");
    detail::require_disjoint(dw, dw_bytes, "dw", dy, dy_bytes, "dy");
    detail::require_disjoint(dbias, dbias_bytes, "dbias", x, x_bytes, "x");
    detail::require_disjoint(dbias, dbias_bytes, "dbias", dy, dy_bytes, "dy");
    detail::require_disjoint(dbias, dbias_bytes, "dbias", dw, dw_bytes, "dw");
    const std::int64_t budget = gradient_budget(e);
    const filter_path path = router_->filter_gradient(p, budget);
    const std::size_t scratch_bytes = filter_scratch_bytes(path, p, budget);
    require_scratch_within_limit(e, scratch_bytes, "conv2d_backward_filter", p);
    if (path == filter_path::depthwise) {
        detail::depthwise_filter_gradient(e, p, x, dy, dw, e.scratch(scratch_bytes), budget);
    } else if (path == filter_path::gemm) {
        detail::filter_gradient_gemm(e, p, x, dy, dw, e.scratch(scratch_bytes), budget);
        if (detail::has_unseen_taps(p)) detail::zero_unseen_taps(dw, p, e.stream());
    } else {
        const problem q = detail::filter_gradient_problem(p);
        const scratch_layout layout = filter_scratch(p);
        const limit_beside_scratch limit(e, layout.bytes);
        const detail::route route =
            inner_route(e, [&] { return router_->general_filter_gradient(p); }, "conv2d_backward_filter", p, q);
        void* scratch = e.scratch(layout.bytes);
        float* windows = layout.at(scratch, 0);  // x's windows: [Cg][G][B][blocks][rows][cols]
        float* blocks = layout.at(scratch, 1);   // dy's blocks: [Cout][B][blocks][rows][cols]
        float* result = layout.at(scratch, 2);   // dw, transposed: [Cg][Cout][Kh][Kw]
        detail::rearrange(x, windows, detail::filter_gradient_windows(p), q.input_elements(), e.stream());
        detail::rearrange(dy, blocks, detail::filter_gradient_blocks(p), q.filter_elements(), e.stream());
        detail::run_forward(e, route, q, detail::activations_of<float>(windows, result), detail::filter_input{blocks, {}},
                            nullptr);
        detail::rearrange(result, dw, detail::filter_gradient_transpose(p), p.filter_elements(), e.stream());
    }
    if (dbias != nullptr) detail::sum_bias_gradient(dy, dbias, p, e.stream());
}

void context::reserve_backward(const problem& p) {
    detail::engine& e = *engine_;
    e.begin_call();
    validate(p);
    const std::int64_t budget = gradient_budget(e);
    const filter_path path = router_->filter_gradient(p, budget);
    const std::size_t data_bytes = data_scratch(p).bytes, filter_bytes = filter_scratch_bytes(path, p, budget);
    require_scratch_within_limit(e, data_bytes, "reserve_backward (the data gradient)", p);
    require_scratch_within_limit(e, filter_bytes, "reserve_backward (the filter gradient)", p);
    detail::route data_route{}, filter_route{};
    {
        const limit_beside_scratch limit(e, data_bytes);
        data_route = inner_route(e, [&] { return router_->data_gradient(p); }, "reserve_backward (the data gradient)",
                                 p, detail::data_gradient_problem(p));
    }
    const bool general = path == filter_path::general;
    if (general) {
        const limit_beside_scratch limit(e, filter_bytes);
        filter_route = inner_route(e, [&] { return router_->general_filter_gradient(p); },
                                   "reserve_backward (the filter gradient)", p, detail::filter_gradient_problem(p));
    }
    (void)e.scratch(std::max(data_bytes, filter_bytes));
    {
        const limit_beside_scratch limit(e, data_bytes);
        detail::reserve_forward(e, data_route, detail::data_gradient_problem(p),
                                detail::filter_calls::given);
    }
    if (general) {
        const limit_beside_scratch limit(e, filter_bytes);
        detail::reserve_forward(e, filter_route, detail::filter_gradient_problem(p),
                                detail::filter_calls::given);
    }
}

}  // namespace fftconv
