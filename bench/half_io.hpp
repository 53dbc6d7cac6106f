// bench/half_io.hpp — activations of --element's type on the device: the
// bench's float inputs rounded to it (the oracle then runs on their widened,
// exact values), outputs widened back for the accuracy check, and the two
// casts of the "fftconv (cast passes)" peer (what a caller without half I/O
// would run around a float call).
#pragma once

#include <cstdint>
#include <vector>

#include <cuda_runtime_api.h>

#include "fftconv/element_type.hpp"
#include "reference.hpp"

namespace fftconv::bench {

// Device memory for n activations of `type`.
reference::device_array<char> make_activations(element_type type, std::int64_t n);

// rounded[i] = x[i] rounded to nearest even in `type` (n elements), and x[i]
// then its widened value: the float input the half one stands for. A no-op
// for float32.
void round_in_place(element_type type, float* x, void* rounded, std::int64_t n, cudaStream_t stream);

// out[i] = in[i] widened to float (exact), and out[i] = in[i] rounded to
// nearest even: one elementwise kernel each, 16-byte loads and stores (in
// and out 16-byte aligned, as cudaMalloc's are). float32: a copy.
void widen(element_type type, const void* in, float* out, std::int64_t n, cudaStream_t stream);
void narrow(element_type type, const float* in, void* out, std::int64_t n, cudaStream_t stream);

// Every byte 0xff: NaN in each of the three types (an unwritten output shows
// up as non-finite).
void poison(element_type type, void* device, std::int64_t n, cudaStream_t stream);

// n activations of `type` as floats on the host (synchronous).
std::vector<float> widened_to_host(element_type type, const void* device, std::int64_t n);

}  // namespace fftconv::bench
