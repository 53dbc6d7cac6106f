#!/usr/bin/env python3
"""bench/training.py — one training step (forward + backward) of a
RepLKNet-style depthwise 31 x 31 'same' layer with a bias, through
fftconv.torch.Conv2d and through torch.nn.Conv2d (cuDNN, TF32 off,
benchmark=True), in the same process on the same inputs.

Each timed step: L2 flushed (a 120 MB write), then y = layer(x) and
y.backward(dy) between two CUDA events; x requires its gradient, so the step
computes dx, dw and dbias. Reports the mean and median over --reps steps
after warm-up, and the two layers' gradients against each other's (a
sanity check that both computed the same step, not the accuracy claim: that
is the GPU tests' float64 comparison).

Usage: PYTHONPATH=<build>/python python3 bench/training.py [--reps N] [--out FILE.json]
"""
import argparse
import json
import sys

import torch

import fftconv.torch
from step_timing import relative_difference, timed_steps

SHAPES = [  # batch, channels, image height = width, kernel
    (64, 128, 56, 31),
    (8, 64, 256, 31),
]


def time_steps(layer, x, dy, flush, reps):
    def step():
        x.grad = None
        layer.zero_grad(set_to_none=True)
        layer(x).backward(dy)

    return timed_steps(step, flush, reps, warmup=3)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("training.py: no CUDA device")
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    device = torch.device("cuda")
    flush = torch.empty(120 * 1000 * 1000 // 4, device=device)
    torch.manual_seed(0)
    results = []
    for batch, channels, size, kernel in SHAPES:
        x = torch.randn(batch, channels, size, size, device=device, requires_grad=True)
        dy = torch.randn(batch, channels, size, size, device=device)
        ours = fftconv.torch.Conv2d(channels, channels, kernel, padding=kernel // 2, groups=channels).to(device)
        theirs = torch.nn.Conv2d(channels, channels, kernel, padding=kernel // 2, groups=channels).to(device)
        theirs.load_state_dict(ours.state_dict())
        grads = []
        for layer in (ours, theirs):
            x.grad = None
            layer.zero_grad(set_to_none=True)
            layer(x).backward(dy)
            grads.append((x.grad.clone(), layer.weight.grad.clone(), layer.bias.grad.clone()))
        agreement = {name: relative_difference(a, b) for name, a, b in zip(("dx", "dw", "dbias"), *grads)}
        timing = {"fftconv": time_steps(ours, x, dy, flush, args.reps),
                  "nn.Conv2d": time_steps(theirs, x, dy, flush, args.reps)}
        speedup = timing["nn.Conv2d"]["mean_ms"] / timing["fftconv"]["mean_ms"]
        print(f"B{batch} C{channels} {size}x{size} K{kernel} depthwise 'same' + bias, forward + backward: "
              f"fftconv mean {timing['fftconv']['mean_ms']:.3f} ms (median {timing['fftconv']['median_ms']:.3f}), "
              f"nn.Conv2d mean {timing['nn.Conv2d']['mean_ms']:.3f} ms (median {timing['nn.Conv2d']['median_ms']:.3f}): "
              f"{speedup:.1f}x; gradients agree to " +
              ", ".join(f"{k} {v:.1e}" for k, v in agreement.items()))
        results.append({"batch": batch, "channels": channels, "size": size, "kernel": kernel,
                        "timing": timing, "speedup": speedup, "relative_difference": agreement})
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"tool": "bench/training.py", "gpu": torch.cuda.get_device_name(),
                       "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
                       "reps": args.reps, "l2_flush_bytes": flush.numel() * 4, "shapes": results}, f, indent=1)


if __name__ == "__main__":
    main()
