// bench/options.hpp — fftconv-bench's command line (CLI11): every option,
// its range, and the checks that run before the GPU is touched.
#pragma once

#include <string>
#include <vector>

#include "fftconv/element_type.hpp"
#include "fftconv/problem.hpp"
#include "suites.hpp"

namespace fftconv::bench {

// One --shape: the problem, whether the call has a bias, and the text it was
// given as (error messages quote it).
struct shape_option {
    problem shape;
    bool bias = false;
    std::string text;
};

struct options {
    std::string suite = suite_leaderboard;  // --suite; "custom" when --shape is given
    std::vector<shape_option> shapes;  // --shape (excludes --suite); empty: the suite's
    std::vector<int> tile_sweep;  // non-empty: time fftconv at each forced tile extent (0: the dispatch's choice)
    int repetitions = 100;
    bool flush = true;
    bool reuse_filter = false;
    bool replay = true;  // fftconv's replay of repeated calls as CUDA graphs (--no-replay: off)
    bool cudnn = true;
    // For each shape on a compiled configuration, also time the generic path
    // forced to the same tile extent (row "fftconv-generic"): what the
    // compile-time specialisation gains. Off with --no-generic.
    bool compare_generic = true;
    // --element: the activations' type (x and y; dy and dx of the data
    // gradient). A half type adds the row "fftconv (cast passes)": the float
    // call between casts of x and y, what a caller without half I/O runs.
    element_type element = element_type::float32;
    std::string out_prefix = "fftconv-bench";
    std::string commit;  // parse_options: --commit, else the build's (version.hpp, 'unknown' outside git)
};

// The largest --reps: a million calls of the smallest shape already take
// minutes, and the samples are kept in memory and in the JSON.
inline constexpr int max_repetitions = 1'000'000;

// Exit status for a bad command line, a shape fftconv refuses, or an output
// path that cannot be written: nothing was run.
inline constexpr int usage_error = 2;

// Parses the command line. --help prints the options on stdout and exits 0;
// a malformed or out-of-range option prints what was wrong on stderr and
// exits with usage_error.
options parse_options(int argc, char** argv);

// The shapes to run: the --shape ones (role "custom", seeds 1000, 1001, ...)
// or the suite's.
std::vector<run_shape> shapes_to_run(const options& o);

// Validates every shape (fftconv::validate) and checks that PREFIX.json,
// .md and .svg can be written, before any GPU work; on failure prints what
// was wrong on stderr and exits with usage_error.
void check_before_running(const options& o);

}  // namespace fftconv::bench
