"""A stand-in for a training script, for trying tide out (README.md).

Runs a few "epochs" of arithmetic, printing what a real job would care
about: where it runs, which GPUs it was given and its progress. Standard
library only; pass --epochs N and --sleep S to make it longer.
"""
import argparse
import os
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--sleep", type=float, default=0.5, help="seconds per epoch")
    args = parser.parse_args()
    print(f"train.py in {os.getcwd()}", flush=True)
    print(f"job {os.environ.get('TIDE_JOB_ID', '?')} on GPUs "
          f"{os.environ.get('CUDA_VISIBLE_DEVICES', 'none')}", flush=True)
    loss = 1.0
    for epoch in range(1, args.epochs + 1):
        time.sleep(args.sleep)
        loss *= 0.5
        print(f"epoch {epoch}/{args.epochs} loss {loss:.4f}", flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
