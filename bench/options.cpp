#include "options.hpp"

#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include <CLI/CLI.hpp>

#include "fftconv/status.hpp"
#include "version.hpp"

namespace fftconv::bench {
namespace {

[[noreturn]] void fail(const std::string& message) {
    std::fprintf(stderr, "fftconv-bench: %s\nRun fftconv-bench --help for the options.\n", message.c_str());
    std::exit(usage_error);
}

// "B,Cin,Cout,H,W,K" -> problem; every field an integer, nothing else.
problem parse_shape(const std::string& text) {
    std::int64_t v[6];
    std::string_view rest = text;
    for (int i = 0; i < 6; ++i) {
        const std::size_t comma = rest.find(',');
        const std::string_view item = rest.substr(0, comma);
        const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), v[i]);
        if (item.empty() || error != std::errc{} || end != item.data() + item.size())
            fail("--shape '" + text + "': '" + std::string(item) +
                 "' is not an integer (expected B,Cin,Cout,H,W,K: six integers)");
        if ((comma == std::string_view::npos) != (i == 5))
            fail("--shape '" + text + "': expected six comma-separated integers B,Cin,Cout,H,W,K");
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
    return problem{v[0], v[1], v[2], v[3], v[4], v[5]};
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
        "fftconv-bench: fftconv on the 10 leaderboard shapes (or --shape ones), checked against a "
        "float64 direct convolution and timed against cuDNN's strict-FP32 algorithms. Writes "
        "PREFIX.json, PREFIX.md and PREFIX.svg.",
        "fftconv-bench"};
    std::vector<std::string> shapes;
    app.add_option("--shape", shapes,
                   "A custom shape B,Cin,Cout,H,W,K instead of the leaderboard (repeatable)")
        ->type_name("B,Cin,Cout,H,W,K");
    app.add_option("--reps", o.repetitions, "Timed calls per algorithm and shape")
        ->check(CLI::Range(1, max_repetitions))
        ->capture_default_str();
    bool no_flush = false, no_cudnn = false, no_generic = false;
    app.add_flag("--no-flush", no_flush, "Do not flush L2 before each timed call");
    app.add_flag("--reuse-filter", o.reuse_filter, "Transform the filter once and reuse it (inference)");
    app.add_flag("--no-cudnn", no_cudnn, "Skip the cuDNN peers");
    app.add_flag("--no-generic", no_generic,
                 "Skip the generic-path comparison (by default every shape on a compiled configuration is "
                 "also timed on the generic path forced to the same tile extent: row fftconv-generic)");
    app.add_option("--tiles", o.tile_sweep,
                   "Sweep: fftconv on the generic path with each forced tile extent (T >= K; others skipped)")
        ->delimiter(',')
        ->check(CLI::Range(1, 1 << 16))
        ->type_name("T1,T2,...");
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
    o.flush = !no_flush;
    o.cudnn = !no_cudnn;
    o.compare_generic = !no_generic;
    for (const std::string& s : shapes) o.shapes.push_back(parse_shape(s));
    return o;
}

void check_before_running(const options& o) {
    for (const problem& p : o.shapes) {
        try {
            validate(p);
        } catch (const error& e) {
            fail(std::string("--shape ") + std::to_string(p.batch) + "," + std::to_string(p.in_channels) + "," +
                 std::to_string(p.out_channels) + "," + std::to_string(p.height) + "," +
                 std::to_string(p.width) + "," + std::to_string(p.kernel.height) + ": " + e.what());
        }
    }
    for (const char* suffix : {".json", ".md", ".svg"}) check_writable(o.out_prefix + suffix);
}

}  // namespace fftconv::bench
