// fftconv/detail/kernels/async_copy.cuh — global-to-shared copies by
// cp.async (sm_80+): issued without a register to land in, so a thread keeps
// any number of loads in flight from a loop that is not unrolled. Bytes
// beyond `source_bytes` are zero filled; source_bytes = 0 reads nothing (how
// padding and out-of-range operands become zeros).
#pragma once

#include <cstdint>

namespace fftconv::detail {

__device__ __forceinline__ void copy_16(void* shared, const void* global, int source_bytes) {
    const auto address = static_cast<std::uint32_t>(__cvta_generic_to_shared(shared));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(address), "l"(global),
                 "r"(source_bytes));
}
__device__ __forceinline__ void copy_8(void* shared, const void* global, int source_bytes) {
    const auto address = static_cast<std::uint32_t>(__cvta_generic_to_shared(shared));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(address), "l"(global),
                 "r"(source_bytes));
}
__device__ __forceinline__ void copy_4(void* shared, const void* global, int source_bytes) {
    const auto address = static_cast<std::uint32_t>(__cvta_generic_to_shared(shared));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(address), "l"(global),
                 "r"(source_bytes));
}
__device__ __forceinline__ void commit_copies() { asm volatile("cp.async.commit_group;"); }
template <int pending>
__device__ __forceinline__ void wait_copies() {
    asm volatile("cp.async.wait_group %0;" ::"n"(pending));
}
// Every copy this thread issued has landed (then a barrier shows them to the block).
__device__ __forceinline__ void wait_all_copies() { asm volatile("cp.async.wait_all;" ::: "memory"); }

}  // namespace fftconv::detail
