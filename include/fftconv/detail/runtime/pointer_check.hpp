// fftconv/detail/runtime/pointer_check.hpp — refuses, before anything is launched, a
// pointer a kernel could not use: host memory, another device's memory, or a
// buffer that ends before the bytes the problem needs (the kernel would fault
// and take the process's CUDA context down with it).
#pragma once

#include <cstddef>

#include "fftconv/element_type.hpp"
#include "fftconv/problem.hpp"

namespace fftconv::detail {

class engine;

// Throws invalid_argument naming `name` unless p is aligned to `alignment`
// (its elements' size: a misaligned load faults and takes the process's
// CUDA context down; checked first, without asking CUDA) and [p, p + bytes)
// is device (or managed) memory usable from `device`, inside the allocation
// that holds p. (Inside a caching allocator's segment the segment is the
// allocation: a sub-buffer too small for the problem but inside its segment
// passes.) p must not be null.
void require_device_memory(const void* p, std::size_t bytes, std::size_t alignment, int device, const char* name);

// Throws invalid_argument naming both unless the output [out, out +
// out_bytes) and the input [in, in + in_bytes) are disjoint (an output
// written over an input it still reads). A null input is none.
void require_disjoint(const void* out, std::size_t out_bytes, const char* out_name, const void* in,
                      std::size_t in_bytes, const char* in_name);

// The checks every call makes before its first launch: the engine's call
// preconditions (engine::begin_call), the problem, and x, w (unless null: a
// filter spectrum brings its own), bias (unless null: none) and y against the
// problem's sizes (x and y: io's, of its element type), and y disjoint from
// x, w and bias.
void check_operands(engine& e, const problem& p, const activations& io, const float* w, const float* bias);

}  // namespace fftconv::detail
