// fftconv/fftconv.hpp — the C++ API in one include.
//
//   fftconv::context ctx(stream);
//   fftconv::problem p{.batch = 2, .in_channels = 128, .out_channels = 128,
//                      .height = 256, .width = 256, .kernel = 16};
//   ctx.conv2d(p, x, w, y);            // device pointers, NCHW float32
//
// problem.hpp: the semantics and layouts; context.hpp: resources, streams,
// workspace, filter reuse; dispatch.hpp: which path a problem takes;
// status.hpp: errors; specialize.cuh: compile your own configuration.
#pragma once

#include "fftconv/version.hpp"  // first: refuses a pre-C++20 compiler with a clear #error

#include "fftconv/config.hpp"
#include "fftconv/context.hpp"
#include "fftconv/dispatch.hpp"
#include "fftconv/problem.hpp"
#include "fftconv/status.hpp"
