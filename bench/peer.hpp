// bench/peer.hpp — a measured run of one algorithm on one shape: fftconv
// itself, or a peer (cuDNN) in the same process on the same inputs.
#pragma once

#include <string>

#include "fftconv/element_type.hpp"
#include "reference.hpp"
#include "timing.hpp"

namespace fftconv::bench {

struct algorithm_result {
    std::string name;        // "fftconv", "fftconv-generic", "cudnn_deterministic", "cudnn_fastest";
                             // "fftconv_T<T>" in a --tiles sweep; "fftconv (cast passes)" with --element
                             // bfloat16 or float16
    std::string detail;      // tile extent, cuDNN algorithm name, ...
    bool ran = false;        // false: not available (why in `detail`)
    timing time;
    reference::accuracy accuracy;
    std::size_t workspace_bytes = 0;
    std::size_t peak_bytes = 0;  // device memory the algorithm held beyond the inputs and output
    // The element type of its output (and activation inputs), which sets its
    // accuracy bar (report.hpp: passes).
    element_type element = element_type::float32;
};

}  // namespace fftconv::bench
