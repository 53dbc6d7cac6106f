// src/dispatch/forward.hpp — runs a forward route (router.hpp): the direct
// kernel, a specialization's pipeline, or the generic pipeline (runtime
// geometry, instantiated in forward.cu).
#pragma once

#include <cstddef>

#include "dispatch/router.hpp"
#include "fftconv/element_type.hpp"
#include "fftconv/problem.hpp"

namespace fftconv::detail {

class engine;
struct filter_input;

// y = conv2d(x, filter) + bias on `r` (x and y: io's, of any element type);
// a call given a filter spectrum runs the FFT pipeline even where the route
// is the direct path.
void run_forward(engine& e, const route& r, const problem& p, const activations& io, const filter_input& filter,
                 const float* bias);

// The filter spectrum of `w` as `r`'s pipeline reads it.
void transform_filter_on(engine& e, const route& r, const problem& p, const float* w, void* spectrum);

// Which calls on a problem a workspace size or a reservation covers: calls
// with a filter (the gradients' inner convolutions), or those and calls
// through a filter spectrum (the public forward API's).
enum class filter_calls { given, given_or_spectrum };

// The workspace a call on `r` uses (the larger of `calls`), under the
// engine's limit; reserve: also grows it and makes their cuFFT plans now.
std::size_t forward_workspace(engine& e, const route& r, const problem& p, filter_calls calls);
void reserve_forward(engine& e, const route& r, const problem& p, filter_calls calls);

}  // namespace fftconv::detail
