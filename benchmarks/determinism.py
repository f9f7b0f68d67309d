"""What `--seed`'s deterministic ops cost: a seeded run_classifier.py with
TensorFlow's op determinism on (what `--seed` does) against the same run
with only the random seeds set (what `--seed` did before), in one run.

Each measurement is a fresh process (op determinism cannot be turned off
once on) that builds a small task (generated sentences, a classifier of
`--layers` layers, hidden `--hidden`), runs `run_classifier.run` in-process
with `--do_train --do_eval` and reports the seconds of that call (flag
parsing, feature writing, tracing, training and evaluation; not the import
of TensorFlow), in wall and CPU seconds (the CPU time is less sensitive
to what else the machine runs). The modes alternate, `--repeats` times
each; the script prints each time, the medians and their ratios, writes
every time to the run's record (`benchmarks/records.py`), and asserts
nothing.

    python benchmarks/determinism.py                 # a small CPU run
    python benchmarks/determinism.py --layers=4 --hidden=256 --epochs=3
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

import harness  # first: puts the repository on the path

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = [f"w{i}" for i in range(200)] + ["good", "bad"]


def write_task(directory, hidden, layers, num_train):
    """vocab.txt, bert_config.json and an SST-2 style train/dev."""
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
    with open(os.path.join(directory, "vocab.txt"), "w") as writer:
        writer.write("\n".join(vocab) + "\n")
    config = {"vocab_size": len(vocab), "hidden_size": hidden,
              "num_hidden_layers": layers,
              "num_attention_heads": max(1, hidden // 64),
              "intermediate_size": 4 * hidden,
              "max_position_embeddings": 128, "type_vocab_size": 2}
    with open(os.path.join(directory, "bert_config.json"), "w") as writer:
        json.dump(config, writer)
    rng = random.Random(0)
    for split, count in (("train", num_train), ("dev", num_train // 4)):
        with open(os.path.join(directory, f"{split}.tsv"), "w") as writer:
            writer.write("sentence\tlabel\n")
            for _ in range(count):
                label = rng.randrange(2)
                words = [rng.choice(WORDS[:200]) for _ in range(20)]
                words.insert(rng.randrange(21), "good" if label else "bad")
                writer.write(f"{' '.join(words)}\t{label}\n")


# Run in the measured process: argv = mode, task directory, output dir,
# epochs.
CHILD = r"""
import sys, time
from bert_tf import startup
startup.quiet_start()
mode, task, output_dir, epochs = sys.argv[1:5]
import run_classifier
from bert_tf.finetuning import runtime
if mode == "seeds_only":
    import keras
    runtime.make_deterministic = keras.utils.set_random_seed
from absl import flags
flag_values = flags.FlagValues()
run_classifier.define_flags(flag_values)
flag_values(["run_classifier.py", "--task_name=SST-2", "--do_train",
             "--do_eval", f"--data_dir={task}",
             f"--vocab_file={task}/vocab.txt",
             f"--bert_config_file={task}/bert_config.json",
             f"--output_dir={output_dir}", "--max_seq_length=64",
             "--train_batch_size=32", f"--num_train_epochs={epochs}",
             "--seed=1", "--log_steps=1000"])
start, cpu_start = time.perf_counter(), time.process_time()
run_classifier.run(flag_values)
print("SECONDS", time.perf_counter() - start,
      time.process_time() - cpu_start)
"""


def measure(mode, task, epochs):
    with tempfile.TemporaryDirectory() as output_dir:
        process = subprocess.run(
            [sys.executable, "-c", CHILD, mode, task, output_dir,
             str(epochs)], cwd=REPO_ROOT, capture_output=True, text=True,
            env={**os.environ, "PYTHONPATH": REPO_ROOT,
                 "TF_CPP_MIN_LOG_LEVEL": "3"})
    if process.returncode != 0:
        raise SystemExit(process.stderr[-3000:])
    wall, cpu = process.stdout.split("SECONDS")[-1].split()
    return float(wall), float(cpu)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--num_train", type=int, default=512)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    harness.records.add_arguments(parser)
    args = parser.parse_args()
    if min(args.repeats, args.epochs, args.num_train) <= 0:
        parser.error("--repeats, --epochs and --num_train must be positive")
    record = harness.records.Record("determinism", args)
    times = {"deterministic": [], "seeds_only": []}
    with tempfile.TemporaryDirectory() as task:
        write_task(task, args.hidden, args.layers, args.num_train)
        for repeat in range(args.repeats):
            for mode in times:
                wall, cpu = measure(mode, task, args.epochs)
                times[mode].append((wall, cpu))
                print(f"repeat {repeat + 1} {mode}: {wall:.2f} s wall, "
                      f"{cpu:.2f} s CPU", flush=True)
    print(f"load average: {os.getloadavg()[0]:.2f}")
    for index, kind in ((0, "wall"), (1, "CPU")):
        medians = {mode: statistics.median(value[index] for value in values)
                   for mode, values in times.items()}
        record.add(f"run_classifier.run, {kind} seconds",
                   {mode: [value[index] for value in values]
                    for mode, values in times.items()},
                   unit="s" if kind == "wall" else "CPU s",
                   ratio=("deterministic", "seeds_only"),
                   details={"layers": args.layers, "hidden": args.hidden,
                            "num_train": args.num_train,
                            "epochs": args.epochs})
        print(f"median {kind}: deterministic "
              f"{medians['deterministic']:.2f} s, seeds only "
              f"{medians['seeds_only']:.2f} s, ratio "
              f"{medians['deterministic'] / medians['seeds_only']:.3f}")
    record.write()


if __name__ == "__main__":
    main()
