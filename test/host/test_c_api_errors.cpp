// The C ABI's errors where no GPU is involved: a null context or argument
// gives its status and a message naming it, per thread; and where host
// memory runs out while an error is being reported, the call still returns
// a status and a message (it must not terminate the caller's process: every
// entry point is noexcept).
#include "doctest.hpp"

#include <cstdlib>
#include <new>
#include <string>
#include <thread>

#include "fftconv/fftconv.h"

namespace {
// While set, every operator new of this thread fails (the library's too: a
// replacement in the program serves every shared object it loads).
thread_local bool host_memory_gone = false;
}  // namespace

void* operator new(std::size_t bytes) {
    if (host_memory_gone) throw std::bad_alloc();
    if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

TEST_CASE("a null context or argument: its status and a message naming it, kept per thread") {
    CHECK(fftconv_set_stream(nullptr, nullptr) == FFTCONV_INVALID_ARGUMENT);
    CHECK(std::string(fftconv_last_error()) == "fftconv: context is a null pointer");
    CHECK(fftconv_create(nullptr, nullptr) == FFTCONV_INVALID_ARGUMENT);
    CHECK(std::string(fftconv_last_error()).find("context (the output argument) is a null pointer") !=
          std::string::npos);

    // Another thread's error is its own; this thread's stays.
    std::string other;
    std::thread([&] {
        CHECK(std::string(fftconv_last_error()).empty());
        (void)fftconv_release(nullptr);
        other = fftconv_last_error();
    }).join();
    CHECK(other == "fftconv: context is a null pointer");
    CHECK(std::string(fftconv_last_error()).find("output argument") != std::string::npos);

    // A later success clears it.
    CHECK(fftconv_destroy(nullptr) == FFTCONV_SUCCESS);
    CHECK(std::string(fftconv_last_error()).empty());
    CHECK(std::string(fftconv_status_string(FFTCONV_INVALID_ARGUMENT)).size() > 0);
}

TEST_CASE("host memory running out while an error is reported: a status and a fixed message, no termination") {
    // The null context's message needs host memory (it is longer than a
    // short string holds): making it throws bad_alloc, and recording what
    // happened needs memory again.
    host_memory_gone = true;
    const fftconv_status status = fftconv_set_stream(nullptr, nullptr);
    host_memory_gone = false;
    const std::string message = fftconv_last_error();
    CHECK(status == FFTCONV_OUT_OF_MEMORY);
    CHECK(message.find("host memory") != std::string::npos);

    // The next error's message is recorded again.
    CHECK(fftconv_set_stream(nullptr, nullptr) == FFTCONV_INVALID_ARGUMENT);
    CHECK(std::string(fftconv_last_error()) == "fftconv: context is a null pointer");
}
