// bench/test_report.cpp — writes the bench's JSON, Markdown and SVG for
// made-up results whose texts carry quotes, markup, a pipe and control
// characters (as a --commit value may), for check_report.py to parse: a
// dense square shape and a depthwise one (rectangular kernel, padding, bias).
// Then the same as a run with --element bfloat16 (PREFIX-bfloat16.*): an
// "fftconv (cast passes)" row, a float32 cuDNN row beside bfloat16 ones.
// Needs no GPU. Usage: test_report PREFIX
#include <cstdio>

#include "report.hpp"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: test_report PREFIX\n");
        return 2;
    }
    using namespace fftconv::bench;
    run_info info;
    info.gpu = "GPU <\"quoted\"> & co";
    info.commit = "abc\"def'<g>|`h\n\x01\t\xff";  // quotes, markup, pipe, backtick, newline, control, invalid UTF-8
    info.date = "2026-01-01T00:00:00Z";
    info.suite = "custom";
    info.repetitions = 3;
    algorithm_result fftconv_result;
    fftconv_result.name = "fftconv";
    fftconv_result.detail = "compiled T=32";
    fftconv_result.ran = true;
    fftconv_result.time.samples_ms = {1.0f, 2.0f, 3.0f};
    fftconv_result.time.mean_ms = 2.0;
    fftconv_result.time.median_ms = 2.0;
    fftconv_result.time.min_ms = 1.0;
    algorithm_result generic = fftconv_result;  // the generic path forced to the compiled T
    generic.name = "fftconv-generic";
    generic.detail = "generic T=32 (forced)";
    generic.time.samples_ms = {3.0f, 4.0f, 5.0f};
    generic.time.mean_ms = 4.0;
    generic.time.median_ms = 4.0;
    generic.time.min_ms = 3.0;
    algorithm_result missing;
    missing.name = "cudnn";
    missing.detail = "not available: <built without cuDNN>";
    // A dense square shape as schema 1 knew them, and a depthwise one with a
    // rectangular kernel, unequal padding and a bias.
    shape_result shape{"custom", fftconv::problem{1, 2, 3, 16, 16, 5}, false, 7, {fftconv_result, generic, missing}};
    algorithm_result depthwise_result = fftconv_result;
    depthwise_result.detail = "generic T=16";
    shape_result depthwise{"custom",
                           fftconv::problem{.batch = 4, .in_channels = 8, .out_channels = 8, .height = 24,
                                            .width = 20, .kernel = {13, 3}, .padding = {6, 1}, .groups = 8},
                           true, 8, {depthwise_result, missing}};
    const std::vector<shape_result> shapes{shape, depthwise};
    const std::string prefix = argv[1];
    write_json(prefix + ".json", info, shapes);
    write_markdown(prefix + ".md", info, shapes);
    write_svg(prefix + ".svg", info, shapes);

    // A bfloat16 run: every fftconv row's output bfloat16, one cuDNN row's float32.
    run_info half_info = info;
    half_info.element = fftconv::element_type::bfloat16;
    std::vector<shape_result> half_shapes = shapes;
    for (auto& s : half_shapes)
        for (auto& a : s.algorithms) a.element = fftconv::element_type::bfloat16;
    algorithm_result casts = fftconv_result;
    casts.name = "fftconv (cast passes)";
    casts.detail = "compiled T=32 + 2 casts";
    casts.element = fftconv::element_type::bfloat16;
    casts.accuracy.relative_l2 = 1e-3;  // fails float32's bar, passes bfloat16's (2^-8)
    algorithm_result float_peer = fftconv_result;
    float_peer.name = "cudnn_fastest";
    float_peer.detail = "FFT";
    float_peer.element = fftconv::element_type::float32;
    float_peer.accuracy.relative_l2 = 1e-3;  // fails float32's bar
    half_shapes[0].algorithms.insert(half_shapes[0].algorithms.begin() + 1, casts);
    half_shapes[0].algorithms.push_back(float_peer);
    write_json(prefix + "-bfloat16.json", half_info, half_shapes);
    write_markdown(prefix + "-bfloat16.md", half_info, half_shapes);
    write_svg(prefix + "-bfloat16.svg", half_info, half_shapes);
    print_table(half_info, half_shapes);
    return 0;
}
