#!/usr/bin/env python3
"""bench/training_amp.py — one training step (forward + backward) of a
RepLKNet-style block (depthwise 31 x 31 'same' + bias, GELU, 1 x 1 conv,
residual) on B64 C128 56², as RepLKNet and SLaK train it: under
torch.autocast('cuda', bfloat16), eager and torch.compile'd, with the
depthwise layer fftconv's (fftconv.torch.convert: the 1 x 1 stays
nn.Conv2d) against the same block all nn.Conv2d (cuDNN, benchmark=True),
in the same process on the same inputs. Also the float32 step (TF32 off)
for reference.

Each timed step: L2 flushed (a 120 MB write), then loss = block(x).float()
.square().mean() (under autocast where it says so) and loss.backward()
between two CUDA events. Reports the mean and median over --reps steps
after warm-up, how many fftconv operator calls each step made (proof that
fftconv ran: 1 forward, 1 data gradient, 1 filter gradient), and the
fftconv block's gradients against nn.Conv2d's (a sanity check).

Usage: PYTHONPATH=<build>/python python3 bench/training_amp.py [--reps N] [--out FILE.json]
"""
import argparse
import copy
import json
import sys

import torch
from torch import nn

import fftconv.torch
from step_timing import relative_difference, timed_steps

SHAPE = (64, 128, 56, 31)  # batch, channels, height = width, kernel


class Block(nn.Module):
    def __init__(self, channels, kernel):
        super().__init__()
        self.depthwise = nn.Conv2d(channels, channels, kernel, padding="same", groups=channels)
        self.act = nn.GELU()
        self.pointwise = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        return x + self.pointwise(self.act(self.depthwise(x)))


def make_step(block, x, dtype):
    def step():
        x.grad = None
        block.zero_grad(set_to_none=True)
        if dtype is None:
            loss = block(x).square().mean()
        else:
            with torch.autocast("cuda", dtype=dtype):
                loss = block(x).float().square().mean()
        loss.backward()
    return step


def time_step(step, flush, reps):
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    before = dict(fftconv.torch.calls)
    step()
    torch.cuda.synchronize()
    calls = {k: fftconv.torch.calls[k] - before[k] for k in before}
    return {**timed_steps(step, flush, reps, warmup=0), "fftconv_calls_per_step": calls}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--out", default="")
    parser.add_argument("--no-compile", action="store_true")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("training_amp.py: no CUDA device")
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    device = torch.device("cuda")
    flush = torch.empty(120 * 1000 * 1000 // 4, device=device)
    batch, channels, size, kernel = SHAPE
    torch.manual_seed(0)
    theirs = Block(channels, kernel).to(device)
    ours = fftconv.torch.convert(copy.deepcopy(theirs))
    assert type(ours.depthwise) is fftconv.torch.Conv2d and type(ours.pointwise) is nn.Conv2d
    x = torch.randn(batch, channels, size, size, device=device, requires_grad=True)

    results = []
    modes = [("float32", None, False), ("bf16 autocast", torch.bfloat16, False)]
    if not args.no_compile:
        modes += [("bf16 autocast + torch.compile", torch.bfloat16, True)]
    for name, dtype, compiled in modes:
        row = {"mode": name}
        grads = []
        for label, block in (("fftconv", ours), ("nn.Conv2d", theirs)):
            run = torch.compile(block, fullgraph=True) if compiled else block
            step = make_step(run, x, dtype)
            step()
            torch.cuda.synchronize()
            grads.append((x.grad.clone(), block.depthwise.weight.grad.clone(), block.depthwise.bias.grad.clone()))
            row[label] = time_step(step, flush, args.reps)
        row["speedup"] = row["nn.Conv2d"]["mean_ms"] / row["fftconv"]["mean_ms"]
        row["relative_difference"] = {k: relative_difference(a, b)
                                      for k, a, b in zip(("dx", "dw_depthwise", "dbias_depthwise"), *grads)}
        print(f"B{batch} C{channels} {size}x{size} block (depthwise K{kernel} 'same' + bias, GELU, 1x1), "
              f"{name}, forward + backward: fftconv mean {row['fftconv']['mean_ms']:.3f} ms "
              f"(median {row['fftconv']['median_ms']:.3f}; fftconv calls/step "
              f"{row['fftconv']['fftconv_calls_per_step']}), nn.Conv2d mean {row['nn.Conv2d']['mean_ms']:.3f} ms "
              f"(median {row['nn.Conv2d']['median_ms']:.3f}): {row['speedup']:.1f}x; fftconv vs nn.Conv2d "
              + ", ".join(f"{k} {v:.1e}" for k, v in row["relative_difference"].items()), flush=True)
        results.append(row)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"tool": "bench/training_amp.py", "gpu": torch.cuda.get_device_name(),
                       "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
                       "shape": SHAPE, "reps": args.reps, "l2_flush_bytes": flush.numel() * 4,
                       "modes": results}, f, indent=1)


if __name__ == "__main__":
    main()
