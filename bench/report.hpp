// bench/report.hpp — the bench's results and the four ways it shows them:
// a table on stdout, JSON (every figure), Markdown, and an SVG chart.
//
// JSON schema (schema_version 4; version 1 had no such key): top level
// tool, schema_version, fftconv_version (the loaded library's
// fftconv_version_string(), meson.build's project version), suite, gpu,
// driver, ..., shapes, summary. Each shape:
// role, batch, in_channels, out_channels, height, width,
// kernel_height, kernel_width, padding_height, padding_width, groups, bias
// (true/false), pass ("forward", "data_gradient" or "filter_gradient"; new
// in version 3), seed, algorithms; and kernel_extent (version 1's key) for
// square kernels only: a reader that needs it fails loudly on a rectangular
// kernel instead of reading half of it. Each algorithm that ran:
// mean_ms, median_ms, min_ms, host_us_per_call (new in version 4: the host
// time of a back-to-back call, timing.hpp), accuracy, memory, samples_ms.
//
// A run with --element bfloat16 or float16 adds (a float32 run writes
// exactly the keys above, so an absent "element" means float32): top-level
// "element", accuracy_bar's "max_relative_l2_<element>" and
// "elementwise_<element>", and an "element" in every algorithm (its output's
// type: a cuDNN peer's may be float32).
#pragma once

#include <string>
#include <vector>

#include "fftconv/element_type.hpp"
#include "fftconv/problem.hpp"
#include "peer.hpp"

namespace fftconv::bench {

// What a run times on a shape: the convolution, or one of its gradients
// (dx from dy and w, dw from x and dy).
enum class pass { forward, data_gradient, filter_gradient };
const char* to_string(pass g) noexcept;

struct shape_result {
    std::string role;  // "benchmark", "test" or "custom"
    problem shape;     // kernel, padding and groups included
    bool bias = false;  // every algorithm's call added a bias (and the oracle did)
    std::uint64_t seed = 0;
    std::vector<algorithm_result> algorithms;  // fftconv first, then fftconv-generic, then peers
    bench::pass pass = bench::pass::forward;
};

// Whether a result meets the accuracy bar of its shape's pass (the filter
// gradient's relative L2 bar is reference::max_filter_gradient_l2) and of its
// output's element type (relative_l2_bar).
bool passes(const shape_result& s, const algorithm_result& a);

// The bars of an output of element type `e`. float32: the project's
// (reference.hpp). A half type's output is the FP32 result rounded once, so
// its bar is that rounding's: relative L2 <= 2^-8 (bfloat16) or 2^-10
// (float16), and every element within unit_roundoff(e) * 1.01 * |exact| more
// than the float bar (1e-3 + 1e-3 |exact|), with unit_roundoff 2^-8
// (bfloat16) or 2^-11 (float16): half an ulp, relative.
double relative_l2_bar(pass g, element_type e);
double unit_roundoff(element_type e);  // 0 for float32

// reference::compare with the elementwise bound of `e` (float32: exactly reference::compare).
reference::accuracy compare_output(const std::vector<float>& y, const std::vector<double>& exact, element_type e);

struct run_info {
    std::string suite;  // "leaderboard", "depthwise" (--suite) or "custom" (--shape)
    std::string gpu, driver, cuda_runtime, cufft, cublas, cudnn, commit, date;
    int repetitions = 0;
    bool l2_flush = true;
    bool reuse_filter = false;
    bool replay = true;
    std::size_t l2_flush_bytes = 0;
    element_type element = element_type::float32;  // --element: the activations' type
};

// Totals over the shapes whose role is "benchmark" (all shapes if none is).
struct summary_row {
    std::string name;
    int shapes = 0;
    double total_mean_ms = 0;
    double geomean_mean_ms = 0;
};
std::vector<summary_row> summarize(const std::vector<shape_result>& shapes);

void print_table(const run_info& info, const std::vector<shape_result>& shapes);
void write_json(const std::string& path, const run_info& info, const std::vector<shape_result>& shapes);
void write_markdown(const std::string& path, const run_info& info, const std::vector<shape_result>& shapes);
void write_svg(const std::string& path, const run_info& info, const std::vector<shape_result>& shapes);

}  // namespace fftconv::bench
