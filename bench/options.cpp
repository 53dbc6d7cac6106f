#include "options.hpp"

#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "fftconv/status.hpp"
#include "version.hpp"

namespace fftconv::bench {
namespace {

[[noreturn]] void fail(const std::string& message) {
    std::fprintf(stderr, "fftconv-bench: %s\nRun fftconv-bench --help for the options.\n", message.c_str());
    std::exit(usage_error);
}

const std::vector<std::string> element_names{"float32", "bfloat16", "float16"};

// The --shape syntax, for --help and error messages.
constexpr const char* shape_syntax = "B,Cin,Cout,H,W,K[,pad=P][,groups=G][,bias]";

// An integer, all of `item` (from_chars: no sign but '-', no spaces).
bool parse_integer(std::string_view item, std::int64_t& value) {
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), value);
    return !item.empty() && error == std::errc{} && end == item.data() + item.size();
}

// "N" -> {N, N}; "AxB" -> {A, B}.
bool parse_extent(std::string_view item, extent2d& value) {
    const std::size_t x = item.find('x');
    if (x == std::string_view::npos) {
        std::int64_t both = 0;
        if (!parse_integer(item, both)) return false;
        value = extent2d{both};
        return true;
    }
    return parse_integer(item.substr(0, x), value.height) && parse_integer(item.substr(x + 1), value.width);
}

std::vector<std::string_view> split(std::string_view text, char separator) {
    std::vector<std::string_view> items;
    for (;;) {
        const std::size_t at = text.find(separator);
        items.push_back(text.substr(0, at));
        if (at == std::string_view::npos) return items;
        text.remove_prefix(at + 1);
    }
}

// --shape: six sizes B,Cin,Cout,H,W,K (K an integer, K x K, or KHxKW), then
// options in any order, each at most once:
//   pad=P | pad=PHxPW | pad=same   zeros on each side (same: (K - 1) / 2 per axis)
//   groups=G | groups=dw           dw: groups = Cin (depthwise)
//   bias                           the call adds a bias
// Only the syntax is checked here; check_before_running validates the problem.
shape_option parse_shape(const std::string& text) {
    const std::vector<std::string_view> items = split(text, ',');
    const auto bad = [&](const std::string& why) {
        fail("--shape '" + text + "': " + why + " (expected " + shape_syntax + ")");
    };
    if (items.size() < 6) bad("fewer than six sizes");
    std::int64_t v[5];
    const char* names[] = {"B", "Cin", "Cout", "H", "W"};
    for (int i = 0; i < 5; ++i)
        if (!parse_integer(items[i], v[i]))
            bad(std::string(names[i]) + " = '" + std::string(items[i]) + "' is not an integer");
    extent2d kernel;
    if (!parse_extent(items[5], kernel))
        bad("K = '" + std::string(items[5]) + "' is neither an integer K nor KHxKW");
    shape_option s{problem{.batch = v[0], .in_channels = v[1], .out_channels = v[2], .height = v[3],
                           .width = v[4], .kernel = kernel},
                   false, text};
    bool seen_pad = false, seen_groups = false;
    for (std::size_t i = 6; i < items.size(); ++i) {
        const std::string_view item = items[i];
        const std::size_t eq = item.find('=');
        const std::string key(item.substr(0, eq));
        const std::string_view value = eq == std::string_view::npos ? std::string_view{} : item.substr(eq + 1);
        bool& seen = key == "pad" ? seen_pad : seen_groups;
        if (key == "pad" || key == "groups") {
            if (eq == std::string_view::npos) bad("'" + key + "' needs a value: " + key + "=...");
            if (seen) bad("'" + key + "' given twice");
            seen = true;
        }
        if (key == "pad") {
            if (value == "same") s.shape.padding = same_padding(kernel);
            else if (!parse_extent(value, s.shape.padding))
                bad("pad = '" + std::string(value) + "' is none of P, PHxPW, same");
        } else if (key == "groups") {
            if (value == "dw") s.shape.groups = s.shape.in_channels;
            else if (!parse_integer(value, s.shape.groups))
                bad("groups = '" + std::string(value) + "' is neither an integer nor dw");
        } else if (key == "bias") {
            if (eq != std::string_view::npos) bad("'bias' takes no value");
            if (s.bias) bad("'bias' given twice");
            s.bias = true;
        } else {
            std::int64_t ignored = 0;
            if (parse_integer(item, ignored)) bad("'" + std::string(item) + "': more than six sizes");
            bad("unknown option '" + std::string(item) + "' (options: pad=, groups=, bias)");
        }
    }
    return s;
}

void check_writable(const std::string& path) {
    namespace fs = std::filesystem;
    const fs::path file(path);
    const fs::path directory = file.has_parent_path() ? file.parent_path() : fs::path(".");
    std::error_code error;
    if (!fs::is_directory(directory, error))
        fail("--out: cannot write " + path + ": the directory " + directory.string() + " does not exist");
    if (fs::is_directory(file, error)) fail("--out: cannot write " + path + ": it is a directory");
    if (fs::exists(file, error) ? ::access(path.c_str(), W_OK) != 0 : ::access(directory.c_str(), W_OK) != 0)
        fail("--out: cannot write " + path + ": permission denied");
}

}  // namespace

options parse_options(int argc, char** argv) {
    options o;
    o.commit = build_commit;
    CLI::App app{
        "fftconv-bench: fftconv on a suite of shapes (or --shape ones), the whole conv2d operator "
        "(padding, groups, bias where the shape has them), checked against a float64 direct "
        "convolution and timed against cuDNN's strict-FP32 algorithms. Writes PREFIX.json, "
        "PREFIX.md and PREFIX.svg.",
        "fftconv-bench"};
    std::vector<std::string> shapes;
    CLI::Option* suite =
        app.add_option("--suite", o.suite,
                       "The shapes to run: leaderboard (the 10 leaderboard shapes: dense, square, unpadded, no "
                       "bias) or depthwise (7 depthwise 'same' convolutions with a bias: B,C,H=W,K = "
                       "64,128,56,31 64,256,28,29 64,512,14,27 64,1024,7,13 32,128,56,51 32,256,28,49 "
                       "8,64,256,31; Cout = groups = C, padding K/2) or backward (the data and filter "
                       "gradients of B,C,H=W,K = 4,64,128,8 4,64,128,16 2,128,256,16 1,128,256,32 and depthwise "
                       "'same' 64,128,56,31 8,64,256,31, against cuDNN's backward data and filter algorithms)")
            ->check(CLI::IsMember(suite_names))
            ->type_name("NAME")
            ->capture_default_str();
    app.add_option("--shape", shapes,
                   "A custom shape instead of a suite (repeatable). Six sizes: batch, in and out channels, "
                   "height, width, kernel (K for K x K, or KHxKW, e.g. 13x3); then, in any order: pad=P "
                   "(P zeros on each side), pad=PHxPW (rows above and below, columns left and right), "
                   "pad=same ((K-1)/2 on each axis), groups=G or groups=dw (G = Cin), bias. "
                   "E.g. 64,128,128,56,56,31,pad=same,groups=dw,bias")
        ->type_name(shape_syntax)
        ->excludes(suite);
    app.add_option("--reps", o.repetitions, "Timed calls per algorithm and shape")
        ->check(CLI::Range(1, max_repetitions))
        ->capture_default_str();
    bool no_flush = false, no_cudnn = false, no_generic = false;
    app.add_flag("--no-flush", no_flush, "Do not flush L2 before each timed call");
    app.add_flag("--reuse-filter", o.reuse_filter, "Transform the filter once and reuse it (inference)");
    bool no_replay = false;
    app.add_flag("--no-replay", no_replay,
                 "Launch every kernel of every call: no replay of repeated forward calls as CUDA graphs "
                 "(context::replay_repeated_calls(false); the eager host path)");
    app.add_flag("--no-cudnn", no_cudnn, "Skip the cuDNN peers");
    app.add_flag("--no-generic", no_generic,
                 "Skip the generic-path comparison (by default every shape on a compiled configuration is "
                 "also timed on the generic path forced to the same tile extent: row fftconv-generic)");
    app.add_option("--tiles", o.tile_sweep,
                   "Sweep: fftconv on the generic path with each forced tile extent (T >= KH and KW; others "
                   "skipped); 0 adds the dispatch's own choice (row fftconv: e.g. the direct depthwise path) to "
                   "compare with them in one run")
        ->delimiter(',')
        ->check(CLI::Range(0, 1 << 16))
        ->type_name("T1,T2,...");
    std::string element = to_string(element_type::float32);
    app.add_option("--element", element,
                   "The activations' type: float32, bfloat16 or float16 (x and y; dy and dx of the data "
                   "gradient; filters, biases and the filter gradient stay float32). With a half type fftconv "
                   "reads and writes it directly (computing in FP32), is checked against the float64 oracle on "
                   "the widened inputs at the bar of one rounding (relative L2 <= 2^-8 bfloat16, 2^-10 float16), "
                   "and is also timed with casts around a float call (row 'fftconv (cast passes)'); cuDNN's "
                   "forward peers take tensors of that type (w and bias rounded too) with FP32 compute, its "
                   "gradient peers stay float32")
        ->check(CLI::IsMember(element_names))
        ->type_name("TYPE")
        ->capture_default_str();
    app.add_option("--out", o.out_prefix, "Output prefix: writes PREFIX.json, PREFIX.md, PREFIX.svg")
        ->type_name("PREFIX")
        ->capture_default_str();
    app.add_option("--commit", o.commit, "The commit to record (default: the build's, from git when it was built)")
        ->type_name("HASH")
        ->capture_default_str();
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        std::fputs(app.help().c_str(), stdout);
        std::exit(0);
    } catch (const CLI::ParseError& e) {
        fail(e.what());
    }
    for (const element_type e : {element_type::float32, element_type::bfloat16, element_type::float16})
        if (element == to_string(e)) o.element = e;
    o.flush = !no_flush;
    o.replay = !no_replay;
    o.cudnn = !no_cudnn;
    o.compare_generic = !no_generic;
    for (const std::string& s : shapes) o.shapes.push_back(parse_shape(s));
    if (!o.shapes.empty()) o.suite = "custom";
    return o;
}

std::vector<run_shape> shapes_to_run(const options& o) {
    if (o.shapes.empty()) return suite_shapes(o.suite);
    std::vector<run_shape> shapes;
    for (std::size_t i = 0; i < o.shapes.size(); ++i)
        shapes.push_back({"custom", o.shapes[i].shape, o.shapes[i].bias, 1000 + i});
    return shapes;
}

void check_before_running(const options& o) {
    for (const shape_option& s : o.shapes) {
        try {
            validate(s.shape);
        } catch (const error& e) {
            fail("--shape '" + s.text + "': " + e.what());
        }
    }
    if (o.shapes.empty())
        for (const run_shape& s : suite_shapes(o.suite)) {  // valid by construction; this keeps them so
            try {
                validate(s.shape);
            } catch (const error& e) {
                fail("--suite " + o.suite + ": " + to_string(s.shape) + ": " + e.what());
            }
        }
    for (const char* suffix : {".json", ".md", ".svg"}) check_writable(o.out_prefix + suffix);
}

}  // namespace fftconv::bench
