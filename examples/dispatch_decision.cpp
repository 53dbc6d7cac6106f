// examples/dispatch_decision.cpp — which path each leaderboard shape takes.
// Host-only: runs anywhere the library builds, GPU or not.
#include <cstdio>

#include <fftconv/fftconv.hpp>

#include "leaderboard.hpp"

int main() {
    std::printf("%-10s %5s %3s %4s %3s  %-9s %4s %5s\n", "role", "size", "K", "C", "B", "path",
                "T", "To");
    for (const auto& s : fftconv::reference::leaderboard) {
        const fftconv::dispatch_decision d = fftconv::choose_dispatch(s.as_problem());
        std::printf("%-10s %5d %3d %4d %3d  %-9s %4d %5d\n", s.role, s.size, s.kernel_extent,
                    s.channels, s.batch, fftconv::to_string(d.path), d.geometry.tile_extent(),
                    d.geometry.out_tile_height());
    }
    std::printf("%zu compiled configurations (kernel_extent, channels, tile_extent, depthwise):\n",
                fftconv::compiled_configs().size());
    for (const auto& c : fftconv::compiled_configs())
        std::printf("  {%d, %d, %d, %s}\n", c.kernel_extent, c.channels, c.tile_extent, c.depthwise ? "true" : "false");
    return 0;
}
