"""train_torch.py — a small PyTorch model trained with linattn's attention, beside the same
model on PyTorch's own ops.

The model is one self-attention block, x + MHA(LayerNorm(x)) followed by a linear head,
fitting a fixed random teacher on random sequences (B = 16, N = 32, E = 64, 4 heads) for
50 Adam steps. It is built twice from the same weights: with torch.nn.MultiheadAttention
and with linattn.torch.MultiheadAttention (the same state_dict keys); both see the same
batches, so their losses agree to rounding. A third run swaps softmax for linear attention
(variant="linear"), which PyTorch does not have.

    python examples/train_torch.py            # the three loss curves, float32
    python examples/train_torch.py --check    # float64: exit 1 unless the first two agree
"""
import argparse
import sys

import torch
from torch import nn

import linattn.torch as lt


class Block(nn.Module):
    def __init__(self, attention: nn.Module, dim: int):
        super().__init__()
        self.norm, self.attention, self.head = nn.LayerNorm(dim), attention, nn.Linear(dim, dim)

    def forward(self, x):  # x (B, N, E)
        h = self.norm(x)
        return self.head(x + self.attention(h, h, h, need_weights=False)[0])


def train(model, batches, targets, steps):
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for step in range(steps):
        loss = nn.functional.mse_loss(model(batches[step]), targets[step])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="float64; exit 1 on disagreement")
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    dtype = torch.float64 if args.check else torch.float32
    torch.manual_seed(0)
    B, N, E, H = 16, 32, 64, 4
    make = lambda mha: Block(mha, E).to(dtype)  # noqa: E731
    teacher = make(nn.MultiheadAttention(E, H, batch_first=True))
    batches = torch.randn(args.steps, B, N, E, dtype=dtype)
    with torch.no_grad():
        targets = torch.stack([teacher(x) for x in batches])
    theirs = make(nn.MultiheadAttention(E, H, batch_first=True))
    ours = make(lt.MultiheadAttention(E, H, batch_first=True))
    linear = make(lt.MultiheadAttention(E, H, batch_first=True, variant="linear"))
    ours.load_state_dict(theirs.state_dict())
    linear.load_state_dict(theirs.state_dict())
    runs = {name: train(model, batches, targets, args.steps)
            for name, model in (("torch", theirs), ("linattn", ours), ("linattn linear", linear))}
    print("step  %12s  %12s  %14s" % tuple(runs))
    for step in range(0, args.steps, max(1, args.steps // 10)):
        print("%4d  %12.6f  %12.6f  %14.6f" % ((step,) + tuple(r[step] for r in runs.values())))
    worst = max(abs(a - b) / abs(a) for a, b in zip(runs["torch"], runs["linattn"]))
    print("largest relative difference of the losses, linattn against torch: %.2g" % worst)
    if args.check and not worst < 1e-9:
        print("FAILED: the losses differ by more than rounding", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
