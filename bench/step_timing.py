"""bench/step_timing.py — what the training benches share: timing a step
between CUDA events with the L2 flushed before each, and comparing two
results."""
import statistics

import torch


def timed_steps(step, flush, reps, warmup):
    """`warmup` untimed calls of step(), then `reps` timed ones, each after
    a write of `flush` (a tensor larger than the L2); mean, median and
    every sample in milliseconds."""
    for _ in range(warmup):
        step()
    times = []
    for _ in range(reps):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return {"mean_ms": statistics.fmean(times), "median_ms": statistics.median(times), "samples_ms": times}


def relative_difference(a, b):
    """||a - b|| / ||b|| in float64."""
    return float((a.double() - b.double()).norm() / b.double().norm())
