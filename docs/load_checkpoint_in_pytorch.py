#!/usr/bin/env python3
"""Load a foxrl DQN checkpoint into PyTorch and compare Q-values.

Not part of the build; needs torch and safetensors.

A foxrl checkpoint (DqnLearner::save) is a safetensors file whose tensors are
named like a PyTorch state_dict of this module, under the prefixes "online.",
"target.", "adam_m." and "adam_v." (plus I64 scalars "adam.step" and
"learner.updates"):

    trunk = nn.Sequential(Linear(obs, h0), ReLU(), Linear(h0, h1), ReLU(), ...)
    head  = Linear(h_last, 1 + num_actions)     # outputs [V, A_0 .. A_{n-1}]
    Q     = V + A - A.mean(dim=1, keepdim=True)

Produce the inputs with the benchmark:

    foxrl_bench_update --quick --export-checkpoint DIR     # or without --quick

which writes DIR/model.safetensors, DIR/inputs.bin (float32 [n, obs_dim],
row-major, little-endian) and DIR/q_foxrl.bin (float32 [n, num_actions],
foxrl's Q-values of those inputs from the online network). Then:

    python3 docs/load_checkpoint_in_pytorch.py DIR [--device cuda] [--tol 1e-5]

prints the Q-values of both and the largest difference, and exits 1 if it
exceeds the tolerance. Matmuls run in full float32 (TF32 off).
"""

import argparse
import sys

import numpy as np
import torch
from safetensors.torch import load_file
from torch import nn


class DuelingQNetwork(nn.Module):
    def __init__(self, obs_dim, hidden, num_actions):
        super().__init__()
        layers, width = [], obs_dim
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        self.trunk = nn.Sequential(*layers)
        self.head = nn.Linear(width, 1 + num_actions)

    def forward(self, x):
        out = self.head(self.trunk(x))
        v, a = out[:, :1], out[:, 1:]
        return v + a - a.mean(dim=1, keepdim=True)


def load_foxrl(path, prefix="online"):
    """The network stored under `prefix` ("online" or "target") and the metadata."""
    from safetensors import safe_open

    with safe_open(path, framework="pt") as f:
        meta = f.metadata()
    tensors = load_file(path)
    obs_dim = int(meta["obs_dim"])
    hidden = [int(h) for h in meta["hidden"].split(",") if h]
    num_actions = int(meta["num_actions"])
    net = DuelingQNetwork(obs_dim, hidden, num_actions)
    state = {k[len(prefix) + 1:]: v for k, v in tensors.items() if k.startswith(prefix + ".")}
    net.load_state_dict(state, strict=True)
    return net, meta, tensors


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", help="directory written by foxrl_bench_update --export-checkpoint")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--tol", type=float, default=1e-5, help="max |q_torch - q_foxrl| accepted")
    args = p.parse_args()

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    net, meta, tensors = load_foxrl(f"{args.dir}/model.safetensors")
    net = net.to(args.device).eval()
    obs_dim, num_actions = int(meta["obs_dim"]), int(meta["num_actions"])
    inputs = np.fromfile(f"{args.dir}/inputs.bin", dtype="<f4").reshape(-1, obs_dim)
    q_foxrl = np.fromfile(f"{args.dir}/q_foxrl.bin", dtype="<f4").reshape(-1, num_actions)
    with torch.no_grad():
        q_torch = net(torch.from_numpy(inputs).to(args.device)).cpu().numpy()

    np.set_printoptions(precision=7, suppress=False, linewidth=120)
    print(f"architecture: obs {obs_dim}, hidden [{meta['hidden']}], actions {num_actions}; "
          f"adam.step {int(tensors['adam.step'])}, learner.updates {int(tensors['learner.updates'])}")
    print("q_torch:\n", q_torch)
    print("q_foxrl:\n", q_foxrl)
    diff = float(np.max(np.abs(q_torch - q_foxrl)))
    same_argmax = bool(np.all(q_torch.argmax(axis=1) == q_foxrl.argmax(axis=1)))
    print(f"max |q_torch - q_foxrl| = {diff:.3e} (tolerance {args.tol:.0e}); greedy actions agree: {same_argmax}")
    return 0 if diff <= args.tol else 1


if __name__ == "__main__":
    sys.exit(main())
