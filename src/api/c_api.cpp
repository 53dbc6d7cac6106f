// src/api/c_api.cpp — the C ABI: exceptions become status codes plus a
// per-thread message; nothing escapes across the extern "C" boundary.
#include <cstddef>
#include <exception>
#include <new>
#include <string>

#include "fftconv/context.hpp"
#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/fftconv.h"
#include "fftconv/status.hpp"

struct fftconv_context_t {
    fftconv::context cxx;
};

namespace {

thread_local std::string last_error;
// The message where recording one failed for want of host memory (a text
// that needs none); null otherwise.
thread_local const char* last_error_fixed = nullptr;

static_assert(int(fftconv::status::internal_error) == FFTCONV_INTERNAL_ERROR &&
                  int(fftconv::status::invalid_argument) == FFTCONV_INVALID_ARGUMENT &&
                  int(fftconv::status::out_of_memory) == FFTCONV_OUT_OF_MEMORY,
              "fftconv::status and fftconv_status must keep the same numbering");

// Records `prefix` + `message` as this thread's last error. Called in catch
// blocks of noexcept functions, so it must not throw: where copying the
// text needs host memory that is not there, a fixed message stands in.
fftconv_status fail(fftconv_status s, const char* prefix, const char* message) noexcept {
    try {
        last_error.assign(prefix).append(message);
        last_error_fixed = nullptr;
    } catch (...) {
        last_error_fixed = "fftconv: host memory ran out (the error's own message could not be kept)";
    }
    return s;
}

void clear_last_error() noexcept {
    last_error.clear();
    last_error_fixed = nullptr;
}

// Runs `f`, turning every exception into a status and last_error.
template <class F>
fftconv_status guarded(F&& f) noexcept {
    try {
        clear_last_error();
        f();
        return FFTCONV_SUCCESS;
    } catch (const fftconv::error& e) {
        return fail(fftconv_status(int(e.code())), "", e.what());
    } catch (const std::bad_alloc&) {
        return fail(FFTCONV_OUT_OF_MEMORY, "fftconv: host memory allocation failed", "");
    } catch (const std::exception& e) {
        return fail(FFTCONV_INTERNAL_ERROR, "fftconv: ", e.what());
    } catch (...) {
        return fail(FFTCONV_INTERNAL_ERROR, "fftconv: unknown exception", "");
    }
}

void require(const void* p, const char* name) {
    if (p == nullptr)
        throw fftconv::error(fftconv::status::invalid_argument,
                             std::string("fftconv: ") + name + " is a null pointer");
}

fftconv::problem to_cxx(const fftconv_problem* p) {
    require(p, "problem");
    return {p->batch, p->in_channels, p->out_channels, p->height, p->width, p->kernel_extent};
}

// The first version of fftconv_conv2d_desc ends at dilation.
constexpr std::size_t desc_v1_size = offsetof(fftconv_conv2d_desc, dilation) + sizeof(int64_t);

fftconv::problem to_cxx(const fftconv_conv2d_desc* d) {
    require(d, "desc");
    if (d->struct_size < desc_v1_size)
        throw fftconv::error(fftconv::status::invalid_argument,
                             "fftconv: desc->struct_size = " + std::to_string(d->struct_size) +
                                 " is smaller than any fftconv_conv2d_desc (" + std::to_string(desc_v1_size) +
                                 " bytes): set it to sizeof(fftconv_conv2d_desc) (FFTCONV_CONV2D_DESC_INIT)");
    // A description from a newer header than this library's, or an
    // uninitialised one: refused without reading past the bytes this build
    // knows (struct_size is the caller's claim, not a size we may trust).
    if (d->struct_size > sizeof(fftconv_conv2d_desc))
        throw fftconv::error(fftconv::status::invalid_argument,
                             "fftconv: desc->struct_size = " + std::to_string(d->struct_size) +
                                 " is larger than this build's fftconv_conv2d_desc (" +
                                 std::to_string(sizeof(fftconv_conv2d_desc)) +
                                 " bytes): set it to sizeof(fftconv_conv2d_desc) (FFTCONV_CONV2D_DESC_INIT) and "
                                 "build against the headers of the library you link");
    fftconv::problem p;
    p.batch = d->batch;
    p.in_channels = d->in_channels;
    p.out_channels = d->out_channels;
    p.height = d->height;
    p.width = d->width;
    p.kernel = {d->kernel_height, d->kernel_width};
    p.padding = {d->pad_height, d->pad_width};
    p.groups = d->groups;
    p.stride = d->stride;
    p.dilation = d->dilation;
    return p;
}

// The C++ element type of a C one; anything else is refused by name.
fftconv::element_type to_cxx(fftconv_element_type type) {
    switch (type) {
        case FFTCONV_FLOAT32: return fftconv::element_type::float32;
        case FFTCONV_BFLOAT16: return fftconv::element_type::bfloat16;
        case FFTCONV_FLOAT16: return fftconv::element_type::float16;
    }
    throw fftconv::error(fftconv::status::invalid_argument,
                         "fftconv: element_type = " + std::to_string(int(type)) +
                             " is none of FFTCONV_FLOAT32, FFTCONV_BFLOAT16, FFTCONV_FLOAT16");
}

}  // namespace

extern "C" {

fftconv_status fftconv_create(fftconv_context* context, cudaStream_t stream) {
    return guarded([&] {
        require(context, "context (the output argument)");
        *context = nullptr;
        *context = new fftconv_context_t{fftconv::context(stream)};
    });
}

fftconv_status fftconv_destroy(fftconv_context context) {
    delete context;  // destructors do not throw
    clear_last_error();
    return FFTCONV_SUCCESS;
}

fftconv_status fftconv_set_stream(fftconv_context context, cudaStream_t stream) {
    return guarded([&] {
        require(context, "context");
        context->cxx.set_stream(stream);
    });
}

fftconv_status fftconv_set_workspace_limit(fftconv_context context, size_t bytes) {
    return guarded([&] {
        require(context, "context");
        context->cxx.set_workspace_limit(bytes);
    });
}

fftconv_status fftconv_set_replay(fftconv_context context, int enabled) {
    return guarded([&] {
        require(context, "context");
        context->cxx.replay_repeated_calls(enabled != 0);
    });
}

fftconv_status fftconv_set_workspace_allocator(fftconv_context context,
                                               void* (*allocate)(void*, size_t, cudaStream_t),
                                               void (*deallocate)(void*, void*, size_t, cudaStream_t), void* state) {
    return guarded([&] {
        require(context, "context");
        if ((allocate == nullptr) != (deallocate == nullptr))
            fftconv::detail::throw_invalid(
                "fftconv_set_workspace_allocator: give both allocate and deallocate, or neither (cudaMalloc)");
        context->cxx.set_workspace_allocator(fftconv::workspace_allocator{allocate, deallocate, state});
    });
}

fftconv_status fftconv_release(fftconv_context context) {
    return guarded([&] {
        require(context, "context");
        context->cxx.release();
    });
}

fftconv_status fftconv_workspace_size(fftconv_context context, const fftconv_problem* problem,
                                      size_t* bytes) {
    return guarded([&] {
        require(context, "context");
        require(bytes, "bytes (the output argument)");
        *bytes = context->cxx.workspace_size(to_cxx(problem));
    });
}

fftconv_status fftconv_reserve(fftconv_context context, const fftconv_problem* problem) {
    return guarded([&] {
        require(context, "context");
        context->cxx.reserve(to_cxx(problem));
    });
}

fftconv_status fftconv_conv2d(fftconv_context context, const fftconv_problem* problem,
                              const float* x, const float* w, float* y) {
    return guarded([&] {
        require(context, "context");
        context->cxx.conv2d(to_cxx(problem), x, w, y);
    });
}

fftconv_status fftconv_workspace_size_ex(fftconv_context context, const fftconv_conv2d_desc* desc,
                                         size_t* bytes) {
    return guarded([&] {
        require(context, "context");
        require(bytes, "bytes (the output argument)");
        *bytes = context->cxx.workspace_size(to_cxx(desc));
    });
}

fftconv_status fftconv_reserve_ex(fftconv_context context, const fftconv_conv2d_desc* desc) {
    return guarded([&] {
        require(context, "context");
        context->cxx.reserve(to_cxx(desc));
    });
}

fftconv_status fftconv_conv2d_ex(fftconv_context context, const fftconv_conv2d_desc* desc, const float* x,
                                 const float* w, const float* bias, float* y) {
    return guarded([&] {
        require(context, "context");
        context->cxx.conv2d(to_cxx(desc), x, w, bias, y);
    });
}

fftconv_status fftconv_conv2d_typed(fftconv_context context, const fftconv_conv2d_desc* desc,
                                    fftconv_element_type element_type, const void* x, const float* w,
                                    const float* bias, void* y) {
    return guarded([&] {
        require(context, "context");
        const fftconv::problem p = to_cxx(desc);
        fftconv::detail::with_element(to_cxx(element_type), [&](auto tag) {
            using E = typename decltype(tag)::type;
            context->cxx.conv2d(p, static_cast<const E*>(x), w, bias, static_cast<E*>(y));
        });
    });
}

fftconv_status fftconv_conv2d_backward_data_typed(fftconv_context context, const fftconv_conv2d_desc* desc,
                                                  fftconv_element_type element_type, const void* dy,
                                                  const float* w, void* dx) {
    return guarded([&] {
        require(context, "context");
        const fftconv::problem p = to_cxx(desc);
        fftconv::detail::with_element(to_cxx(element_type), [&](auto tag) {
            using E = typename decltype(tag)::type;
            context->cxx.conv2d_backward_data(p, static_cast<const E*>(dy), w, static_cast<E*>(dx));
        });
    });
}

fftconv_status fftconv_conv2d_backward_data_ex(fftconv_context context, const fftconv_conv2d_desc* desc,
                                               const float* dy, const float* w, float* dx) {
    return guarded([&] {
        require(context, "context");
        context->cxx.conv2d_backward_data(to_cxx(desc), dy, w, dx);
    });
}

fftconv_status fftconv_conv2d_backward_filter_ex(fftconv_context context, const fftconv_conv2d_desc* desc,
                                                 const float* x, const float* dy, float* dw, float* dbias) {
    return guarded([&] {
        require(context, "context");
        context->cxx.conv2d_backward_filter(to_cxx(desc), x, dy, dw, dbias);
    });
}

fftconv_status fftconv_reserve_backward_ex(fftconv_context context, const fftconv_conv2d_desc* desc) {
    return guarded([&] {
        require(context, "context");
        context->cxx.reserve_backward(to_cxx(desc));
    });
}

const char* fftconv_last_error(void) { return last_error_fixed != nullptr ? last_error_fixed : last_error.c_str(); }

const char* fftconv_status_string(fftconv_status status) {
    return fftconv::to_string(fftconv::status(int(status)));
}

}  // extern "C"
